//! The bridge's settings from the environment: `NARAD_*` counts read at
//! first use, which tests and benchmarks may swap within one process.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// A count set in the environment; `None` when unset or not a number.
pub fn env_usize(name: &str) -> Option<usize> {
    std::env::var(name).ok()?.parse().ok()
}

/// A setting: `var` from the environment at first use, else `default`.
pub struct Knob {
    var: &'static str,
    default: usize,
    value: OnceLock<AtomicUsize>,
}

impl Knob {
    pub const fn new(var: &'static str, default: usize) -> Self {
        Self {
            var,
            default,
            value: OnceLock::new(),
        }
    }

    /// What the environment gives, else the default.
    pub fn initial(&self) -> usize {
        env_usize(self.var).unwrap_or(self.default)
    }

    fn cell(&self) -> &AtomicUsize {
        self.value.get_or_init(|| AtomicUsize::new(self.initial()))
    }

    pub fn get(&self) -> usize {
        self.cell().load(Ordering::Relaxed)
    }

    /// Sets it to `v`; returns the previous value.
    pub fn swap(&self, v: usize) -> usize {
        self.cell().swap(v, Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_gives_the_default_and_swap_returns_the_old_value() {
        let k = Knob::new("NARAD_TEST_KNOB_NEVER_SET", 7);
        assert_eq!(k.get(), 7);
        assert_eq!(k.swap(3), 7);
        assert_eq!(k.get(), 3);
        assert_eq!(k.initial(), 7);
    }
}
