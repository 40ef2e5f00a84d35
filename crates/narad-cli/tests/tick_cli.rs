//! `narad tick` through the real binary on a real SQLite file: it fires
//! what is due on the system clock, once, in a session no process holds.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use narad_engine::{
    AllowAll, Engine, EngineConfig, Interrupt, InterruptScope, ManualClock, NewSession, Principal,
    RandomIds, StartRun, Started,
};
use narad_store::Store;
use narad_store_sqlite::SqliteStore;
use serde_json::Value;

fn tick(url: &str, json: bool) -> (i32, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_narad"));
    c.args(["tick", "--store", url]);
    if json {
        c.arg("--json");
    }
    let out = c.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// An interrupt that expired a minute ago (requested two minutes ago, on
/// a clock set back), and a pause whose `retryAt` is an hour ahead.
async fn store_with_timers(path: &std::path::Path) -> (String, String) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let e = Engine::with_host(
        SqliteStore::open(path).await.unwrap(),
        Arc::new(ManualClock::at_unix(now - 120)),
        Arc::new(RandomIds),
        Arc::new(AllowAll),
        EngineConfig::default(),
    );
    let me = Principal::new("test");
    let mut sids = Vec::new();
    for _ in 0..2 {
        let sid = e.create_session(&me, NewSession::default()).await.unwrap();
        let Started::Running(run) = e.start_run(&me, &sid, StartRun::default()).await.unwrap()
        else {
            panic!("not started")
        };
        sids.push((sid, run));
    }
    let (sid, run) = &sids[0];
    let expires = UNIX_EPOCH + Duration::from_secs(now - 60);
    let interrupt = Interrupt {
        scope: InterruptScope::Run(run.clone()),
        kind: "approval".into(),
        actions: vec!["approve".into()],
        input: None,
        expires_at: Some(expires.into()),
        title: None,
    };
    let (iid, _) = e.request_interrupt(&me, sid, interrupt).await.unwrap();
    let (later, run) = &sids[1];
    let hour = UNIX_EPOCH + Duration::from_secs(now + 3600);
    e.pause_run_until(&me, later, run, "rate_limited", hour)
        .await
        .unwrap();
    (sid.clone(), iid)
}

#[test]
fn tick_fires_what_is_due_once_and_exits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tick.sqlite");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (sid, iid) = rt.block_on(store_with_timers(&path));
    let url = format!("sqlite:{}", path.display());

    let (code, out) = tick(&url, false);
    assert_eq!(code, 0, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    let fields: Vec<&str> = lines[0].split('\t').collect();
    assert_eq!(
        &fields[..4],
        ["fired", "interrupt", sid.as_str(), iid.as_str()]
    );
    assert_eq!(lines[1], "1 fired, 0 dropped, 0 refused");

    // Nothing is due any more; the pause an hour ahead stays.
    let (code, out) = tick(&url, true);
    assert_eq!(code, 0, "{out}");
    let objs: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(objs.len(), 1, "{out}");
    assert_eq!(objs[0]["summary"]["fired"], 0);

    let events = rt.block_on(async {
        let s = SqliteStore::open(&path).await.unwrap();
        s.read_session(&sid, 0, 100).await.unwrap().events
    });
    let types: Vec<String> = events
        .iter()
        .map(|e| {
            let v: Value = serde_json::from_slice(&e.bytes).unwrap();
            format!(
                "{}:{}",
                v["type"].as_str().unwrap(),
                v["decision"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        types
            .iter()
            .filter(|t| *t == "interrupt.resolved:expired")
            .count(),
        1,
        "{types:?}"
    );
    assert_eq!(types.last().map(String::as_str), Some("run.resumed:"));
}
