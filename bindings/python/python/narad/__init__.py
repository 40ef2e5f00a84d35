"""Narad: the durable session journal engine for Python agent runtimes.

An asyncio-native binding of the Rust engine. Open a store, then drive
sessions, runs, tool calls, interrupts and streamed text::

    engine = await narad.Engine.open("sqlite:agent.sqlite")
    sid = await engine.create_session()
    run = await engine.start_run(sid)
    async with engine.stream_text(sid, run) as s:
        await s.delta("Hello")
    await engine.end_run(sid, run)
"""

from ._engine import AttachItem, Attachment, Engine, HistoryPage, ReasoningStream, StartedRun, TextStream
from ._errors import (
    ClientExecutionError,
    ConflictError,
    InvalidCommandError,
    NaradError,
    NotAuthorizedError,
    NotFoundError,
    ProtocolError,
    SessionBusyError,
    StoreError,
)
from ._executor import ClientToolExecutor, Handled
from ._host import Authorizer, EngineConfig, ManualClock, Rule
from ._more import WatchFollow
from ._state import (
    Deleted,
    Interrupt,
    Message,
    PruneReport,
    Reasoning,
    Run,
    SessionEntry,
    SessionPage,
    SessionState,
    ToolCall,
    TranscriptMessage,
    Workflow,
)

__all__ = [
    "AttachItem",
    "Authorizer",
    "Deleted",
    "EngineConfig",
    "ManualClock",
    "PruneReport",
    "Reasoning",
    "ReasoningStream",
    "Rule",
    "SessionEntry",
    "SessionPage",
    "WatchFollow",
    "Workflow",
    "Attachment",
    "ClientExecutionError",
    "ClientToolExecutor",
    "ConflictError",
    "Engine",
    "Handled",
    "HistoryPage",
    "Interrupt",
    "InvalidCommandError",
    "Message",
    "NaradError",
    "NotAuthorizedError",
    "NotFoundError",
    "ProtocolError",
    "Run",
    "SessionBusyError",
    "SessionState",
    "StartedRun",
    "StoreError",
    "TextStream",
    "ToolCall",
    "TranscriptMessage",
]
