//! Names of the engine's spans and metrics, and the small helpers the
//! instrumented code calls. Spans and events carry ids, counts, codes and
//! durations only: never tool args, responses or message text (§12).
//!
//! Without a `tracing` subscriber or a `metrics` recorder installed, each
//! call costs a check of a cached callsite interest or a no-op recorder.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Span: one engine command (`command`, `session`, `outcome`, `attempts`).
pub(crate) const SPAN_COMMAND: &str = "narad.command";
/// Span: planning one attempt of a command (`drafts`).
pub(crate) const SPAN_PLAN: &str = "narad.plan";
/// Span: one append through the store (`session`, `events`, `side`).
pub(crate) const SPAN_APPEND: &str = "narad.append";
/// Span: rebuilding a session (`session`, `from`, `replayed`).
pub(crate) const SPAN_HYDRATE: &str = "narad.hydrate";

/// Counter `narad_commands_total{command, outcome}`.
pub(crate) const COMMANDS: &str = "narad_commands_total";
/// Histogram `narad_append_seconds`.
pub(crate) const APPEND_SECONDS: &str = "narad_append_seconds";
/// Counter `narad_session_cache_hits_total`.
pub(crate) const CACHE_HITS: &str = "narad_session_cache_hits_total";
/// Counter `narad_session_cache_misses_total`.
pub(crate) const CACHE_MISSES: &str = "narad_session_cache_misses_total";
/// Counter `narad_session_cache_evictions_total`.
pub(crate) const CACHE_EVICTIONS: &str = "narad_session_cache_evictions_total";
/// Histogram `narad_hydrate_seconds{from}`.
pub(crate) const HYDRATE_SECONDS: &str = "narad_hydrate_seconds";
/// Counter `narad_hydrate_events_total`: events replayed by hydrations.
pub(crate) const HYDRATE_EVENTS: &str = "narad_hydrate_events_total";
/// Counter `narad_snapshots_refused_total{reason}`: stored reducer snapshots
/// a hydrate did not use (`reason`: `earlier_layout`, not damage, or what
/// was wrong with it: `unreadable`, `other_session`, `checksum`,
/// `other_journal`, `state`); the session was replayed instead.
pub(crate) const SNAPSHOTS_REFUSED: &str = "narad_snapshots_refused_total";
/// Counter `narad_subscriber_lag_total`: commit notices a follower missed.
pub(crate) const SUBSCRIBER_LAG: &str = "narad_subscriber_lag_total";
/// Counter `narad_retries_total`: conflict → reload retries.
pub(crate) const RETRIES: &str = "narad_retries_total";
/// Counter `narad_timers_fired_total{kind}`.
pub(crate) const TIMERS_FIRED: &str = "narad_timers_fired_total";

/// The public command a plan closure belongs to, from its type name
/// (`…::start_run::{{closure}}::{{closure}}` → `start_run`): every command
/// is named without threading a name through each call site.
pub(crate) fn command_name<F>(_plan: &F) -> &'static str {
    let mut path = std::any::type_name::<F>();
    loop {
        if let Some(rest) = path.strip_suffix("::{{closure}}") {
            path = rest;
        } else if path.ends_with('>') {
            // A generic function (`message<impl Into<Value>>`): drop its
            // balanced generic arguments.
            path = strip_generics(path);
        } else {
            break;
        }
    }
    path.rsplit("::").next().unwrap_or(path)
}

/// `a::f<B<C>>` → `a::f`; unbalanced input is returned unchanged.
fn strip_generics(path: &str) -> &str {
    let mut depth = 0usize;
    for (i, c) in path.char_indices().rev() {
        match c {
            '>' => depth += 1,
            '<' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return &path[..i];
                }
            }
            _ => {}
        }
    }
    path
}

/// Runs one command outside the command loop (session creation, import,
/// lifecycle and client-lease commands) in its `narad.command` span and
/// counts it by outcome code, as [`crate::Engine`]'s command loop does.
///
/// A plain function returning [`Traced`], not an `async fn`: an async
/// fn keeps its `work` argument's slot beside the instrumented copy it
/// awaits, which doubled every command's future (12 KB, where the work
/// itself is 6 KB) and so the bytes a caller moves and allocates per
/// command.
pub(crate) fn traced<T, F>(name: &'static str, session: &str, work: F) -> Traced<F>
where
    F: Future<Output = Result<T, crate::EngineError>>,
{
    use tracing::Instrument;
    let span = tracing::info_span!(
        SPAN_COMMAND,
        command = name,
        session = session,
        outcome = tracing::field::Empty,
    );
    Traced {
        work: work.instrument(span),
        name,
    }
}

pin_project_lite::pin_project! {
    /// The future [`traced`] returns: `work` in its span, then its outcome
    /// recorded on the span and counted.
    pub(crate) struct Traced<F> {
        #[pin]
        work: tracing::instrument::Instrumented<F>,
        name: &'static str,
    }
}

impl<T, F> Future for Traced<F>
where
    F: Future<Output = Result<T, crate::EngineError>>,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut work = this.work;
        let Poll::Ready(outcome) = work.as_mut().poll(cx) else {
            return Poll::Pending;
        };
        let code = outcome
            .as_ref()
            .map_or_else(crate::EngineError::code, |_| "ok");
        work.as_ref().get_ref().span().record("outcome", code);
        metrics::counter!(COMMANDS, "command" => *this.name, "outcome" => code).increment(1);
        Poll::Ready(outcome)
    }
}

/// Seconds since `start`, for histograms.
pub(crate) fn seconds(start: std::time::Instant) -> f64 {
    start.elapsed().as_secs_f64()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_closure_is_named_after_its_function() {
        fn start_run() -> &'static str {
            let plan = |x: u8| x;
            super::command_name(&plan)
        }
        assert_eq!(start_run(), "start_run");
    }

    #[test]
    fn a_generic_function_is_named_without_its_arguments() {
        fn message<T: Into<String>>(_t: T) -> &'static str {
            let plan = |x: u8| x;
            super::command_name(&plan)
        }
        assert_eq!(message("hi"), "message");
    }
}
