//! Retention: deleting sessions past a policy's limits, through
//! [`Engine::delete_session`], found through the session index (no
//! journal is read to choose them).

use std::collections::BTreeMap;
use std::time::Duration;

use narad_store::Store;

use crate::engine::Engine;
use crate::error::EngineError;
use crate::host::{timestamp, Principal};
use crate::index::{SessionEntry, SessionQuery, SessionStatus};

/// Which sessions retention deletes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RetentionPolicy {
    /// Delete sessions whose last activity is older than this.
    pub max_idle: Option<Duration>,
    /// Keep at most this many sessions per workspace (the most recently
    /// active); sessions without a workspace count as one group.
    pub max_sessions_per_workspace: Option<usize>,
    /// Delete sessions with open work too (an active execution, an open
    /// interrupt, a queued start); otherwise they are kept.
    pub force: bool,
}

/// What one retention pass did (or, dry, would do).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PruneReport {
    /// Sessions deleted (or, dry, to delete).
    pub deleted: Vec<String>,
    /// Sessions past the limits kept for their open work, with it named.
    pub kept: Vec<(String, String)>,
}

impl<S: Store + 'static> Engine<S> {
    /// Applies `policy` once: every session past its limits is deleted
    /// (with `dry_run`, only listed). Sessions with open work are kept
    /// unless `policy.force`; a session `p` may not delete is left.
    pub async fn prune(
        &self,
        p: &Principal,
        policy: &RetentionPolicy,
        dry_run: bool,
    ) -> Result<PruneReport, EngineError> {
        let mut all: Vec<SessionEntry> = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = self
                .sessions(p, &SessionQuery::default(), after.as_deref(), 1024)
                .await?;
            all.extend(page.sessions);
            match page.next {
                Some(n) => after = Some(n),
                None => break,
            }
        }
        let cutoff = policy
            .max_idle
            .and_then(|d| self.inner.clock.now().checked_sub(d))
            .map(timestamp);
        let mut doomed: Vec<&SessionEntry> = Vec::new();
        if let Some(cut) = &cutoff {
            doomed.extend(
                all.iter()
                    .filter(|e| e.updated_at.as_deref().is_some_and(|u| u < cut.as_str())),
            );
        }
        if let Some(max) = policy.max_sessions_per_workspace {
            let mut groups: BTreeMap<Option<&str>, Vec<&SessionEntry>> = BTreeMap::new();
            for e in &all {
                groups.entry(e.workspace_id.as_deref()).or_default().push(e);
            }
            for (_, mut g) in groups {
                // Newest first; ties by id so the choice is stable.
                g.sort_by(|a, b| {
                    (&b.updated_at, &a.session_id).cmp(&(&a.updated_at, &b.session_id))
                });
                doomed.extend(g.into_iter().skip(max));
            }
        }
        doomed.sort_by(|a, b| a.session_id.cmp(&b.session_id));
        doomed.dedup_by(|a, b| a.session_id == b.session_id);
        let mut report = PruneReport::default();
        for e in doomed {
            let busy = matches!(
                e.status,
                SessionStatus::Running | SessionStatus::Paused | SessionStatus::AwaitingInput
            );
            if busy && !policy.force {
                report
                    .kept
                    .push((e.session_id.clone(), format!("status {}", e.status.name())));
                continue;
            }
            if dry_run {
                report.deleted.push(e.session_id.clone());
                continue;
            }
            match self.delete_session(p, &e.session_id, policy.force).await {
                Ok(_) => report.deleted.push(e.session_id.clone()),
                Err(EngineError::OpenWork { open }) => {
                    report.kept.push((e.session_id.clone(), open))
                }
                Err(EngineError::NotAuthorized) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(report)
    }

    /// Sets the policy the timer driver applies on each pass
    /// ([`Engine::fire_due_timers`]); `None` turns it off.
    pub fn set_retention(&self, policy: Option<RetentionPolicy>) {
        let mut slot = match self.inner.retention.lock() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        };
        *slot = policy;
    }

    /// The policy the timer driver applies, if any.
    pub(crate) fn retention(&self) -> Option<RetentionPolicy> {
        match self.inner.retention.lock() {
            Ok(s) => s.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}
