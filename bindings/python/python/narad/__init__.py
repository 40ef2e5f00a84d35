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

import atexit as _atexit

from . import _native
from ._engine import AttachItem, Attachment, Engine, HistoryPage, StartedRun, TextStream
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
from ._state import Interrupt, Message, Run, SessionState, ToolCall

__all__ = [
    "AttachItem",
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
]

# Let engine tasks leave Python before the interpreter finalizes.
_atexit.register(_native.drain, 2.0)
