//! Stored reducer snapshots, damaged: a seed trace, and a session of up to
//! 63 user messages beside it (so the packed transcript has a table worth
//! damaging), are reduced, snapshotted (with every eventId kept, or as the
//! engine stores it) and then edited at arbitrary places, counted from
//! either end: bits flipped, bytes and little-endian counts written (the
//! packed transcript's lengths, string ends and id table), spans cut,
//! copied or inserted.
//!
//! With `leave`, the checker leaves closed history and its transcripts
//! (past 64 bytes) to a store, as the engine's does: a snapshot for the
//! store then describes the messages it handed over (format 13), and a
//! restored checker is given those records back after a first read.
//!
//! Properties: no panic in `restore` or `restore_shared`; the two agree;
//! whatever restores reads (state, debug state, every transcript message),
//! takes the trace again and other traces' lines without a panic, and its
//! own snapshot restores to the same state.
#![no_main]

use arbitrary::Arbitrary;
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use narad_core::checker::Checker;
use narad_core::Validator;
use std::collections::BTreeSet;

#[derive(Arbitrary, Debug)]
struct Edit {
    /// `at` counts back from the end (where the binary parts lie).
    from_end: bool,
    op: Op,
}

#[derive(Arbitrary, Debug)]
enum Op {
    Flip {
        at: u32,
        bit: u8,
    },
    /// A little-endian u32 at `at`: where a count, an end or a slot lies,
    /// values a bit flip rarely makes (0, a neighbour's, `u32::MAX`).
    Word {
        at: u32,
        value: u32,
    },
    Cut {
        at: u32,
    },
    /// `len` bytes from `from` written over the bytes at `to`.
    Copy {
        from: u32,
        to: u32,
        len: u8,
    },
    Insert {
        at: u32,
        bytes: Vec<u8>,
    },
}

#[derive(Arbitrary, Debug)]
struct Input {
    journal: u16,
    /// User messages in the session beside the trace's (modulo 64).
    messages: u8,
    for_store: bool,
    edits: Vec<Edit>,
    /// Lines of other traces pushed after the restore: (journal, line).
    later: Vec<(u16, u16)>,
    /// Leave closed history and transcripts to a store.
    leave: bool,
}

fn apply(snap: &mut Vec<u8>, e: &Edit) {
    let pos = |at: u32, len: usize| {
        let i = (at as usize).checked_rem(len)?;
        Some(if e.from_end { len - 1 - i } else { i })
    };
    match e.op {
        Op::Flip { at, bit } => {
            if let Some(i) = pos(at, snap.len()) {
                snap[i] ^= 1 << (bit % 8);
            }
        }
        Op::Word { at, value } => {
            if let Some(i) = pos(at, snap.len()) {
                let end = (i + 4).min(snap.len());
                snap[i..end].copy_from_slice(&value.to_le_bytes()[..end - i]);
            }
        }
        Op::Cut { at } => {
            if let Some(i) = pos(at, snap.len()) {
                snap.truncate(i);
            }
        }
        Op::Copy { from, to, len } => {
            if let (Some(f), Some(t)) = (pos(from, snap.len()), pos(to, snap.len())) {
                let n = usize::from(len).min(snap.len() - f).min(snap.len() - t);
                snap.copy_within(f..f + n, t);
            }
        }
        Op::Insert { at, ref bytes } => {
            let i = pos(at, snap.len() + 1).unwrap_or(0);
            snap.splice(i..i, bytes.iter().copied().take(64));
        }
    }
}

/// Every read of `c` a host makes, for each session of `sids`.
fn read_all(c: &Checker, sids: &BTreeSet<String>) {
    let _ = c.debug_state();
    for sid in sids {
        let _ = c.state_json(sid);
        if let Some(t) = c.transcript(sid) {
            // Messages left to a host's store come first, not held.
            let away = t.messages.len() - t.messages.iter().count();
            for (i, m) in t.messages.iter().enumerate() {
                assert_eq!(t.messages.get(away + i), Some(m));
                let _ = t.get(&m.message_id);
            }
        }
    }
}

fuzz_target!(|input: Input| {
    let lines = narad_fuzz::journal(input.journal);
    if lines.is_empty() || input.edits.len() > 16 {
        return;
    }
    let mut c = Checker::new(Validator::default());
    if input.leave {
        c = c.with_transcript_handover(64, 8);
        c.leave_closed_to_store();
    }
    let mut sids = BTreeSet::new();
    for line in &lines {
        let _ = c.push_bytes(line.as_bytes());
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
            if let Some(s) = v.get("sessionId").and_then(|s| s.as_str()) {
                sids.insert(s.to_owned());
            }
        }
    }
    for i in 1..=u64::from(input.messages % 64) {
        // Some contents end inside a two-byte character's reach.
        let content = if i % 3 == 0 {
            "é".repeat(i as usize % 7)
        } else {
            format!("m{i}")
        };
        let line = format!(
            r#"{{"protocolVersion":"narad/v1","eventId":"fz-{i}","timestamp":"2026-08-05T00:00:00Z","sessionId":"fz","sessionSequence":{i},"type":"message.user.recorded","messageId":"m{i}","messageScope":"session","content":"{content}"}}"#
        );
        let _ = c.push_bytes(line.as_bytes());
    }
    if input.messages % 64 > 0 {
        sids.insert("fz".to_owned());
    }
    // What a store would keep of what the checker handed over.
    let kept: Vec<_> = sids
        .iter()
        .flat_map(|sid| {
            let taken = c.take_closed(sid, usize::MAX);
            taken.into_iter().map(move |r| (sid.clone(), r))
        })
        .collect();
    let mut snap = if input.for_store {
        c.snapshot_for_store()
    } else {
        c.snapshot()
    };
    for e in &input.edits {
        apply(&mut snap, e);
    }
    let owned = Checker::restore(Validator::default(), &snap);
    let shared = Checker::restore_shared(Validator::default(), &Bytes::from(snap), || true).1;
    assert_eq!(
        owned.as_ref().map(Checker::debug_state),
        shared.as_ref().map(Checker::debug_state),
        "restore and restore_shared disagree"
    );
    for mut r in [owned, shared].into_iter().flatten() {
        read_all(&r, &sids);
        for (sid, record) in &kept {
            let _ = r.recall_closed(sid, &record.key, Some(&record.bytes));
        }
        read_all(&r, &sids);
        let again = Checker::restore(Validator::default(), &r.snapshot());
        assert_eq!(
            again.map(|a| a.debug_state()),
            Some(r.debug_state()),
            "a restored checker's own snapshot does not restore it"
        );
        for line in &lines {
            let _ = r.push_bytes(line.as_bytes());
        }
        for &(j, l) in input.later.iter().take(16) {
            if let Some(line) = narad_fuzz::any_line(j, l) {
                let _ = r.push_bytes(line.as_bytes());
            }
        }
        read_all(&r, &sids);
        let _ = r.snapshot_for_store();
    }
});
