//! Progress bars on stderr (counts, rate, ETA), drawn only when stderr is
//! a terminal: scripts and pipes see nothing.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar of `total` `unit`s labelled `what`; hidden off a terminal.
pub fn bar(total: u64, what: &'static str, unit: &'static str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    let template =
        format!("{{prefix}} [{{bar:30}}] {{pos}}/{{len}} {unit}, {{per_sec}}, ETA {{eta}} {{msg}}");
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix(what);
    bar
}
