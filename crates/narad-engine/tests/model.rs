//! The model-based property test: random command sequences, one task per
//! session, many sessions at once, on a real redb file. Whatever the
//! engine accepts or refuses:
//! - every journal it wrote is accepted by a fresh `narad-core` checker;
//! - every event validates against the published JSON Schemas (when
//!   `../shared/narad-spec` is present);
//! - every refused command left the session's journal byte-identical.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{assert_valid, engine, journal, me, session};
use narad_engine::{
    Engine, Interrupt, Resolve, StartRun, Started, StopTarget, Terminal, ToolOutcome,
};
use narad_store_redb::RedbStore;
use proptest::prelude::*;
use serde_json::json;

#[derive(Debug, Clone)]
enum Cmd {
    Start { nested: Option<u8>, queue: bool },
    Tool(u8),
    FinishTool(u8),
    Pause(u8),
    Resume(u8, bool),
    Interrupt(u8),
    Resolve(u8, bool),
    End(u8, u8),
    Stop(Option<u8>),
    Message,
}

fn cmd() -> impl Strategy<Value = Cmd> {
    prop_oneof![
        (proptest::option::of(any::<u8>()), any::<bool>())
            .prop_map(|(nested, queue)| Cmd::Start { nested, queue }),
        any::<u8>().prop_map(Cmd::Tool),
        any::<u8>().prop_map(Cmd::FinishTool),
        any::<u8>().prop_map(Cmd::Pause),
        (any::<u8>(), any::<bool>()).prop_map(|(r, ok)| Cmd::Resume(r, ok)),
        any::<u8>().prop_map(Cmd::Interrupt),
        (any::<u8>(), any::<bool>()).prop_map(|(i, ok)| Cmd::Resolve(i, ok)),
        (any::<u8>(), 0..3u8).prop_map(|(r, k)| Cmd::End(r, k)),
        proptest::option::of(any::<u8>()).prop_map(Cmd::Stop),
        Just(Cmd::Message),
    ]
}

fn pick(v: &[String], i: u8) -> Option<String> {
    (!v.is_empty()).then(|| v[i as usize % v.len()].clone())
}

/// What a task knows of its session: ids it was given back.
#[derive(Default)]
struct Known {
    runs: Vec<String>,
    tools: Vec<String>,
    waits: Vec<(String, String)>,
    interrupts: Vec<String>,
}

async fn drive(e: Engine<RedbStore>, cmds: Vec<Cmd>) -> (String, usize, usize) {
    let sid = session(&e).await;
    let mut k = Known::default();
    let (mut ok, mut refused) = (0, 0);
    for c in cmds {
        let before = journal(&e, &sid).await;
        let r: Result<(), narad_engine::EngineError> = match c {
            Cmd::Start { nested, queue } => {
                let parent = nested.and_then(|i| pick(&k.runs, i));
                e.start_run(
                    &me(),
                    &sid,
                    StartRun {
                        parent_run_id: parent,
                        queue_if_busy: queue,
                        ..StartRun::default()
                    },
                )
                .await
                .map(|s| match s {
                    Started::Running(r) | Started::Queued(r) => k.runs.push(r),
                })
            }
            Cmd::Tool(i) => match pick(&k.runs, i) {
                Some(r) => e
                    .start_tool_call(&me(), &sid, &r, "t", json!({"i": i}))
                    .await
                    .map(|t| k.tools.push(t)),
                None => continue,
            },
            Cmd::FinishTool(i) => match pick(&k.tools, i) {
                Some(t) => {
                    e.finish_tool_call(&me(), &sid, &t, ToolOutcome::success(json!(i)))
                        .await
                }
                None => continue,
            },
            Cmd::Pause(i) => match pick(&k.runs, i) {
                Some(r) => e
                    .pause_run(&me(), &sid, &r, "capacity", false)
                    .await
                    .map(|w| k.waits.push((r, w))),
                None => continue,
            },
            Cmd::Resume(i, right) => match k.waits.get(i as usize % k.waits.len().max(1)) {
                Some((r, w)) => {
                    let w = if right {
                        w.clone()
                    } else {
                        "wait-bogus".into()
                    };
                    e.resume_run(&me(), &sid, r, &w).await
                }
                None => continue,
            },
            Cmd::Interrupt(i) => match pick(&k.runs, i) {
                Some(r) => e
                    .request_interrupt(
                        &me(),
                        &sid,
                        Interrupt::on_run(r, "approval", ["approve", "deny"]),
                    )
                    .await
                    .map(|(iid, _)| k.interrupts.push(iid)),
                None => continue,
            },
            Cmd::Resolve(i, valid) => match pick(&k.interrupts, i) {
                Some(iid) => e
                    .resolve_interrupt(
                        &me(),
                        Resolve {
                            interrupt_id: iid,
                            decision: if valid { "approve" } else { "perhaps" }.into(),
                            reason: None,
                            expected_revision: None,
                            members: None,
                        },
                    )
                    .await
                    .map(|_| ()),
                None => continue,
            },
            Cmd::End(i, kind) => match pick(&k.runs, i) {
                Some(r) => {
                    let t = match kind {
                        0 => Terminal::Finished {
                            usage: Some(json!({"totalTokens": 1})),
                            artifact_ids: vec![],
                        },
                        1 => Terminal::Error {
                            code: "provider_unavailable".into(),
                            message: "Provider\nunavailable.".into(),
                            usage: None,
                        },
                        _ => Terminal::Cancelled {
                            code: None,
                            message: None,
                            usage: None,
                        },
                    };
                    e.end_run(&me(), &sid, &r, t).await
                }
                None => continue,
            },
            Cmd::Stop(target) => {
                let t = match target.and_then(|i| pick(&k.runs, i)) {
                    Some(r) => StopTarget::Run(r),
                    None => StopTarget::ActiveRoot,
                };
                e.stop(&me(), &sid, t).await.map(|_| ())
            }
            Cmd::Message => e.message(&me(), &sid, json!("hello")).await.map(|_| ()),
        };
        match r {
            Ok(()) => ok += 1,
            Err(err) => {
                refused += 1;
                // Queued starts may begin inside another command; only a
                // refused command's own writes are forbidden.
                assert_eq!(
                    journal(&e, &sid).await,
                    before,
                    "refused command wrote: {err}"
                );
            }
        }
    }
    (sid, ok, refused)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("NARAD_MODEL_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(12),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_engine_journal_is_valid_and_refusals_write_nothing(
        plans in proptest::collection::vec(proptest::collection::vec(cmd(), 1..40), 1..6)
    ) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let schemas = common::schemas("engine_journals_validate_against_schemas");
        rt.block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let e = engine(dir.path()).await;
            let tasks: Vec<_> = plans
                .into_iter()
                .map(|p| tokio::spawn(drive(e.clone(), p)))
                .collect();
            for t in tasks {
                let (sid, _ok, _refused) = t.await.unwrap();
                assert_valid(&e, &sid).await;
                for b in journal(&e, &sid).await {
                    common::schema_valid(&schemas, &b);
                }
            }
        });
    }
}
