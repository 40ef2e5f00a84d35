//! The commit listener: one `LISTEN` connection per store that turns
//! `NOTIFY` payloads into [`Commit`] notices.

use std::sync::Arc;
use std::time::Duration;

use narad_store::group::Announcer;
use narad_store::Commit;
use tokio_postgres::NoTls;

/// Hears `NOTIFY narad_<schema>` and announces each commit; reconnects
/// with a bounded backoff (100 ms doubling to 5 s).
pub(crate) async fn listen(
    config: tokio_postgres::Config,
    schema: String,
    announcer: Announcer,
    listening: tokio::sync::oneshot::Sender<()>,
) {
    use futures_util::StreamExt;
    let mut listening = Some(listening);
    let mut backoff = Duration::from_millis(100);
    loop {
        if let Ok((client, mut connection)) = config.connect(NoTls).await {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            let pump = tokio::spawn(async move {
                let mut stream =
                    futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
                while let Some(msg) = stream.next().await {
                    match msg {
                        Ok(tokio_postgres::AsyncMessage::Notification(n)) => {
                            if tx.send(n.payload().to_owned()).is_err() {
                                break;
                            }
                        }
                        Ok(_) => {}
                        Err(_) => break,
                    }
                }
            });
            if client
                .batch_execute(&format!("LISTEN narad_{schema}"))
                .await
                .is_ok()
            {
                backoff = Duration::from_millis(100);
                if let Some(l) = listening.take() {
                    let _ = l.send(());
                }
                while let Some(payload) = rx.recv().await {
                    let commit = match parse_notice(&payload) {
                        Some(Heard::Commit(c)) => Some(c),
                        Some(Heard::Keyed(kind, n, key)) => {
                            named(&client, &schema, kind, n, &key).await
                        }
                        None => None,
                    };
                    if let Some(c) = commit {
                        announcer.announce(c);
                    }
                }
            }
            pump.abort();
        }
        if listening.is_none() {
            tracing::warn!(
                schema = schema.as_str(),
                backoff_ms = backoff.as_millis() as u64,
                "postgres LISTEN connection lost; reconnecting"
            );
            metrics::counter!("narad_postgres_listen_reconnects_total").increment(1);
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}

/// A notice as heard: a commit naming its id, or one naming the id's index
/// key (an id a payload cannot carry: see `PostgresStore::notify`).
#[derive(Debug, PartialEq)]
enum Heard {
    Commit(Commit),
    /// `s` or `w`, the head or revision, and the key's bytes.
    Keyed(char, u64, Vec<u8>),
}

fn parse_notice(p: &str) -> Option<Heard> {
    let mut parts = p.splitn(3, '\t');
    let kind = parts.next()?;
    let n: u64 = parts.next()?.parse().ok()?;
    let rest = parts.next()?;
    match kind {
        "s" | "w" => Some(Heard::Commit(commit(kind == "s", n, Arc::from(rest)))),
        "S" | "W" => Some(Heard::Keyed(
            if kind == "S" { 's' } else { 'w' },
            n,
            hex(rest)?,
        )),
        _ => None,
    }
}

fn commit(session: bool, n: u64, id: Arc<str>) -> Commit {
    if session {
        Commit::Session {
            session_id: id,
            head: n,
        }
    } else {
        Commit::Workspace {
            workspace_id: id,
            revision: n,
        }
    }
}

fn hex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The commit of the session or workspace whose index key is `key`, read
/// on the listening connection; `None` if it is gone (deleted since) or
/// the read failed (as a lost notice: readers re-read heads on a gap).
async fn named(
    client: &tokio_postgres::Client,
    schema: &str,
    kind: char,
    n: u64,
    key: &[u8],
) -> Option<Commit> {
    let q = match kind {
        's' => format!("SELECT session FROM {schema}.heads WHERE {schema}.k(session) = $1"),
        _ => format!("SELECT workspace FROM {schema}.watch_heads WHERE {schema}.k(workspace) = $1"),
    };
    let row = client.query_opt(&q, &[&key]).await.ok()??;
    let id = String::from_utf8(row.try_get::<_, Vec<u8>>(0).ok()?).ok()?;
    Some(commit(kind == 's', n, Arc::from(id)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_parse_by_id_or_by_key() {
        assert_eq!(
            parse_notice("s\t7\tsess\tion"),
            Some(Heard::Commit(commit(true, 7, Arc::from("sess\tion"))))
        );
        assert_eq!(
            parse_notice("W\t3\t00ff41"),
            Some(Heard::Keyed('w', 3, vec![0, 255, 0x41]))
        );
        for bad in ["S\t3\t0", "S\t3\tzz", "x\t1\ta", "s\tnope\ta", "s\t1"] {
            assert_eq!(parse_notice(bad), None, "{bad}");
        }
    }
}
