//! Replay and attach: history in pages (§10.2), then attach — capability
//! record, hydrate records, and a live follower that picks up exactly where
//! the hydrate ended.
//!
//! `cargo run --example replay_and_attach` (no `--store`: it runs on a
//! private temporary store, removed at exit)

use narad_engine::{Engine, NewSession, Principal};
use narad_store::HistoryQuery;
use narad_store_redb::RedbStore;
use serde_json::json;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    narad_examples::refuse_store_flag("replay_and_attach");
    let scratch = narad_examples::Scratch::new("narad-replay")?;
    let path = scratch.join("replay.redb");
    let engine = Engine::new(RedbStore::open(&path).await?);
    let me = Principal::new("viewer");
    let sid = engine.create_session(&me, NewSession::default()).await?;
    for i in 0..7 {
        engine
            .message(&me, &sid, json!(format!("message {i}")))
            .await?;
    }
    // Pages of three, following nextSessionSequence.
    let mut query = HistoryQuery::default().limit(3);
    loop {
        let page = engine.history(&me, &sid, &query).await?;
        let seqs: Vec<u64> = page
            .events
            .iter()
            .map(|e| e.position.session_sequence)
            .collect();
        println!("page {seqs:?} next {:?}", page.next);
        match page.next {
            // A cursor that does not advance (a damaged store) is an error, not a loop.
            Some(n) => {
                let from = query.after_session_sequence.unwrap_or(0);
                query = query.after_session_sequence(narad_store::row::advance(&sid, from, n)?);
            }
            None => break,
        }
    }
    // Attach, then a writer goes on; the follower sees only what is new.
    let mut attached = engine.attach(&me, &sid).await?;
    println!(
        "attached at {} with {} hydrate record(s), profiles {:?}",
        attached.capabilities.session_sequence,
        attached.hydrate.len(),
        attached.capabilities.active_profiles
    );
    let writer = {
        let (engine, sid, me) = (engine.clone(), sid.clone(), me.clone());
        tokio::spawn(async move {
            for i in 0..3 {
                engine
                    .message(&me, &sid, json!(format!("live {i}")))
                    .await?;
            }
            Ok::<(), narad_engine::EngineError>(())
        })
    };
    for _ in 0..3 {
        let ev = attached.follow.next().await?.ok_or("store closed")?;
        println!("live {}", ev.position.session_sequence);
    }
    writer.await??;
    drop(scratch);
    Ok(())
}
