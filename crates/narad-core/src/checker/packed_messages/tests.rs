//! Tests of the packed messages part: round trips, kept tables, damage.

use super::*;

fn messages() -> Vec<Message> {
    let m = |id: &str| Message {
        message_id: id.into(),
        role: "user".into(),
        scope: "session".into(),
        run_id: None,
        root_run_id: None,
        content: format!("text of {id}"),
        completed: true,
        redacted: None,
        attachment_ids: Vec::new(),
    };
    let mut all = vec![m("u1"), m("a2"), m("a3"), m("u4"), m(""), m("n5")];
    all[1].role = "assistant".into();
    all[1].scope = "run".into();
    all[1].run_id = Some("child".into());
    all[1].root_run_id = Some("root".into());
    all[1].completed = false;
    all[1].content = "näive ☃ \"quoted\"\n".into();
    all[2].redacted = Some(None);
    all[3].redacted = Some(Some("[removed]".into()));
    all[3].attachment_ids = vec!["att-1".into(), "att-2".into()];
    all[4].content.clear();
    // Words that are not known ones are held as strings.
    all[5].role = "narrator".into();
    all[5].scope = "ſcope".into();
    all
}

fn src<'a, I>(entries: I, base: Option<&'a Packed>) -> Source<'a, I>
where
    I: Iterator<Item = Entry<'a>> + Clone,
{
    let count = entries
        .clone()
        .map(|e| match e {
            Entry::Message(_) => 1,
            Entry::Packed(_, run) => run.len(),
        })
        .sum();
    Source {
        entries,
        count,
        text: 0,
        base,
    }
}

fn packed(m: &[Message]) -> Vec<u8> {
    let mut out = Vec::new();
    write(
        src(m.iter().map(|m| Entry::Message(Cow::Borrowed(m))), None),
        &mut out,
    );
    out
}

fn decoded(p: &Packed) -> Vec<Message> {
    (0..p.len()).map(|i| p.message(i).unwrap()).collect()
}

#[test]
fn messages_round_trip_exactly_and_are_found_by_id() {
    assert!(packed(&[]).is_empty());
    for n in 1..=messages().len() {
        let all = messages();
        let p = Packed::read(Bytes::from(packed(&all[..n]))).unwrap();
        assert_eq!(decoded(&p), all[..n].to_vec());
        for (i, m) in all[..n].iter().enumerate() {
            assert_eq!(p.find(&m.message_id), Some(i));
            assert_eq!(p.message_id(i), Some(m.message_id.as_str()));
        }
        assert_eq!(p.find("absent"), None);
    }
}

/// A restored part written again, message by message as it lies,
/// gives the same bytes; with one message decoded and changed in
/// between, the same bytes as writing them all decoded.
#[test]
fn a_restored_part_writes_again_as_it_was() {
    let all = messages();
    let bytes = packed(&all);
    let p = Packed::read(Bytes::from(bytes.clone())).unwrap();
    for base in [None, Some(&p)] {
        let mut again = Vec::new();
        write(
            src([Entry::Packed(&p, 0..p.len())].into_iter(), base),
            &mut again,
        );
        assert_eq!(again, bytes);
        let mut changed = all.clone();
        changed[1].content.push_str(" and more");
        let entries = [
            Entry::Packed(&p, 0..1),
            Entry::Message(Cow::Borrowed(&changed[1])),
            Entry::Packed(&p, 2..p.len()),
        ];
        let mut mixed = Vec::new();
        write(src(entries.into_iter(), base), &mut mixed);
        assert_eq!(mixed, packed(&changed));
    }
}

/// Messages after a restored part go into its id table while it has
/// room (four in five slots), and a new table is built past that;
/// either way every id is found.
#[test]
fn later_messages_join_the_kept_table_while_it_has_room() {
    let make = |n: usize| -> Vec<Message> {
        (0..n)
            .map(|i| Message {
                message_id: format!("m{i}"),
                ..messages()[0].clone()
            })
            .collect()
    };
    let all = make(1300);
    let p = Packed::read(Bytes::from(packed(&all[..1000]))).unwrap();
    let slots = p.slots.len();
    for (total, kept) in [(1200, true), (1300, false)] {
        let entries = std::iter::once(Entry::Packed(&p, 0..1000)).chain(
            all[1000..total]
                .iter()
                .map(|m| Entry::Message(Cow::Borrowed(m))),
        );
        let mut out = Vec::new();
        write(src(entries, Some(&p)), &mut out);
        let q = Packed::read(Bytes::from(out)).unwrap();
        assert_eq!(q.slots.len() == slots, kept, "{total}");
        for (i, m) in all[..total].iter().enumerate() {
            assert_eq!(q.find(&m.message_id), Some(i));
            assert_eq!(q.message(i).as_ref(), Some(m));
        }
    }
}

/// Many ids under one table home: those past the probe window go to
/// `overflow`, and every id is still found, each lookup bounded.
#[test]
fn ids_past_the_probe_window_are_found_in_overflow() {
    let n = 3000;
    let all: Vec<Message> = (0..n)
        .map(|i| Message {
            message_id: format!("m{i}"),
            ..messages()[0].clone()
        })
        .collect();
    let p = Packed::read(Bytes::from(packed(&all))).unwrap();
    for (i, m) in all.iter().enumerate() {
        assert_eq!(p.find(&m.message_id), Some(i));
    }
    // Tables of one and four slots, as ids crafted to share a hash
    // would fill a window: the rest are in the overflow, sorted, and
    // every id is found.
    for slots in [1, 4] {
        let mut out = Vec::new();
        let entries = all[..40].iter().map(|m| Entry::Message(Cow::Borrowed(m)));
        write_sized(src(entries, None), Some(slots), &mut out);
        let p = Packed::read(Bytes::from(out)).unwrap();
        assert_eq!(p.overflow.len() / 4, 40 - slots);
        for (i, m) in all[..40].iter().enumerate() {
            assert_eq!(p.find(&m.message_id), Some(i));
        }
        assert_eq!(p.find("m40"), None);
    }
}

/// Storage contents: every cut, every flipped bit and a trailing byte
/// either refuse the part or restore it without a panic, and whatever
/// restores reads and looks up without one.
#[test]
fn cut_or_flipped_bytes_never_panic() {
    let out = packed(&messages());
    let p = Packed::read(Bytes::from(out.clone())).unwrap();
    assert_eq!(decoded(&p), messages());
    for cut in 0..out.len() {
        assert!(
            Packed::read(Bytes::copy_from_slice(&out[..cut])).is_none(),
            "cut at {cut}"
        );
    }
    let mut longer = out.clone();
    longer.push(0);
    assert!(Packed::read(Bytes::from(longer)).is_none());
    for i in 0..out.len() {
        for bit in 0..8 {
            let mut bad = out.clone();
            bad[i] ^= 1 << bit;
            if let Some(p) = Packed::read(Bytes::from(bad)) {
                for j in 0..p.len() {
                    let m = p.message(j);
                    assert!(m.is_some(), "a restored message always reads");
                    let _ = p.find(&m.unwrap().message_id);
                }
            }
        }
    }
    // Counts the bytes cannot hold allocate nothing.
    let mut huge = vec![0xff; HEADER];
    huge[..4].copy_from_slice(&1u32.to_le_bytes());
    assert!(Packed::read(Bytes::from(huge)).is_none());
}
