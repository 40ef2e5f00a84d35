"""Typed session state (dataclasses) built from the engine's typed state,
and the typed results of the lifecycle reads."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, Dict, List, Optional, Tuple

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
class TranscriptMessage:
    """One entry of the primary transcript view (§9.2,
    :meth:`narad.Engine.transcript_view`): ``text`` is what to show (a
    redaction's replacement; a hidden message is left out), ``reasoning``
    the reasoning texts joined to it (empty unless asked for)."""

    message_id: str
    role: str
    text: str
    completed: bool
    run_id: Optional[str] = None
    reasoning: List[str] = field(default_factory=list)

    @classmethod
    async def _list(cls, t: Any) -> "List[TranscriptMessage]":
        """The view from the extension's ``NativeTranscript``, slice by
        slice, the event loop running between slices."""
        out: List[TranscriptMessage] = []
        async for part in _slices(t.messages):
            out.extend(cls(mid, role, text, done, run, list(r)) for mid, role, text, done, run, r in part)
        return out


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
    async def _from_native(cls, session_id: str, t: Any) -> "SessionState":
        """Builds the state from the extension's ``NativeState`` slice by
        slice, letting the event loop run between slices (a long session's
        state is many slices: 512 items, or about 256 KiB of text, each)."""
        runs: Dict[str, Run] = {}
        interrupts: List[Interrupt] = []
        async for part in _slices(t.runs):
            for (rid, root, parent, wf, ce, state, stop, pause, oi, children, tools) in part:
                runs[rid] = Run(rid, root, parent, wf, ce, state, stop, pause, oi[0] if oi else None,
                                list(children), list(tools))
                if oi:
                    interrupts.append(Interrupt(oi[0], oi[1], rid, list(oi[2])))
        workflows: Dict[str, Workflow] = {}
        async for part in _slices(t.workflows):
            for (wid, terminal, open_runs, top, pause, oi) in part:
                workflows[wid] = Workflow(wid, terminal, list(open_runs), top, pause, oi[0] if oi else None)
                if oi:
                    interrupts.append(Interrupt(oi[0], oi[1], None, list(oi[2]), wid))
        tool_calls: Dict[str, ToolCall] = {}
        async for part in _slices(t.tools):
            tool_calls.update((tid, ToolCall(tid, run, st)) for tid, run, st in part)
        transcript: List[Message] = []
        async for part in _slices(t.messages):
            transcript.extend(Message(*m) for m in part)
        reasoning: List[Reasoning] = []
        async for part in _slices(t.reasoning):
            reasoning.extend(Reasoning(*r) for r in part)
        slot = t.slot
        return cls(
            session_id=session_id,
            head=t.head,
            runs=runs,
            tool_calls=tool_calls,
            open_interrupts=interrupts,
            transcript=transcript,
            active=None if slot is None else {slot[0]: slot[1]},
            reasoning=reasoning,
            workflows=workflows,
            documents=t.documents(),
        )


async def _slices(page: Callable[[int], Tuple[List[Any], Optional[int]]]) -> AsyncIterator[List[Any]]:
    """The slices ``page(at)`` returns, in turn. The loop runs between two
    slices of one list, so between two of its turns at most one slice of
    each list (runs, workflows, tool calls, messages, reasoning) is built."""
    at: Optional[int] = 0
    while at is not None:
        items, at = page(at)
        yield items
        if at is not None:
            await asyncio.sleep(0)


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
