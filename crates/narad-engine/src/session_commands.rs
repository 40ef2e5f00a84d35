//! Session-scope commands: create a session, record a user message,
//! append an event of any profile, start a workflow.

use narad_store::{Batch, Expect, SideSpace, Store, StoreError, StoredEvent};
use serde_json::{json, Value};

use crate::command_loop::{side, strip_nulls, Plan};
use crate::command_types::{EventScope, NewSession};
use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::{Action, Principal};
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
        self.authorize(p, Action::CreateSession)?;
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
        };
        let entry = crate::index::SessionEntry::of(
            &crate::journal::Journal::new(&sid, meta.clone()),
            &meta,
            0,
            None,
        );
        let batch = Batch {
            session_id: sid.clone(),
            expected_head: 0,
            side: vec![
                side(SideSpace::Session, &sid, Expect::Absent, meta.encode()),
                entry.write()?,
            ],
            ..Batch::default()
        };
        match self
            .append_watch(batch, meta.workspace_id.as_deref(), "session.created", &sid)
            .await
        {
            Ok(_) => Ok(sid),
            Err(EngineError::Store(StoreError::SideConflict)) => Err(EngineError::SessionExists),
            Err(e) => Err(e),
        }
    }

    /// The `message` command: `message.user.recorded` at session scope.
    /// Returns the `messageId`.
    pub async fn message(
        &self,
        p: &Principal,
        session_id: &str,
        content: Value,
    ) -> Result<String, EngineError> {
        let id = self.inner.ids.next_id("msg");
        self.command(p, session_id, |_| {
            Ok(Plan::of(
                vec![Draft::new(
                    "message.user.recorded",
                    At::Session,
                    json!({"messageId": id, "messageScope": "session", "content": content}),
                )],
                (),
            ))
        })
        .await?;
        Ok(id)
    }

    /// Appends one event of any profile (conversation, attachments,
    /// artifacts, state, ui, view, progress, extensions, trace, debug,
    /// workflow steps and edges, ...). The engine fills the envelope and
    /// every sequence; `body` holds the type's own fields. The checker
    /// refuses it if it breaks a rule; an inactive profile is refused.
    pub async fn append(
        &self,
        p: &Principal,
        session_id: &str,
        event_type: &str,
        scope: EventScope,
        body: Value,
    ) -> Result<StoredEvent, EngineError> {
        let Some(info) = narad_core::registry::lookup(event_type) else {
            return Err(EngineError::InvalidCommand(format!(
                "unknown event type `{event_type}`"
            )));
        };
        if !body.is_object() {
            return Err(EngineError::InvalidCommand("body must be an object".into()));
        }
        let (_, mut events) = self
            .command(p, session_id, |j| {
                let at = match &scope {
                    EventScope::Session => At::Session,
                    EventScope::Run(r) => j.run_at(r)?,
                    EventScope::Workflow(w) => At::Workflow(w.clone()),
                };
                Ok(Plan::of(vec![Draft::new(info.name, at, body.clone())], ()))
            })
            .await?;
        events
            .pop()
            .ok_or_else(|| EngineError::InvalidCommand("nothing appended".into()))
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
        self.append(
            p,
            session_id,
            "workflow.started",
            EventScope::Workflow(wf.clone()),
            strip_nulls(json!({ "defaultClientExecutorId": default_client_executor_id })),
        )
        .await?;
        Ok(wf)
    }
}
