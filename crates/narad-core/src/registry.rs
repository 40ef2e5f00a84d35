//! The type registry: every Narad v1 type, its record kind, its class and
//! the profile that defines it.

use std::fmt;

/// A protocol profile (§2.1). [`Profile::Core`] is always active.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Profile {
    /// The core event set and the §11 control messages.
    Core,
    /// `narad.workflow/v1`
    Workflow,
    /// `narad.conversation/v1`
    Conversation,
    /// `narad.attachments/v1`
    Attachments,
    /// `narad.artifacts/v1`
    Artifacts,
    /// `narad.state/v1`
    State,
    /// `narad.ui/v1`
    Ui,
    /// `narad.graph/v1`
    Graph,
    /// `narad.progress/v1`
    Progress,
    /// `narad.workspace/v1`
    Workspace,
    /// `narad.extensions/v1`
    Extensions,
    /// `narad.trace/v1`
    Trace,
    /// `narad.debug/v1`
    Debug,
}

impl Profile {
    /// Every optional profile (everything but [`Profile::Core`]).
    pub const OPTIONAL: [Profile; 12] = [
        Profile::Workflow,
        Profile::Conversation,
        Profile::Attachments,
        Profile::Artifacts,
        Profile::State,
        Profile::Ui,
        Profile::Graph,
        Profile::Progress,
        Profile::Workspace,
        Profile::Extensions,
        Profile::Trace,
        Profile::Debug,
    ];

    /// The profile id as negotiated on the wire, e.g. `narad.workflow/v1`.
    /// The core has the protocol id `narad/v1`.
    pub const fn id(self) -> &'static str {
        match self {
            Profile::Core => "narad/v1",
            Profile::Workflow => "narad.workflow/v1",
            Profile::Conversation => "narad.conversation/v1",
            Profile::Attachments => "narad.attachments/v1",
            Profile::Artifacts => "narad.artifacts/v1",
            Profile::State => "narad.state/v1",
            Profile::Ui => "narad.ui/v1",
            Profile::Graph => "narad.graph/v1",
            Profile::Progress => "narad.progress/v1",
            Profile::Workspace => "narad.workspace/v1",
            Profile::Extensions => "narad.extensions/v1",
            Profile::Trace => "narad.trace/v1",
            Profile::Debug => "narad.debug/v1",
        }
    }

    /// Looks a profile up by its wire id.
    ///
    /// ```
    /// use narad_core::Profile;
    /// assert_eq!(Profile::from_id("narad.graph/v1"), Some(Profile::Graph));
    /// assert_eq!(Profile::from_id("narad.nope/v1"), None);
    /// ```
    pub fn from_id(id: &str) -> Option<Profile> {
        std::iter::once(Profile::Core)
            .chain(Profile::OPTIONAL)
            .find(|p| p.id() == id)
    }

    /// The profile that owns a type *family* (its first segment, or the
    /// `*.custom` / `*.raw` suffix), used to decide whether an unknown type
    /// is ignorable (inactive profile) or must fail closed (active profile).
    pub fn of_family(ty: &str) -> Profile {
        if ty.ends_with(".custom") || ty.ends_with(".raw") {
            let head = ty.split('.').next().unwrap_or_default();
            if matches!(head, "session" | "workflow" | "run" | "node") {
                return Profile::Extensions;
            }
        }
        match ty.split('.').next().unwrap_or_default() {
            "workflow" => Profile::Workflow,
            "message" | "messages" | "reasoning" => Profile::Conversation,
            "attachment" => Profile::Attachments,
            "artifact" => Profile::Artifacts,
            "state" => Profile::State,
            "ui" | "view" => Profile::Ui,
            "graph" | "node" => Profile::Graph,
            "progress" => Profile::Progress,
            "workspace" => Profile::Workspace,
            "trace" => Profile::Trace,
            "debug" => Profile::Debug,
            _ => Profile::Core,
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// The four kinds of wire data (§2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordKind {
    /// Immutable journal facts.
    Authority,
    /// Scoped revision notifications.
    Watch,
    /// Derived, non-journal projections.
    Hydrate,
    /// Non-journal transport traffic.
    Control,
}

/// The class that fixes a record's required envelope fields (§5.1).
///
/// Some types choose their class from a field: `interrupt.*` by `scope`,
/// messages by `messageScope`, state and UI documents by `scope`. For those
/// the registry lists the default class and [`crate::Validator`] refines it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordClass {
    /// `sessionId`, `sessionSequence`.
    SessionAuthority,
    /// Session fields plus `workflowId`, `workflowSequence`.
    WorkflowAuthority,
    /// Session fields plus `rootRunId`, `runId`, `sequence`.
    RunTreeAuthority,
    /// `sessionId`, `revision`.
    SessionWatch,
    /// `sessionId`, `workflowId`, `revision`.
    WorkflowWatch,
    /// `sessionId`, `rootRunId`, `runId`, `revision`.
    RunWatch,
    /// `sessionId`, `workflowId`, `nodeId`, `revision`.
    NodeWatch,
    /// `workspaceId`, `revision`.
    WorkspaceWatch,
    /// Hydrate records: no `eventId`, no authority sequence.
    Hydrate,
    /// Control messages: no `eventId`, sequence or revision.
    Control,
}

impl RecordClass {
    /// The record kind this class belongs to.
    pub const fn kind(self) -> RecordKind {
        match self {
            Self::SessionAuthority | Self::WorkflowAuthority | Self::RunTreeAuthority => {
                RecordKind::Authority
            }
            Self::SessionWatch
            | Self::WorkflowWatch
            | Self::RunWatch
            | Self::NodeWatch
            | Self::WorkspaceWatch => RecordKind::Watch,
            Self::Hydrate => RecordKind::Hydrate,
            Self::Control => RecordKind::Control,
        }
    }
}

/// What the registry knows about one type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeInfo {
    /// The wire type, e.g. `run.started`.
    pub name: &'static str,
    /// Its (default) class.
    pub class: RecordClass,
    /// The profile that defines it.
    pub profile: Profile,
}

impl TypeInfo {
    /// The record kind.
    pub const fn kind(&self) -> RecordKind {
        self.class.kind()
    }
}

macro_rules! types {
    ($($name:literal => $class:ident, $profile:ident;)*) => {
        /// Every type Narad v1 defines, in spec order.
        pub const TYPES: &[TypeInfo] = &[
            $(TypeInfo { name: $name, class: RecordClass::$class, profile: Profile::$profile },)*
        ];
    };
}

types! {
    "run.started" => RunTreeAuthority, Core;
    "run.paused" => RunTreeAuthority, Core;
    "run.resumed" => RunTreeAuthority, Core;
    "run.stop.requested" => RunTreeAuthority, Core;
    "run.finished" => RunTreeAuthority, Core;
    "run.error" => RunTreeAuthority, Core;
    "run.cancelled" => RunTreeAuthority, Core;
    "interrupt.requested" => RunTreeAuthority, Core;
    "interrupt.resolved" => RunTreeAuthority, Core;
    "tool.call.started" => RunTreeAuthority, Core;
    "tool.call.finished" => RunTreeAuthority, Core;
    "session.revision" => SessionWatch, Core;
    "run.revision" => RunWatch, Core;
    "client.attached" => Control, Core;
    "server.heartbeat" => Control, Core;
    "client.heartbeat" => Control, Core;
    "client.tool.execute" => Control, Core;
    "client.tool.finish" => Control, Core;
    "workflow.started" => WorkflowAuthority, Workflow;
    "workflow.paused" => WorkflowAuthority, Workflow;
    "workflow.resumed" => WorkflowAuthority, Workflow;
    "workflow.step.started" => WorkflowAuthority, Workflow;
    "workflow.edge.taken" => WorkflowAuthority, Workflow;
    "workflow.finished" => WorkflowAuthority, Workflow;
    "workflow.error" => WorkflowAuthority, Workflow;
    "workflow.cancelled" => WorkflowAuthority, Workflow;
    "workflow.revision" => WorkflowWatch, Workflow;
    "message.user.recorded" => SessionAuthority, Conversation;
    "message.text.started" => SessionAuthority, Conversation;
    "message.text.delta" => SessionAuthority, Conversation;
    "message.text.completed" => SessionAuthority, Conversation;
    "message.redacted" => SessionAuthority, Conversation;
    "reasoning.started" => SessionAuthority, Conversation;
    "reasoning.delta" => SessionAuthority, Conversation;
    "reasoning.completed" => SessionAuthority, Conversation;
    "messages.snapshot" => Hydrate, Conversation;
    "attachment.added" => SessionAuthority, Attachments;
    "attachment.ready" => SessionAuthority, Attachments;
    "attachment.failed" => SessionAuthority, Attachments;
    "attachment.removed" => SessionAuthority, Attachments;
    "artifact.added" => SessionAuthority, Artifacts;
    "artifact.ready" => SessionAuthority, Artifacts;
    "artifact.failed" => SessionAuthority, Artifacts;
    "state.snapshot" => SessionAuthority, State;
    "state.delta" => SessionAuthority, State;
    "state.compacted" => SessionAuthority, State;
    "ui.state.snapshot" => SessionAuthority, Ui;
    "ui.state.delta" => SessionAuthority, Ui;
    "view.opened" => SessionAuthority, Ui;
    "view.updated" => SessionAuthority, Ui;
    "view.closed" => SessionAuthority, Ui;
    "graph.snapshot" => Hydrate, Graph;
    "graph.delta" => Hydrate, Graph;
    "node.revision" => NodeWatch, Graph;
    "progress.recorded" => RunTreeAuthority, Progress;
    "workspace.revision" => WorkspaceWatch, Workspace;
    "session.created" => WorkspaceWatch, Workspace;
    "session.updated" => WorkspaceWatch, Workspace;
    "session.archived" => WorkspaceWatch, Workspace;
    "session.custom" => SessionAuthority, Extensions;
    "session.raw" => SessionAuthority, Extensions;
    "workflow.custom" => WorkflowAuthority, Extensions;
    "workflow.raw" => WorkflowAuthority, Extensions;
    "run.custom" => RunTreeAuthority, Extensions;
    "run.raw" => RunTreeAuthority, Extensions;
    "node.custom" => WorkflowAuthority, Extensions;
    "node.raw" => WorkflowAuthority, Extensions;
    "trace.span.started" => SessionAuthority, Trace;
    "trace.span.completed" => SessionAuthority, Trace;
    "trace.event" => SessionAuthority, Trace;
    "debug.log" => SessionAuthority, Debug;
    "debug.snapshot" => SessionAuthority, Debug;
}

/// Looks a type up.
///
/// ```
/// use narad_core::registry::{lookup, RecordKind};
/// use narad_core::Profile;
/// let info = lookup("graph.delta").unwrap();
/// assert_eq!(info.kind(), RecordKind::Hydrate);
/// assert_eq!(info.profile, Profile::Graph);
/// assert!(lookup("graph.unknown").is_none());
/// ```
pub fn lookup(ty: &str) -> Option<&'static TypeInfo> {
    TYPES.iter().find(|t| t.name == ty)
}

/// A set of active profiles. [`Profile::Core`] is always a member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProfileSet(u16);

impl ProfileSet {
    /// Only the core.
    pub const fn core() -> Self {
        Self(1)
    }

    /// Every profile.
    pub fn all() -> Self {
        Profile::OPTIONAL
            .iter()
            .fold(Self::core(), |s, p| s.with(*p))
    }

    /// This set plus `p`.
    #[must_use]
    pub const fn with(self, p: Profile) -> Self {
        Self(self.0 | (1 << p as u16))
    }

    /// Whether `p` is active.
    pub const fn contains(self, p: Profile) -> bool {
        self.0 & (1 << p as u16) != 0
    }

    /// The active profiles, core first.
    pub fn iter(self) -> impl Iterator<Item = Profile> {
        std::iter::once(Profile::Core)
            .chain(Profile::OPTIONAL)
            .filter(move |p| self.contains(*p))
    }

    /// Parses a comma-separated list of profile ids (or `all`).
    ///
    /// ```
    /// use narad_core::{Profile, ProfileSet};
    /// let set = ProfileSet::parse("narad.workflow/v1,narad.progress/v1").unwrap();
    /// assert!(set.contains(Profile::Workflow) && set.contains(Profile::Core));
    /// assert!(!set.contains(Profile::Graph));
    /// assert!(ProfileSet::parse("bogus").is_err());
    /// ```
    pub fn parse(list: &str) -> Result<Self, String> {
        if list.trim() == "all" {
            return Ok(Self::all());
        }
        list.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .try_fold(Self::core(), |set, id| {
                Profile::from_id(id)
                    .map(|p| set.with(p))
                    .ok_or_else(|| format!("unknown profile `{id}`"))
            })
    }
}

impl Default for ProfileSet {
    fn default() -> Self {
        Self::all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_is_listed_once_and_belongs_to_its_family() {
        for (i, t) in TYPES.iter().enumerate() {
            assert!(
                TYPES[i + 1..].iter().all(|o| o.name != t.name),
                "{} twice",
                t.name
            );
            // session.created/updated/archived share the `session.` family with
            // core watch events; the registry, not the family, decides for them.
            if !matches!(
                t.name,
                "session.created" | "session.updated" | "session.archived"
            ) {
                assert_eq!(Profile::of_family(t.name), t.profile, "{}", t.name);
            }
        }
    }
}
