//! Session-scope commands: create a session, record a user message,
//! append an event of any profile, start a workflow.

use narad_store::{Batch, Expect, SideSpace, Store, StoreError};
use serde_json::{json, Value};

use crate::command_loop::{side, strip_nulls, Plan};
use crate::command_types::{EventScope, NewSession};
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::{Action, Principal};
use crate::idempotency::write_record;
use crate::journal::{At, Draft, Meta};

impl<S: Store + 'static> Engine<S> {
    /// Creates a session with its profiles fixed.
    pub async fn create_session(
        &self,
        p: &Principal,
        new: NewSession,
    ) -> Result<String, EngineError> {
        self.create_session_labeled(p, new, Default::default())
            .await
    }

    /// Creates a session with host labels (the session index filters on
    /// them; [`Engine::set_labels`] changes them later), in the batch that
    /// creates it.
    pub async fn create_session_labeled(
        &self,
        p: &Principal,
        new: NewSession,
        labels: std::collections::BTreeMap<String, String>,
    ) -> Result<String, EngineError> {
        let session = new.session_id.as_deref().unwrap_or("").to_owned();
        crate::telemetry::traced("create_session", &session, async {
            self.authorize(p, Action::CreateSession)?;
            let create_key = self.keyed.as_ref().map(|k| k.create_key());
            if let Some(key) = &create_key {
                if let Some(sid) = self.created(p, key).await? {
                    return Ok(sid);
                }
            }
            let sid = new
                .session_id
                .unwrap_or_else(|| self.inner.ids.next_id("session"));
            if sid.is_empty() {
                return Err(EngineError::InvalidCommand("empty session id".into()));
            }
            let meta = Meta {
                profiles: new.profiles.unwrap_or_default(),
                workspace_id: new.workspace_id,
                created_at: Some(crate::host::timestamp(self.inner.clock.now())),
                labels,
                archived: false,
                origin: None,
                create_key: self.keyed.as_ref().map(|k| k.key.clone()),
            };
            let entry = crate::index::SessionEntry::of(
                &crate::journal::Journal::new(&sid, meta.clone()),
                &meta,
                0,
                None,
            );
            let mut batch = Batch {
                session_id: sid.clone(),
                expected_head: 0,
                side: vec![
                    side(SideSpace::Session, &sid, Expect::Absent, meta.encode()),
                    entry.write()?,
                ],
                ..Batch::default()
            };
            if let (Some(keyed), Some(key)) = (self.keyed.as_deref(), &create_key) {
                let result = Value::from(sid.clone());
                batch.side.push(write_record(
                    keyed,
                    key.clone(),
                    &sid,
                    &[],
                    Vec::new(),
                    &result,
                )?);
            }
            match self
                .append_watch(batch, meta.workspace_id.as_deref(), "session.created", &sid)
                .await
            {
                Ok(_) => Ok(sid),
                // A session that has events but no record of its creation
                // (appended to the store by another tool) fails the head
                // guard before its side record: it exists all the same.
                Err(EngineError::Store(
                    StoreError::SideConflict | StoreError::HeadConflict { .. },
                )) => {
                    // Another call with the same key may have won.
                    if let Some(key) = &create_key {
                        if let Some(sid) = self.created(p, key).await? {
                            return Ok(sid);
                        }
                    }
                    Err(EngineError::SessionExists { session_id: sid })
                }
                Err(e) => Err(e),
            }
        })
        .await
    }

    /// The session a keyed `create_session` created, if its key is recorded.
    async fn created(&self, p: &Principal, key: &str) -> Result<Option<String>, EngineError> {
        match self.recorded(p, key, None).await? {
            None => Ok(None),
            Some((v, _)) => match v {
                Value::String(sid) => Ok(Some(sid)),
                _ => Err(EngineError::CorruptRecord {
                    space: "idempotency",
                    key: key.to_owned(),
                }),
            },
        }
    }

    /// The `message` command: `message.user.recorded` at session scope.
    /// `content` is the text (`&str`, `String`, or a JSON string value).
    /// Returns the `messageId`.
    ///
    /// ```
    /// # async fn demo(engine: narad_engine::Engine<narad_store_redb::RedbStore>,
    /// #   me: narad_engine::Principal, sid: String) -> Result<(), narad_engine::EngineError> {
    /// let id = engine.message(&me, &sid, "Find me a flight to Lisbon.").await?;
    /// # Ok(()) }
    /// ```
    pub async fn message(
        &self,
        p: &Principal,
        session_id: &str,
        content: impl Into<Value>,
    ) -> Result<String, EngineError> {
        let content: Value = content.into();
        let id = self.inner.ids.next_id("msg");
        let (id, _) = self
            .command_keyed(p, session_id, |_| {
                Ok(Plan::of(
                    vec![Draft::new(
                        "message.user.recorded",
                        At::Session,
                        json!({"messageId": id, "messageScope": "session", "content": content}),
                    )],
                    id.clone(),
                ))
            })
            .await?;
        Ok(id)
    }

    /// Starts a workflow (the session slot, §3.1).
    pub async fn start_workflow(
        &self,
        p: &Principal,
        session_id: &str,
        workflow_id: Option<String>,
        default_client_executor_id: Option<String>,
    ) -> Result<String, EngineError> {
        let wf = workflow_id.unwrap_or_else(|| self.inner.ids.next_id("workflow"));
        let body = strip_nulls(json!({ "defaultClientExecutorId": default_client_executor_id }));
        let Value::Object(body) = body else {
            return Err(EngineError::InvalidCommand("workflow body".into()));
        };
        let (wf, _) = self
            .append_body_with(
                p,
                session_id,
                "workflow.started",
                &EventScope::Workflow(wf.clone()),
                body,
                wf.clone(),
            )
            .await?;
        Ok(wf)
    }
}
