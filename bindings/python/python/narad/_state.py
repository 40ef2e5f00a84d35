"""Typed session state (dataclasses) built from the engine's typed state,
and the typed results of the lifecycle reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

__all__ = ["Deleted", "Interrupt", "Message", "PruneReport", "Reasoning", "Run", "SessionEntry", "SessionPage",
           "SessionState", "ToolCall", "Workflow"]


@dataclass(frozen=True)
class Run:
    """One run: its tree, its lifecycle state and its open work."""

    run_id: str
    root_run_id: str
    parent_run_id: Optional[str]
    workflow_id: Optional[str]
    client_executor_id: Optional[str]
    state: str
    """``running``, ``paused``, ``finished``, ``error`` or ``cancelled``."""
    stop_requested: bool
    open_pause: Optional[str]
    open_interrupt: Optional[str]
    open_children: List[str] = field(default_factory=list)
    open_tool_calls: List[str] = field(default_factory=list)


@dataclass(frozen=True)
class ToolCall:
    """One tool call: its run and whether it is ``open`` or ``finished``."""

    tool_call_id: str
    run_id: str
    state: str


@dataclass(frozen=True)
class Interrupt:
    """An open interrupt on a run (``run_id``) or a workflow
    (``workflow_id``): its wait and offered actions."""

    interrupt_id: str
    wait_id: str
    run_id: Optional[str]
    actions: List[str]
    workflow_id: Optional[str] = None


@dataclass(frozen=True)
class Message:
    """One transcript message (user, assistant or system). ``content`` is
    the text as recorded; ``shown`` the text to display (``None`` when a
    redaction hides it)."""

    message_id: str
    role: str
    scope: str
    content: str
    completed: bool
    run_id: Optional[str] = None
    redacted: bool = False
    shown: Optional[str] = None


@dataclass(frozen=True)
class Reasoning:
    """One reasoning stream, joined to ``message_id`` when it names one."""

    reasoning_id: str
    message_id: Optional[str]
    content: str
    completed: bool


@dataclass(frozen=True)
class Workflow:
    """One workflow: terminal or not, its open runs and open pause."""

    workflow_id: str
    terminal: bool
    open_runs: List[str]
    active_top_run: Optional[str]
    open_pause: Optional[str]
    open_interrupt: Optional[str]


@dataclass(frozen=True)
class SessionState:
    """The reduced state of a session at ``head`` (its ``sessionSequence``).

    ``active`` is the session slot: ``{"run": id}``, ``{"workflow": id}`` or
    ``None``. ``documents`` maps a document key (``state:session``,
    ``ui:run:ID``, ...) to ``(revision, value)``.
    """

    session_id: str
    head: int
    runs: Dict[str, Run]
    tool_calls: Dict[str, ToolCall]
    open_interrupts: List[Interrupt]
    transcript: List[Message]
    active: Optional[Dict[str, str]]
    reasoning: List[Reasoning] = field(default_factory=list)
    workflows: Dict[str, Workflow] = field(default_factory=dict)
    documents: Dict[str, Tuple[int, Any]] = field(default_factory=dict)

    @classmethod
    def _from_native(cls, session_id: str, t: Tuple[Any, ...]) -> "SessionState":
        head, runs_t, tools_t, msgs_t, reasoning_t, wfs_t, slot, documents = t
        runs: Dict[str, Run] = {}
        interrupts: List[Interrupt] = []
        for (rid, root, parent, wf, ce, state, stop, pause, oi, children, tools) in runs_t:
            runs[rid] = Run(rid, root, parent, wf, ce, state, stop, pause, oi[0] if oi else None,
                            list(children), list(tools))
            if oi:
                interrupts.append(Interrupt(oi[0], oi[1], rid, list(oi[2])))
        workflows: Dict[str, Workflow] = {}
        for (wid, terminal, open_runs, top, pause, oi) in wfs_t:
            workflows[wid] = Workflow(wid, terminal, list(open_runs), top, pause, oi[0] if oi else None)
            if oi:
                interrupts.append(Interrupt(oi[0], oi[1], None, list(oi[2]), wid))
        return cls(
            session_id=session_id,
            head=head,
            runs=runs,
            tool_calls={tid: ToolCall(tid, run, st) for tid, run, st in tools_t},
            open_interrupts=interrupts,
            transcript=[Message(*m) for m in msgs_t],
            active=None if slot is None else {slot[0]: slot[1]},
            reasoning=[Reasoning(*r) for r in reasoning_t],
            workflows=workflows,
            documents=dict(documents),
        )


@dataclass(frozen=True)
class SessionEntry:
    """A session's index entry: ``status`` is ``idle``, ``running``,
    ``paused``, ``awaiting_input``, ``finished`` or ``archived``; times are
    RFC 3339; ``active`` is ``(kind, id)``; ``forked_from`` is
    ``(session_id, sequence)``."""

    session_id: str
    status: str
    workspace_id: Optional[str]
    created_at: Optional[str]
    updated_at: Optional[str]
    active: Optional[Tuple[str, str]]
    events: int
    labels: Dict[str, str]
    forked_from: Optional[Tuple[str, int]] = None


@dataclass(frozen=True)
class SessionPage:
    """One page of :meth:`narad.Engine.sessions`; pass ``next`` as ``after``."""

    sessions: List[SessionEntry]
    next: Optional[str] = None


@dataclass(frozen=True)
class Deleted:
    """What :meth:`narad.Engine.delete_session` removed, and what was open
    (non-empty only for a forced delete)."""

    session_id: str
    events: int
    records: int
    open_runs: List[str]
    open_workflows: List[str]
    open_interrupts: List[str]
    queued: int


@dataclass(frozen=True)
class PruneReport:
    """What one retention pass deleted (or, dry, would delete), and the
    sessions kept for their open work, with it named."""

    deleted: List[str]
    kept: List[Tuple[str, str]]
