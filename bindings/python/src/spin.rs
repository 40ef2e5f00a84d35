//! How the asyncio loop waits for a command's store completion: it keeps
//! turning for a bounded time instead of sleeping.
//!
//! A command polled inline usually waits once, for its store's durable
//! commit (a few hundred microseconds on SQLite or redb). If the loop has
//! nothing else to do, it sleeps in `epoll_wait`, and the completion must
//! wake its thread: on a VM an idle vCPU takes tens of microseconds to
//! wake (measured here: 70-80 µs a command, more than the engine's own work
//! for it). So while few commands are in flight, the loop spins instead:
//! a callback (`LoopChannel.spin`, queued with `loop.call_soon`) waits for
//! the completion with the GIL released for at most [`SLICE_NS`], then
//! handles it or queues itself again, so other tasks, I/O and timers still
//! get a turn between slices and other Python threads may take the GIL
//! meanwhile. It stops when no command is in flight, when many are (the
//! loop then has work and the workers need the cores), or after the spin
//! limit; the pipe the loop watches still carries every completion, so a
//! spinner that stops never loses one.
//!
//! Adaptive, like a spin-then-park lock: the limit is `NARAD_SPIN_US`
//! (default [`DEFAULT_SPIN_US`]; `0` never spins; at most [`MAX_SPIN_US`]), and a loop whose recent
//! waits averaged more than it (a slow store) does not spin at all until
//! they average less again, so a slow store costs no busy CPU.
//!
//! The other way round, the loop's thread goes on running after it queued
//! a batch for an embedded store's writer thread, so waking that writer
//! would cost the same on every append. The binding therefore turns on the
//! stores' writer polling ([`narad_store::set_writer_spin`]) for up to
//! `NARAD_WRITER_SPIN_US` (default [`DEFAULT_WRITER_SPIN_US`]; `0`: off;
//! at most [`narad_store::MAX_WRITER_SPIN`]), which is adaptive in the
//! same way.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::knob::{env_usize, Knob};

/// The default spin limit per wait, in microseconds: above the commit
/// latency of the embedded stores on a local disk.
pub const DEFAULT_SPIN_US: usize = 1000;

/// The default writer polling limit, in microseconds: above the time the
/// loop takes from one command's completion to its next append.
pub const DEFAULT_WRITER_SPIN_US: usize = 200;

/// Sets the embedded stores' writer polling from `NARAD_WRITER_SPIN_US`
/// (at the module's import).
pub fn configure_writer_spin() {
    let us = env_usize("NARAD_WRITER_SPIN_US").unwrap_or(DEFAULT_WRITER_SPIN_US);
    narad_store::set_writer_spin(std::time::Duration::from_micros(us as u64));
}

/// The longest the spin callback holds the loop (with the GIL released)
/// before it yields the loop a turn.
pub const SLICE_NS: usize = 50_000;

/// The weight of a new wait in the moving average, as a shift (1/8).
const AVERAGE_SHIFT: u32 = 3;

/// The spin limit per wait in microseconds: `NARAD_SPIN_US`, else
/// [`DEFAULT_SPIN_US`], or what [`set_limit_us`] set.
static LIMIT_US: Knob = Knob::new("NARAD_SPIN_US", DEFAULT_SPIN_US);

/// The longest spin limit, in microseconds: a longer one is taken as this.
/// Spinning is for waits shorter than a store's commit; without a bound a
/// mistyped setting would let a slow store keep the loop's core busy
/// through every wait.
pub const MAX_SPIN_US: usize = 10_000;

/// The spin limit per wait in nanoseconds (`0`: never spin).
pub fn limit_ns() -> usize {
    LIMIT_US.get().min(MAX_SPIN_US).saturating_mul(1000)
}

/// Sets the spin limit in microseconds (`None`: `NARAD_SPIN_US`, else the
/// default; above [`MAX_SPIN_US`]: that); returns the previous one. For A/B
/// measurement and tests in one process.
pub fn set_limit_us(us: Option<usize>) -> usize {
    LIMIT_US
        .swap(us.unwrap_or_else(|| LIMIT_US.initial()))
        .min(MAX_SPIN_US)
}

/// One loop's spin state. Times are nanoseconds on the bridge's clock,
/// passed in so the policy is testable without one.
#[derive(Debug, Default)]
pub struct Spin {
    /// A spin callback is queued or running on the loop.
    spinning: AtomicBool,
    /// When the newest wait began (an inline poll that returned pending).
    since: AtomicUsize,
    /// The moving average of a wait, from its start to its wake-up.
    typical: AtomicUsize,
}

impl Spin {
    /// Records a finished wait of `ns` in the moving average. (Racy
    /// updates from several engine threads may lose one sample; the
    /// average is a hint.)
    pub fn observe(&self, ns: usize) {
        let old = self.typical.load(Ordering::Relaxed);
        let new = old - (old >> AVERAGE_SHIFT) + (ns >> AVERAGE_SHIFT);
        self.typical.store(new, Ordering::Relaxed);
    }

    /// A wait began at `now`. `true` when the caller should queue the spin
    /// callback: spinning is on, recent waits were short enough, and no
    /// callback is queued yet (it is then marked queued).
    pub fn begin(&self, now: usize, limit: usize) -> bool {
        self.since.store(now, Ordering::Relaxed);
        limit > 0
            && self.typical.load(Ordering::Relaxed) < limit
            && !self.spinning.swap(true, Ordering::AcqRel)
    }

    /// Whether the callback should go on at `now` with `busy` calls in
    /// flight, at most `crowd` of which still poll inline; if not, it is
    /// marked stopped.
    pub fn keep_going(&self, now: usize, busy: usize, crowd: usize, limit: usize) -> bool {
        let within = now.saturating_sub(self.since.load(Ordering::Relaxed)) < limit;
        let go = busy > 0 && busy <= crowd && within;
        if !go {
            self.stopped();
        }
        go
    }

    /// The callback is no longer queued (it stopped, or queuing it failed).
    pub fn stopped(&self) {
        self.spinning.store(false, Ordering::Release);
    }

    /// Whether a callback is queued or running.
    #[cfg(test)]
    fn is_spinning(&self) -> bool {
        self.spinning.load(Ordering::Acquire)
    }

    /// Busy-waits until `ready` is set or `clock()` reaches the end of this
    /// slice (at most [`SLICE_NS`], and not past the wait's limit); returns
    /// whether `ready` was set.
    pub fn wait_slice(&self, ready: &AtomicBool, limit: usize, clock: impl Fn() -> usize) -> bool {
        let start = clock();
        let wait_end = self.since.load(Ordering::Relaxed).saturating_add(limit);
        let end = start.saturating_add(SLICE_NS).min(wait_end);
        loop {
            if ready.load(Ordering::Acquire) {
                return true;
            }
            if clock() >= end {
                return false;
            }
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: usize = 1_000_000;

    #[test]
    fn a_wait_starts_one_spinner_until_it_stops() {
        let s = Spin::default();
        assert!(s.begin(10, LIMIT));
        assert!(s.is_spinning());
        // A second command's wait while the callback is queued starts none.
        assert!(!s.begin(20, LIMIT));
        assert!(s.keep_going(30, 1, 2, LIMIT));
        // Nothing in flight: it stops, and the next wait starts it again.
        assert!(!s.keep_going(40, 0, 2, LIMIT));
        assert!(!s.is_spinning());
        assert!(s.begin(50, LIMIT));
    }

    #[test]
    fn it_stops_when_crowded_or_past_the_limit() {
        let s = Spin::default();
        assert!(s.begin(0, LIMIT));
        assert!(!s.keep_going(10, 3, 2, LIMIT));
        assert!(s.begin(100, LIMIT));
        assert!(s.keep_going(100 + LIMIT - 1, 1, 2, LIMIT));
        assert!(!s.keep_going(100 + LIMIT, 1, 2, LIMIT));
    }

    #[test]
    fn a_limit_above_the_bound_is_taken_as_the_bound() {
        let was = set_limit_us(Some(usize::MAX));
        assert_eq!(limit_ns(), MAX_SPIN_US * 1000);
        assert_eq!(set_limit_us(Some(250)), MAX_SPIN_US);
        assert_eq!(limit_ns(), 250_000);
        set_limit_us(Some(was));
    }

    #[test]
    fn a_zero_limit_never_spins() {
        let s = Spin::default();
        assert!(!s.begin(0, 0));
        assert!(!s.is_spinning());
    }

    #[test]
    fn slow_waits_turn_spinning_off_and_fast_ones_back_on() {
        let s = Spin::default();
        for _ in 0..40 {
            s.observe(5 * LIMIT);
        }
        assert!(!s.begin(0, LIMIT), "a slow store is not spun for");
        for _ in 0..40 {
            s.observe(LIMIT / 4);
        }
        assert!(s.begin(0, LIMIT));
    }

    #[test]
    fn a_slice_ends_at_its_length_or_at_the_limit() {
        let s = Spin::default();
        let ready = AtomicBool::new(false);
        let t = AtomicUsize::new(0);
        let clock = || t.fetch_add(1000, Ordering::Relaxed);
        s.begin(0, LIMIT);
        assert!(!s.wait_slice(&ready, LIMIT, clock));
        let ended = t.load(Ordering::Relaxed);
        assert!((SLICE_NS..SLICE_NS + 3000).contains(&ended), "{ended}");
        // Near the wait's limit the slice is cut short.
        t.store(LIMIT - 2000, Ordering::Relaxed);
        assert!(!s.wait_slice(&ready, LIMIT, clock));
        assert!(t.load(Ordering::Relaxed) <= LIMIT + 2000);
        ready.store(true, Ordering::Release);
        assert!(s.wait_slice(&ready, LIMIT, clock));
    }
}
