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
                    if let Some(c) = parse_notice(&payload) {
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

fn parse_notice(p: &str) -> Option<Commit> {
    let mut parts = p.splitn(3, '\t');
    let kind = parts.next()?;
    let n: u64 = parts.next()?.parse().ok()?;
    let id: Arc<str> = Arc::from(parts.next()?);
    match kind {
        "s" => Some(Commit::Session {
            session_id: id,
            head: n,
        }),
        "w" => Some(Commit::Workspace {
            workspace_id: id,
            revision: n,
        }),
        _ => None,
    }
}
