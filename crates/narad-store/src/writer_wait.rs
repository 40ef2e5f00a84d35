//! How a writer thread waits for its next batch: it may poll the queue for
//! a bounded time before it sleeps.
//!
//! A caller whose thread keeps running after it queued a batch (an asyncio
//! loop that goes on with its own work) leaves the sleeping writer to be
//! woken on the other core, which on a VM costs tens of microseconds for
//! every append; a Rust caller on a tokio worker that then parks usually
//! hands its core to the writer at no such cost. So polling is off unless
//! the host asks for it ([`set_writer_spin`]; the Python binding does), and
//! even then a writer polls only while the gaps between one commit and the
//! next batch have recently been shorter than the limit: an idle or
//! slow-paced store costs no busy CPU.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::{Duration, Instant};

static LIMIT_NS: AtomicU64 = AtomicU64::new(0);

/// The weight of a new gap in the moving average, as a shift (1/8).
const AVERAGE_SHIFT: u32 = 3;

/// A gap counts at most this many limits in the average, so a pause of
/// minutes does not keep polling off for long once appends come quickly
/// again.
const GAP_CAP: u64 = 4;

/// The longest a writer polls after a commit: [`set_writer_spin`] takes
/// any longer limit as this one. A writer polls for the whole limit after
/// the last append before it sleeps, so without a bound a mistyped setting
/// (say, a limit of years) would keep a core busy for as long as the store
/// is open and idle. Ten milliseconds is far above any embedded store's
/// commit latency, which is what polling is for.
pub const MAX_WRITER_SPIN: Duration = Duration::from_millis(10);

/// Sets, for every store of this process, how long a writer thread polls
/// for its next batch after a commit before it sleeps (zero, the default:
/// it never polls; above [`MAX_WRITER_SPIN`]: that). Stores opened before
/// the call follow it too.
///
/// ```
/// use std::time::Duration;
/// narad_store::set_writer_spin(Duration::from_micros(200));
/// assert_eq!(narad_store::writer_spin(), Duration::from_micros(200));
/// narad_store::set_writer_spin(Duration::MAX);
/// assert_eq!(narad_store::writer_spin(), narad_store::MAX_WRITER_SPIN);
/// narad_store::set_writer_spin(Duration::ZERO);
/// ```
pub fn set_writer_spin(limit: Duration) {
    LIMIT_NS.store(limit_ns(limit), Ordering::Relaxed);
}

/// `limit` in nanoseconds, at most [`MAX_WRITER_SPIN`].
fn limit_ns(limit: Duration) -> u64 {
    let ns = limit.min(MAX_WRITER_SPIN).as_nanos();
    u64::try_from(ns).unwrap_or(u64::MAX)
}

/// The current [`set_writer_spin`] limit.
pub fn writer_spin() -> Duration {
    Duration::from_nanos(LIMIT_NS.load(Ordering::Relaxed))
}

/// One writer's recent gaps, from the end of a commit to the arrival of
/// the next batch.
#[derive(Debug, Default)]
pub(crate) struct WriterWait {
    typical_gap_ns: u64,
}

impl WriterWait {
    /// Whether to poll before sleeping, under `limit_ns`.
    fn polls(&self, limit_ns: u64) -> bool {
        limit_ns > 0 && self.typical_gap_ns < limit_ns
    }

    /// Adds a gap to the moving average.
    fn observe(&mut self, gap_ns: u64, limit_ns: u64) {
        let gap = gap_ns.min(limit_ns.saturating_mul(GAP_CAP));
        let old = self.typical_gap_ns;
        self.typical_gap_ns = old - (old >> AVERAGE_SHIFT) + (gap >> AVERAGE_SHIFT);
    }

    /// The next request, polling first when the policy says so; `None`
    /// once every sender is gone.
    pub(crate) fn next<T>(&mut self, rx: &Receiver<T>) -> Option<T> {
        self.next_within(rx, LIMIT_NS.load(Ordering::Relaxed))
    }

    fn next_within<T>(&mut self, rx: &Receiver<T>, limit_ns: u64) -> Option<T> {
        let start = Instant::now();
        let elapsed = || u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        if self.polls(limit_ns) {
            loop {
                match rx.try_recv() {
                    Ok(r) => {
                        self.observe(elapsed(), limit_ns);
                        return Some(r);
                    }
                    Err(TryRecvError::Disconnected) => return None,
                    Err(TryRecvError::Empty) => {}
                }
                if elapsed() >= limit_ns {
                    break;
                }
                std::hint::spin_loop();
            }
        }
        let r = rx.recv().ok();
        if limit_ns > 0 {
            self.observe(elapsed(), limit_ns);
        }
        r
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::mpsc;

    const LIMIT: u64 = 200_000;

    #[test]
    fn a_limit_above_the_bound_is_taken_as_the_bound() {
        assert_eq!(limit_ns(Duration::ZERO), 0);
        assert_eq!(limit_ns(Duration::from_micros(200)), 200_000);
        assert_eq!(limit_ns(MAX_WRITER_SPIN), 10_000_000);
        assert_eq!(limit_ns(Duration::from_secs(3600)), 10_000_000);
        assert_eq!(limit_ns(Duration::MAX), 10_000_000);
    }

    #[test]
    fn off_by_default_and_at_zero() {
        let w = WriterWait::default();
        assert!(!w.polls(0));
        assert!(w.polls(LIMIT));
    }

    #[test]
    fn long_gaps_turn_polling_off_and_short_ones_back_on() {
        let mut w = WriterWait::default();
        for _ in 0..30 {
            w.observe(60_000_000_000, LIMIT);
        }
        assert!(!w.polls(LIMIT), "an idle store is not polled for");
        // A minute's pause counts as GAP_CAP limits: a burst of quick
        // appends turns polling back on within a few dozen.
        let mut n = 0;
        while !w.polls(LIMIT) {
            w.observe(50_000, LIMIT);
            n += 1;
        }
        assert!(n <= 20, "{n}");
    }

    #[test]
    fn a_request_or_a_hang_up_ends_the_wait_polling_or_not() {
        // 0: sleeps at once; LIMIT: polls first (here past its limit, as
        // the request comes 1 ms later, then sleeps); u64::MAX: polls only.
        for limit in [0, LIMIT, u64::MAX] {
            let mut w = WriterWait::default();
            let (tx, rx) = mpsc::channel();
            let sender = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(1));
                tx.send(7).unwrap();
            });
            assert_eq!(w.next_within(&rx, limit), Some(7));
            sender.join().unwrap();
            assert_eq!(w.next_within(&rx, limit), None);
        }
    }
}
