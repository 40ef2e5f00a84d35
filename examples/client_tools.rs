//! Client tools: the host engine and a client executor in one process,
//! joined by a channel standing in for the transport. The executor runs the
//! tool only from `client.tool.execute`, records acceptance durably first,
//! and answers a duplicate delivery with its recorded finish.
//!
//! `cargo run --example client_tools` (no `--store`: it runs on private
//! temporary stores, removed at exit)

use narad_engine::executor::{ClientExecutor, Handled};
use narad_engine::{Engine, NewSession, Principal, StartRun, Started, Terminal};
use narad_store_redb::RedbStore;
use serde_json::json;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    narad_examples::refuse_store_flag("client_tools");
    let scratch = narad_examples::Scratch::new("narad-client")?;
    let host = Engine::new(RedbStore::open(scratch.join("host.redb")).await?);
    let me = Principal::new("host");

    // The client process: its own ledger file, its executor id.
    let (to_client, mut client_inbox) = tokio::sync::mpsc::channel::<bytes::Bytes>(16);
    let (to_host, mut host_inbox) = tokio::sync::mpsc::channel::<bytes::Bytes>(16);
    let ledger = RedbStore::open(scratch.join("ledger.redb")).await?;
    let client = tokio::spawn(async move {
        let exec = ClientExecutor::new(ledger, "desktop-1");
        while let Some(msg) = client_inbox.recv().await {
            let handled = exec
                .handle(&msg, |name, args| async move {
                    eprintln!("client: running {name} {args}");
                    ("success", json!({"opened": true}))
                })
                .await;
            if let Ok(Handled::Finish(finish)) = handled {
                if to_host.send(finish).await.is_err() {
                    break;
                }
            }
        }
    });

    // The host: attach the executor, bind a run to it, start a client call.
    host.attach_client(&me, "desktop-1").await?;
    let sid = host.create_session(&me, NewSession::default()).await?;
    let start = StartRun {
        client_executor_id: Some("desktop-1".into()),
        ..StartRun::default()
    };
    let Started::Running(run) = host.start_run(&me, &sid, start).await? else {
        return Err("slot busy".into());
    };
    host.start_client_tool_call(&me, &sid, &run, "open.file", json!({"path": "README.md"}))
        .await?;

    // The transport: drain the outbox to the client — the execute twice,
    // as a flaky network would — and bring finishes back.
    let outbox = host.client_outbox("desktop-1");
    while let Some(m) = outbox.try_next() {
        to_client.send(m.clone()).await?;
        if m.windows(19).any(|w| w == b"client.tool.execute") {
            to_client.send(m).await?;
        }
    }
    for _ in 0..2 {
        let finish = host_inbox.recv().await.ok_or("client gone")?;
        eprintln!("host: {:?}", host.client_finish(&me, &finish).await?);
    }
    host.end_run(
        &me,
        &sid,
        &run,
        Terminal::Finished {
            usage: None,
            artifact_ids: vec![],
        },
    )
    .await?;
    drop(to_client);
    client.await?;
    narad_examples::print_journal(host.store(), &sid).await?;
    Ok(())
}
