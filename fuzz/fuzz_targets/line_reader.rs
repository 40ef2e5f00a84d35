//! The CLI's bounded line reader (`narad_cli::lines`) over arbitrary bytes,
//! read through arbitrary short reads and buffer sizes. Properties: no
//! panic; the lines and refusals it yields are exactly the input split at
//! `\n` (the empty segment after a final `\n` is not a line); no line it
//! returns is longer than the bound; an oversized line is one `TooLong`
//! with its full length, and reading goes on after it.
#![no_main]

use std::io::{BufReader, Read};

use libfuzzer_sys::fuzz_target;
use narad_cli::lines::{LineError, LineReader};

/// A reader that hands out at most `step` bytes per call.
struct Short<'a> {
    data: &'a [u8],
    step: usize,
}

impl Read for Short<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&[max, step, cap], input)) = data.split_first_chunk::<3>() else {
        return;
    };
    let max = usize::from(max % 64);
    let step = usize::from(step % 16) + 1;
    let cap = usize::from(cap % 32) + 1;
    let reader = BufReader::with_capacity(cap, Short { data: input, step });
    let mut lines = LineReader::new(reader, max);

    let mut segments: Vec<&[u8]> = input.split(|b| *b == b'\n').collect();
    if input.ends_with(b"\n") || input.is_empty() {
        segments.pop();
    }
    for (i, want) in segments.iter().enumerate() {
        let number = i as u64 + 1;
        match lines.next_line() {
            Some(Ok(line)) => {
                assert!(want.len() <= max, "line {number} over the bound returned");
                assert_eq!((line.number, line.bytes), (number, *want));
            }
            Some(Err(LineError::TooLong { line, length, max: m })) => {
                assert!(want.len() > max, "line {number} within the bound refused");
                assert_eq!((line, length, m), (number, want.len() as u64, max));
            }
            other => panic!("line {number}: {other:?}"),
        }
    }
    assert!(lines.next_line().is_none(), "more lines than the input holds");
});
