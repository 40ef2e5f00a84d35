//! Quickstart: build an agent session's journal with the typed wire model,
//! validate every event as it is made, and print the journal as JSONL.
//!
//! `cargo run --example quickstart`
//!
//! The store and engine crates are not implemented yet (see the open
//! issues); until they land this example stops at the wire model: it writes
//! nothing to disk and needs no server.

use narad_core::model::{
    AuthorityEnvelope, AuthorityEvent, AuthorityPayload, Executor, Outcome, Privacy,
    ProgressStatus, ResumeMode, Role, Scope,
};
use narad_core::ValidationError;
use serde_json::json;

struct Journal {
    session_id: String,
    root_run_id: String,
    events: Vec<AuthorityEvent>,
}

impl Journal {
    fn append(
        &mut self,
        run_id: Option<&str>,
        payload: AuthorityPayload,
    ) -> Result<&AuthorityEvent, ValidationError> {
        let n = self.events.len() as u64 + 1;
        let run_seq = self
            .events
            .iter()
            .filter(|e| e.envelope.run_id.is_some())
            .count() as u64
            + 1;
        let envelope = AuthorityEnvelope {
            protocol_version: narad_core::PROTOCOL_VERSION.into(),
            event_id: format!("evt-{n}"),
            timestamp: format!("2026-08-05T00:00:{:02}Z", n.min(59)),
            session_id: self.session_id.clone(),
            session_sequence: n,
            workflow_id: None,
            workflow_sequence: None,
            root_run_id: run_id.map(|_| self.root_run_id.clone()),
            run_id: run_id.map(str::to_owned),
            sequence: run_id.map(|_| run_seq),
            parent_run_id: run_id
                .filter(|r| *r != self.root_run_id)
                .map(|_| self.root_run_id.clone()),
            parent_tool_call_id: None,
            node_id: None,
        };
        self.events.push(AuthorityEvent::new(envelope, payload)?);
        Ok(&self.events[self.events.len() - 1])
    }
}

fn main() -> Result<(), ValidationError> {
    let mut j = Journal {
        session_id: "session-quickstart".into(),
        root_run_id: "run-1".into(),
        events: Vec::new(),
    };
    let root = Some("run-1");
    use AuthorityPayload as P;
    j.append(
        None,
        P::MessageUserRecorded {
            message_id: "msg-user-1".into(),
            message_scope: Scope::Session,
            content: "Find the Narad spec".into(),
            attachment_ids: None,
        },
    )?;
    j.append(
        root,
        P::RunStarted {
            client_executor_id: None,
        },
    )?;
    j.append(
        root,
        P::ProgressRecorded {
            progress_id: "phase-search".into(),
            category: "phase".into(),
            label: "Searching".into(),
            detail: None,
            status: ProgressStatus::Active,
            privacy: Privacy::Public,
        },
    )?;
    j.append(
        root,
        P::InterruptRequested {
            interrupt_id: "int-1".into(),
            wait_id: "wait-1".into(),
            kind: "approval".into(),
            actions: vec!["approve".into(), "deny".into()],
            scope: None,
            expires_at: None,
            title: Some("Run web search?".into()),
            message: None,
            input: None,
        },
    )?;
    j.append(
        root,
        P::RunPaused {
            wait_id: "wait-1".into(),
            reason: "interrupt".into(),
            resume_mode: ResumeMode::Command,
            interrupt_id: Some("int-1".into()),
            retry_at: None,
            message: None,
        },
    )?;
    j.append(
        root,
        P::InterruptResolved {
            interrupt_id: "int-1".into(),
            wait_id: "wait-1".into(),
            decision: "approve".into(),
            reason: None,
            scope: None,
            members: None,
        },
    )?;
    j.append(
        root,
        P::RunResumed {
            wait_id: "wait-1".into(),
        },
    )?;
    j.append(
        root,
        P::ToolCallStarted {
            tool_call_id: "tool-1".into(),
            tool_name: "web.search".into(),
            executor: Executor::Backend,
            args: json!({"query": "narad v1"}),
        },
    )?;
    j.append(
        Some("run-1.1"),
        P::RunStarted {
            client_executor_id: None,
        },
    )?;
    j.append(
        Some("run-1.1"),
        P::RunFinished {
            artifact_ids: None,
            usage: None,
        },
    )?;
    j.append(
        root,
        P::ToolCallFinished {
            tool_call_id: "tool-1".into(),
            outcome: Outcome::Success,
            response: json!({"hits": 3}),
            code: None,
            message: None,
        },
    )?;
    j.append(
        root,
        P::MessageTextStarted {
            message_id: "msg-asst-1".into(),
            role: Role::Assistant,
            message_scope: Scope::Session,
        },
    )?;
    for delta in ["Found ", "three ", "results."] {
        j.append(
            None,
            P::MessageTextDelta {
                message_id: "msg-asst-1".into(),
                delta: delta.into(),
            },
        )?;
    }
    j.append(
        None,
        P::MessageTextCompleted {
            message_id: "msg-asst-1".into(),
        },
    )?;
    j.append(
        root,
        P::RunFinished {
            artifact_ids: None,
            usage: None,
        },
    )?;

    println!(
        "# journal of {} ({} events, each validated as built)",
        j.session_id,
        j.events.len()
    );
    for e in &j.events {
        println!("{}", String::from_utf8_lossy(e.wire.bytes()));
    }
    Ok(())
}
