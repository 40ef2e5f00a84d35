//! The checker over near-valid journals: a seed trace with arbitrary edits
//! (drop, duplicate, swap, shifted sequence numbers, changed or removed
//! fields, truncated lines, redeliveries, lines spliced from other traces).
//!
//! Properties: no panic; a refused record changes nothing; redelivering an
//! accepted record is accepted and changes nothing; a checker restored from
//! a snapshot at any line answers every later line exactly like the one
//! that was never snapshotted, and a final snapshot restores the same state.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use narad_core::checker::{Applied, Checker};
use narad_core::{Profile, ProfileSet, Validator, ValidatorConfig};
use serde_json::Value;

#[derive(Arbitrary, Debug, Clone, Copy)]
enum SeqField {
    SessionSequence,
    Sequence,
    WorkflowSequence,
    Revision,
    ExpectedRevision,
}

impl SeqField {
    fn name(self) -> &'static str {
        match self {
            Self::SessionSequence => "sessionSequence",
            Self::Sequence => "sequence",
            Self::WorkflowSequence => "workflowSequence",
            Self::Revision => "revision",
            Self::ExpectedRevision => "expectedRevision",
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Field {
    Type,
    EventId,
    SessionId,
    RunId,
    RootRunId,
    ParentRunId,
    ToolCallId,
    WorkflowId,
    InterruptId,
    MessageId,
    Timestamp,
    ProtocolVersion,
    Scope,
    Status,
    Payload,
    Args,
    Content,
}

impl Field {
    fn name(self) -> &'static str {
        match self {
            Self::Type => "type",
            Self::EventId => "eventId",
            Self::SessionId => "sessionId",
            Self::RunId => "runId",
            Self::RootRunId => "rootRunId",
            Self::ParentRunId => "parentRunId",
            Self::ToolCallId => "toolCallId",
            Self::WorkflowId => "workflowId",
            Self::InterruptId => "interruptId",
            Self::MessageId => "messageId",
            Self::Timestamp => "timestamp",
            Self::ProtocolVersion => "protocolVersion",
            Self::Scope => "scope",
            Self::Status => "status",
            Self::Payload => "payload",
            Self::Args => "args",
            Self::Content => "content",
        }
    }
}

#[derive(Arbitrary, Debug, Clone)]
enum NewValue {
    Null,
    Bool(bool),
    Int(i64),
    Str(String),
    /// The same field's value on another line of the journal.
    FromLine(u16),
    /// The same field's value on a line of another journal.
    FromJournal(u16, u16),
    EmptyObject,
    EmptyArray,
}

#[derive(Arbitrary, Debug, Clone)]
enum Edit {
    Drop(u16),
    Duplicate {
        from: u16,
        to: u16,
    },
    Swap(u16, u16),
    Shift {
        line: u16,
        field: SeqField,
        by: i8,
    },
    Set {
        line: u16,
        field: Field,
        value: NewValue,
    },
    Remove {
        line: u16,
        field: Field,
    },
    Truncate(u16),
    /// Appends a copy of a line at the end (a late redelivery).
    Redeliver(u16),
    Splice {
        journal: u16,
        line: u16,
        at: u16,
    },
    CutBytes {
        line: u16,
        keep: u16,
    },
}

#[derive(Arbitrary, Debug)]
struct Input {
    journal: u16,
    /// Bit i set: optional profile i is negotiated; `u16::MAX`-ish = all.
    profiles: Option<u16>,
    canonical_graphs: bool,
    /// Before this line, a second checker is replaced by one restored from
    /// its snapshot; both must then answer every line alike.
    restore_at: Option<u16>,
    edits: Vec<Edit>,
}

fn idx(i: u16, len: usize) -> Option<usize> {
    (len > 0).then(|| usize::from(i) % len)
}

fn field_of(line: &str, name: &str) -> Option<Value> {
    let v: Value = serde_json::from_str(line).ok()?;
    v.get(name).cloned()
}

/// Applies `f` to the line parsed as a JSON object; lines that are not
/// objects stay as they are.
fn with_object(line: &mut Vec<u8>, f: impl FnOnce(&mut serde_json::Map<String, Value>)) {
    if let Ok(Value::Object(mut m)) = serde_json::from_slice::<Value>(line) {
        f(&mut m);
        if let Ok(b) = serde_json::to_vec(&Value::Object(m)) {
            *line = b;
        }
    }
}

fn apply(lines: &mut Vec<Vec<u8>>, seed: &[&str], edit: &Edit) {
    let len = lines.len();
    match edit {
        Edit::Drop(i) => {
            if let Some(i) = idx(*i, len) {
                lines.remove(i);
            }
        }
        Edit::Duplicate { from, to } => {
            if let (Some(f), Some(t)) = (idx(*from, len), idx(*to, len + 1)) {
                let l = lines[f].clone();
                lines.insert(t, l);
            }
        }
        Edit::Swap(a, b) => {
            if let (Some(a), Some(b)) = (idx(*a, len), idx(*b, len)) {
                lines.swap(a, b);
            }
        }
        Edit::Shift { line, field, by } => {
            if let Some(i) = idx(*line, len) {
                with_object(&mut lines[i], |m| {
                    if let Some(n) = m.get(field.name()).and_then(Value::as_i64) {
                        m.insert(
                            field.name().into(),
                            Value::from(n.saturating_add(i64::from(*by))),
                        );
                    }
                });
            }
        }
        Edit::Set { line, field, value } => {
            let Some(i) = idx(*line, len) else { return };
            let name = field.name();
            let v = match value {
                NewValue::Null => Some(Value::Null),
                NewValue::Bool(b) => Some(Value::Bool(*b)),
                NewValue::Int(n) => Some(Value::from(*n)),
                NewValue::Str(s) => Some(Value::String(s.clone())),
                NewValue::FromLine(l) => idx(*l, seed.len()).and_then(|l| field_of(seed[l], name)),
                NewValue::FromJournal(j, l) => {
                    narad_fuzz::any_line(*j, *l).and_then(|l| field_of(l, name))
                }
                NewValue::EmptyObject => Some(Value::Object(Default::default())),
                NewValue::EmptyArray => Some(Value::Array(Vec::new())),
            };
            if let Some(v) = v {
                with_object(&mut lines[i], |m| {
                    m.insert(name.into(), v);
                });
            }
        }
        Edit::Remove { line, field } => {
            if let Some(i) = idx(*line, len) {
                with_object(&mut lines[i], |m| {
                    m.remove(field.name());
                });
            }
        }
        Edit::Truncate(n) => lines.truncate(usize::from(*n)),
        Edit::Redeliver(i) => {
            if let Some(i) = idx(*i, len) {
                let l = lines[i].clone();
                lines.push(l);
            }
        }
        Edit::Splice { journal, line, at } => {
            if let (Some(l), Some(at)) = (narad_fuzz::any_line(*journal, *line), idx(*at, len + 1))
            {
                lines.insert(at, l.as_bytes().to_vec());
            }
        }
        Edit::CutBytes { line, keep } => {
            if let Some(i) = idx(*line, len) {
                let keep = usize::from(*keep) % (lines[i].len() + 1);
                lines[i].truncate(keep);
            }
        }
    }
}

fn validator(profiles: Option<u16>) -> Validator {
    let mut config = ValidatorConfig::default();
    if let Some(mask) = profiles {
        let mut set = ProfileSet::core();
        for (bit, p) in Profile::OPTIONAL.iter().enumerate() {
            if mask & (1 << bit) != 0 {
                set = set.with(*p);
            }
        }
        config.profiles = set;
    }
    Validator::new(config)
}

fuzz_target!(|input: Input| {
    let seed = narad_fuzz::journal(input.journal);
    let mut lines: Vec<Vec<u8>> = seed.iter().map(|l| l.as_bytes().to_vec()).collect();
    for edit in input.edits.iter().take(32) {
        apply(&mut lines, &seed, edit);
        lines.truncate(512);
    }
    let v = validator(input.profiles);
    let mut c = Checker::new(v);
    if input.canonical_graphs {
        c = c.with_canonical_graphs();
    }
    let mut twin = c.clone();
    let restore_at = input.restore_at.map(|r| usize::from(r) % (lines.len() + 1));
    let mut accepted: Vec<&[u8]> = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        if restore_at == Some(n) {
            twin = match Checker::restore(v, &twin.snapshot()) {
                Some(t) if input.canonical_graphs => t.with_canonical_graphs(),
                Some(t) => t,
                None => panic!("line {n}: a fresh snapshot was not restorable"),
            };
        }
        let answer = twin.push_bytes(line).map_err(|r| r.code);
        let before = c.debug_state();
        let redelivery = accepted.contains(&line.as_slice());
        let pushed = c.push_bytes(line);
        assert_eq!(
            pushed.as_ref().map_err(|r| r.code).copied(),
            answer,
            "line {n}: a checker restored from a snapshot answers differently"
        );
        match pushed {
            Err(r) => assert_eq!(
                c.debug_state(),
                before,
                "line {n} refused ({}) but the state changed",
                r.code
            ),
            Ok(applied) => {
                if redelivery {
                    assert_ne!(
                        applied,
                        Applied::Applied,
                        "line {n}: redelivery applied again"
                    );
                    assert_eq!(
                        c.debug_state(),
                        before,
                        "line {n}: redelivery changed the state"
                    );
                }
                if applied == Applied::Applied && is_authority(line) {
                    accepted.push(line);
                    let after = c.debug_state();
                    let _ = twin.push_bytes(line);
                    match c.push_bytes(line) {
                        Ok(Applied::Applied) => {
                            panic!("line {n}: immediate redelivery applied again")
                        }
                        Ok(_) => {}
                        Err(r) => panic!("line {n}: immediate redelivery refused: {}", r.code),
                    }
                    assert_eq!(
                        c.debug_state(),
                        after,
                        "line {n}: redelivery changed the state"
                    );
                }
            }
        }
    }
    let snap = c.snapshot();
    match Checker::restore(v, &snap) {
        Some(r) => assert_eq!(
            r.debug_state(),
            c.debug_state(),
            "snapshot did not restore the state"
        ),
        None => panic!("a fresh snapshot was not restorable"),
    }
});

/// Authority events carry a `sessionSequence`; only they are deduplicated by
/// `(sessionId, eventId)`.
fn is_authority(line: &[u8]) -> bool {
    matches!(
        Validator::default().parse(line),
        Ok(narad_core::Parsed::Record {
            record: narad_core::Record::Authority(_),
            ..
        })
    )
}
