//! Positions (§4.2, §9.3) and the workflow and run-tree ordering domains
//! (§4.2), and the events of inactive profiles, which take their place in
//! every domain they carry and change nothing else.

use super::super::identity::dedup;
use super::super::{fail, Applied, Session, R};
use crate::model::AuthorityEnvelope;

impl Session {
    /// §4.2, §9.3: `Some(Skipped)` for a position covered by a transcript
    /// snapshot and never delivered before; an error for a taken position
    /// or a gap; `None` for the next position.
    pub(in crate::checker) fn check_position(&self, env: &AuthorityEnvelope) -> R<Option<Applied>> {
        if env.session_sequence <= self.head {
            if env.session_sequence <= self.covered {
                return Ok(Some(Applied::Skipped));
            }
            return fail(
                "session_sequence_reused",
                "4.2",
                format!(
                    "sessionSequence {} is already taken by another event",
                    env.session_sequence
                ),
            );
        }
        if env.session_sequence != self.head + 1 {
            return fail(
                "session_sequence_gap",
                "4.2",
                format!(
                    "sessionSequence {} does not follow {}",
                    env.session_sequence, self.head
                ),
            );
        }
        Ok(None)
    }

    /// See [`super::super::Checker::ignored`]: checks first, then moves
    /// the session, workflow and run-tree heads (and a derived graph's
    /// cursor) past the event.
    pub(in crate::checker) fn ignored(&mut self, env: &AuthorityEnvelope, fp: u64) -> R<Applied> {
        if dedup(&self.seen, &env.event_id, fp)?.is_some() {
            return Ok(Applied::Skipped);
        }
        if let Some(skip) = self.check_position(env)? {
            return Ok(skip);
        }
        self.gate(crate::checker::closed_store::named(env, None))?;
        self.check_sequences(env)?;
        // §7.6: nothing of an interrupt's journal comes between it and its
        // pause, and an ignored event is never that pause.
        if self.x().pending.iter().any(|p| p.in_journal(env)) {
            return fail(
                "interrupt_pause_adjacency",
                "7.6",
                "an interrupt must be followed consecutively in its journal by the matching pause",
            );
        }
        if let (Some(root), Some(seq)) = (&env.root_run_id, env.sequence) {
            self.revive_graph(root);
            if let Some(g) = self.w_mut().derived.get_mut(root) {
                let packed = g.is_packed();
                g.with_live(root, |g| g.skip_to(seq));
                if packed {
                    g.pack(root);
                }
            }
        }
        self.advance_sequences(env);
        self.head = env.session_sequence;
        self.seen.insert(&env.event_id, fp);
        Ok(Applied::Skipped)
    }

    /// The workflow and run-tree domains (§4.2): each must take the next position.
    pub(super) fn check_sequences(&self, env: &AuthorityEnvelope) -> R {
        if let (Some(wf), Some(seq)) = (&env.workflow_id, env.workflow_sequence) {
            let head = self.x().workflow_heads.get(wf).copied().unwrap_or(0);
            if seq != head + 1 {
                return fail(
                    "workflow_sequence_gap",
                    "4.2",
                    format!("workflowSequence {seq} of {wf} does not follow {head}"),
                );
            }
        }
        if let (Some(root), Some(seq)) = (&env.root_run_id, env.sequence) {
            let head = self.run_head(root).unwrap_or(0);
            if seq != head + 1 {
                return fail(
                    "run_sequence_gap",
                    "4.2",
                    format!("sequence {seq} of run journal {root} does not follow {head}"),
                );
            }
        }
        Ok(())
    }

    pub(super) fn advance_sequences(&mut self, env: &AuthorityEnvelope) {
        if let (Some(wf), Some(seq)) = (&env.workflow_id, env.workflow_sequence) {
            self.x_mut().workflow_heads.insert(wf.clone(), seq);
        }
        if let (Some(root), Some(seq)) = (&env.root_run_id, env.sequence) {
            self.set_run_head(root, seq);
        }
    }
}
