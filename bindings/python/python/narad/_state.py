"""Typed session state (dataclasses) built from the engine's reduced state."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

__all__ = ["Interrupt", "Message", "Run", "SessionState", "ToolCall"]


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
    """An open interrupt on a run: its wait and offered actions."""

    interrupt_id: str
    wait_id: str
    run_id: str
    actions: List[str]


@dataclass(frozen=True)
class Message:
    """One transcript message (user, assistant or system)."""

    message_id: str
    role: str
    scope: str
    content: str
    completed: bool
    run_id: Optional[str] = None


@dataclass(frozen=True)
class SessionState:
    """The reduced state of a session at ``head`` (its ``sessionSequence``).

    ``active`` is the session slot: ``{"run": id}``, ``{"workflow": id}`` or
    ``None``. ``raw`` is the engine's full reduced state as a dict.
    """

    session_id: str
    head: int
    runs: Dict[str, Run]
    tool_calls: Dict[str, ToolCall]
    open_interrupts: List[Interrupt]
    transcript: List[Message]
    active: Optional[Dict[str, str]]
    raw: Dict[str, Any] = field(repr=False)

    @classmethod
    def _from_json(cls, session_id: str, d: Dict[str, Any]) -> "SessionState":
        runs: Dict[str, Run] = {}
        interrupts: List[Interrupt] = []
        for rid, r in (d.get("runs") or {}).items():
            oi = r.get("openInterrupt")
            runs[rid] = Run(
                run_id=rid,
                root_run_id=r.get("root", rid),
                parent_run_id=r.get("parent"),
                workflow_id=r.get("workflow"),
                client_executor_id=r.get("clientExecutor"),
                state=r.get("state", ""),
                stop_requested=bool(r.get("stopRequested")),
                open_pause=r.get("openPause"),
                open_interrupt=oi["id"] if oi else None,
                open_children=list(r.get("openChildren") or []),
                open_tool_calls=list(r.get("openTools") or []),
            )
            if oi:
                interrupts.append(Interrupt(oi["id"], oi.get("waitId", ""), rid, list(oi.get("actions") or [])))
        tools = {
            tid: ToolCall(tid, t.get("run", ""), t.get("state", ""))
            for tid, t in (d.get("tools") or {}).items()
        }
        transcript = [
            Message(
                message_id=m["messageId"],
                role=m.get("role", ""),
                scope=m.get("scope", ""),
                content=m.get("content", ""),
                completed=bool(m.get("completed")),
                run_id=m.get("runId"),
            )
            for m in (d.get("transcript") or {}).get("messages", [])
        ]
        return cls(session_id, int(d.get("head", 0)), runs, tools, interrupts, transcript, d.get("slot"), d)
