"""The asyncio-native engine: every call is awaitable and runs on the
engine's own tokio runtime, so the event loop is never blocked."""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, AsyncIterator, Dict, Iterable, List, Optional, Sequence, Tuple, Type, Union

from . import _native
from ._state import SessionState

__all__ = ["AttachItem", "Attachment", "Engine", "HistoryPage", "StartedRun", "TextStream"]

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


@dataclass(frozen=True)
class AttachItem:
    """One record: an authority event, or a hydrate record on attach.

    ``type`` is its ``type`` field, ``data`` the parsed record, ``raw`` the
    exact bytes as stored (or as produced, for hydrate records).
    """

    type: str
    data: Dict[str, Any]
    raw: bytes

    @classmethod
    def _of(cls, raw: bytes) -> "AttachItem":
        data = json.loads(raw)
        return cls(type=data.get("type", ""), data=data, raw=raw)

    @property
    def session_sequence(self) -> Optional[int]:
        """The event's ``sessionSequence`` (``None`` for hydrate records)."""
        return self.data.get("sessionSequence")


@dataclass(frozen=True)
class HistoryPage:
    """One page of session history (§10.2)."""

    events: List[AttachItem]
    next: Optional[int] = None


class StartedRun(str):
    """A run id; ``queued`` is true when the slot was busy and the start
    waits durably in the session's queue."""

    queued: bool

    def __new__(cls, run_id: str, queued: bool = False) -> "StartedRun":
        s = super().__new__(cls, run_id)
        s.queued = queued
        return s


class TextStream:
    """Streamed assistant text on a run (``message.text.*``).

    Use as ``async with engine.stream_text(sid, run) as s: await s.delta("…")``.
    Entering appends ``message.text.started``; leaving appends
    ``message.text.completed``. On an exception the stream is closed the
    same way (the text streamed so far stays, complete, so no stream is left
    open) and the exception propagates; the caller decides the run's end.
    """

    def __init__(self, engine: "Engine", session_id: str, run_id: str, role: str = "assistant",
                 message_id: Optional[str] = None) -> None:
        self._engine = engine
        self.session_id = session_id
        self.run_id = run_id
        self.role = role
        self.message_id: str = message_id or _native.NativeEngine.new_id("msg")
        self.text = ""
        self.completed = False
        self._started = False

    async def start(self) -> "TextStream":
        """Appends ``message.text.started`` (done by ``async with``)."""
        if not self._started:
            await self._engine._n().text_started(self.session_id, self.run_id, self.message_id, self.role)
            self._started = True
        return self

    async def delta(self, text: str) -> None:
        """Appends one ``message.text.delta``."""
        if not self._started:
            await self.start()
        await self._engine._n().text_delta(self.session_id, self.run_id, self.message_id, text)
        self.text += text

    async def complete(self) -> None:
        """Appends ``message.text.completed`` (once)."""
        if self._started and not self.completed:
            await self._engine._n().text_completed(self.session_id, self.run_id, self.message_id)
            self.completed = True

    async def __aenter__(self) -> "TextStream":
        return await self.start()

    async def __aexit__(self, et: Optional[Type[BaseException]], ev: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        if et is None:
            await self.complete()
            return
        try:
            await self.complete()
        except Exception:
            # The caller's exception is the one that matters.
            pass


class Attachment:
    """``async for item in engine.attach(sid)``: hydrate records first
    (``messages.snapshot`` …), then every authority event after the
    hydrate's boundary, live, without gap or duplicate.

    ``capabilities`` (the §10.4 record) is set once iteration began.
    """

    def __init__(self, engine: "Engine", session_id: str, after: Optional[int] = None) -> None:
        self._engine = engine
        self.session_id = session_id
        self._after = after
        self._follow: Any = None
        self._pending: List[bytes] = []
        self.capabilities: Optional[Dict[str, Any]] = None

    async def _open(self) -> None:
        n = self._engine._n()
        if self._after is None:
            caps, hydrate, follow = await n.attach(self.session_id)
            self.capabilities = json.loads(caps)
            self._pending = list(hydrate)
        else:
            follow = await n.subscribe(self.session_id, self._after)
        self._follow = follow

    def __aiter__(self) -> "Attachment":
        return self

    async def __anext__(self) -> AttachItem:
        if self._follow is None:
            await self._open()
        if self._pending:
            return AttachItem._of(self._pending.pop(0))
        raw = await self._follow.next()
        if raw is None:
            raise StopAsyncIteration
        return AttachItem._of(raw)

    @property
    def cursor(self) -> int:
        """The ``sessionSequence`` of the last event returned."""
        return self._follow.cursor() if self._follow is not None else (self._after or 0)

    async def aclose(self) -> None:
        """Stops following."""
        self._follow = None


def _posix(t: Union[None, float, int, _dt.datetime]) -> Optional[float]:
    if t is None:
        return None
    if isinstance(t, _dt.datetime):
        if t.tzinfo is None:
            t = t.replace(tzinfo=_dt.timezone.utc)
        return t.timestamp()
    return float(t)


def _opt_json(v: Any) -> Optional[str]:
    return None if v is None else _dumps(v)


class Engine:
    """The Narad engine over one store.

    Open it with ``await Engine.open(url)``: ``redb:PATH``, ``sqlite:PATH``
    or ``postgres://…`` (``?schema=NAME``). Every method is a coroutine;
    refusals raise a :class:`narad.NaradError` subclass with ``.code`` and
    ``.section``, and append nothing.
    """

    def __init__(self, native: Any) -> None:
        self._native: Any = native

    def _n(self) -> Any:
        return self._native

    @classmethod
    async def open(cls, url: str, *, principal: str = "local") -> "Engine":
        """Opens (or creates) the store ``url`` names."""
        return cls(await _native.NativeEngine.open(url, principal))

    async def close(self) -> None:
        """Closes the engine; the store is released when its followers end."""
        self._native.close()

    async def __aenter__(self) -> "Engine":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    # Sessions and messages

    async def create_session(self, session_id: Optional[str] = None, *,
                             profiles: Union[None, str, Iterable[str]] = None,
                             workspace_id: Optional[str] = None) -> str:
        """Creates a session (profiles fixed for its life; default: all). Returns its id."""
        if profiles is not None and not isinstance(profiles, str):
            profiles = ",".join(profiles)
        return await self._native.create_session(session_id, profiles, workspace_id)

    async def message(self, session_id: str, text: Any) -> str:
        """Records a user message (``message.user.recorded``). Returns its ``messageId``."""
        return await self._native.message(session_id, _dumps(text))

    async def append(self, session_id: str, event_type: str, body: Optional[Dict[str, Any]] = None, *,
                     run_id: Optional[str] = None, workflow_id: Optional[str] = None) -> AttachItem:
        """Appends one event of any active profile at session, run or workflow scope."""
        scope, sid = ("run", run_id) if run_id else ("workflow", workflow_id) if workflow_id else ("session", None)
        raw = await self._native.append(session_id, event_type, scope, sid, _dumps(body or {}))
        return AttachItem._of(raw)

    # Runs

    async def start_run(self, session_id: str, *, run_id: Optional[str] = None,
                        parent_run_id: Optional[str] = None, workflow_id: Optional[str] = None,
                        client_executor_id: Optional[str] = None, queue: bool = False) -> StartedRun:
        """Starts a run and returns its id. When the session slot is busy it
        raises :class:`SessionBusyError`, unless ``queue=True``: then the
        start is queued durably and the id comes back with ``.queued``."""
        running, rid = await self._native.start_run(
            session_id, run_id, parent_run_id, workflow_id, client_executor_id, queue)
        return StartedRun(rid, not running)

    async def drain_queue(self, session_id: str) -> None:
        """Starts the head of the session's queue if the slot is free."""
        await self._native.drain_queue(session_id)

    async def start_workflow(self, session_id: str, workflow_id: Optional[str] = None, *,
                             default_client_executor_id: Optional[str] = None) -> str:
        """Starts a workflow (it holds the session slot). Returns its id."""
        return await self._native.start_workflow(session_id, workflow_id, default_client_executor_id)

    async def pause_run(self, session_id: str, run_id: str, reason: str, *, automatic: bool = False) -> str:
        """Pauses a run without an interrupt. Returns the ``waitId``."""
        return await self._native.pause_run(session_id, run_id, reason, automatic)

    async def resume_run(self, session_id: str, run_id: str, wait_id: str) -> None:
        """Resumes a paused run (``wait_id`` of its active pause)."""
        await self._native.resume_run(session_id, run_id, wait_id)

    async def end_run(self, session_id: str, run_id: str, *, status: str = "finished",
                      usage: Optional[Dict[str, Any]] = None, artifact_ids: Sequence[str] = (),
                      code: Optional[str] = None, message: Optional[str] = None) -> None:
        """Ends a run: ``status`` is ``finished``, ``error`` (needs ``code``)
        or ``cancelled``. Open work must be closed first (``open_work``)."""
        await self._native.end_run(session_id, run_id, status, _opt_json(usage), list(artifact_ids),
                                   code, message)

    async def stop(self, session_id: str, run_id: Optional[str] = None) -> str:
        """Stops a run (default: the active root) and closes its open work in
        one batch. Returns the stopped run's id."""
        return await self._native.stop(session_id, run_id)

    # Tool calls

    async def start_tool_call(self, session_id: str, run_id: str, tool_name: str,
                              args: Optional[Dict[str, Any]] = None, *, client: bool = False) -> str:
        """Starts a backend tool call (or, with ``client=True``, a client
        tool call on a run bound to an executor). Returns its ``toolCallId``."""
        return await self._native.start_tool_call(session_id, run_id, tool_name, _dumps(args or {}), client)

    async def finish_tool_call(self, session_id: str, tool_call_id: str, response: Any = None, *,
                               outcome: str = "success", code: Optional[str] = None,
                               message: Optional[str] = None) -> None:
        """Finishes a tool call exactly once: ``success``, ``error`` or ``cancelled``."""
        await self._native.finish_tool_call(session_id, tool_call_id, outcome, _dumps(response), code, message)

    # Interrupts

    async def request_interrupt(self, session_id: str, run_id: Optional[str] = None, *,
                                workflow_id: Optional[str] = None, kind: str = "approval",
                                actions: Sequence[str] = ("approve", "deny"),
                                input: Optional[Dict[str, Any]] = None,
                                expires_at: Union[None, float, _dt.datetime] = None) -> Tuple[str, str]:
        """Requests an interrupt on a run (or a workflow); the run pauses in
        the same batch. Returns ``(interrupt_id, wait_id)``."""
        scope, sid = ("workflow", workflow_id) if workflow_id else ("run", run_id)
        if sid is None:
            raise TypeError("request_interrupt needs run_id or workflow_id")
        iid, wait = await self._native.request_interrupt(
            session_id, scope, sid, kind, list(actions), _opt_json(input), _posix(expires_at))
        return iid, wait

    async def resolve_interrupt(self, interrupt_id: str, decision: str, *, reason: Optional[str] = None,
                                expected_revision: Optional[int] = None,
                                members: Optional[Any] = None) -> str:
        """``resolve-interrupt`` by id alone; the run resumes. Returns the session id."""
        return await self._native.resolve_interrupt(interrupt_id, decision, reason, expected_revision,
                                                    _opt_json(members))

    async def expire_due(self) -> List[str]:
        """Resolves every interrupt whose expiry passed as ``expired``."""
        return list(await self._native.expire_due())

    async def open_interrupts(self, *, after: Optional[str] = None, limit: int = 100) -> Dict[str, Any]:
        """Open interrupts of every session, one index page: ``{"open": [...], "next": ...}``."""
        return json.loads(await self._native.open_interrupts(after, limit))

    # Streamed text

    def stream_text(self, session_id: str, run_id: str, *, role: str = "assistant",
                    message_id: Optional[str] = None) -> TextStream:
        """An async context manager streaming one message on a run."""
        return TextStream(self, session_id, run_id, role, message_id)

    # Reads

    async def state(self, session_id: str) -> SessionState:
        """The session's reduced state as dataclasses."""
        return SessionState._from_json(session_id, json.loads(await self._native.state_json(session_id)))

    async def state_json(self, session_id: str) -> str:
        """The reduced state as the checker holds it (deterministic JSON)."""
        return await self._native.state_json(session_id)

    async def capabilities(self, session_id: str) -> Dict[str, Any]:
        """The §10.4 capability record."""
        return json.loads(await self._native.capabilities(session_id))

    async def history(self, session_id: str, *, after: Optional[int] = None,
                      root_run_id: Optional[str] = None, after_sequence: Optional[int] = None,
                      workflow_id: Optional[str] = None, after_workflow_sequence: Optional[int] = None,
                      limit: int = 1000) -> HistoryPage:
        """One page of history (§10.2) by session, run-tree or workflow cursor."""
        events, nxt = await self._native.history(session_id, after, root_run_id, after_sequence,
                                                 workflow_id, after_workflow_sequence, limit)
        return HistoryPage([AttachItem._of(b) for b in events], nxt)

    def attach(self, session_id: str) -> Attachment:
        """Attach (§10.3): hydrate records, then live events without gap."""
        return Attachment(self, session_id)

    def subscribe(self, session_id: str, after: int = 0) -> Attachment:
        """Follows a session from ``after`` (a ``sessionSequence``): replay, then live."""
        return Attachment(self, session_id, after)

    # Client execution, host side (§11)

    async def attach_client(self, executor_id: str) -> str:
        """Grants an executor a lease (``client.attached`` goes to its outbox)."""
        return await self._native.attach_client(executor_id)

    async def client_heartbeat(self, executor_id: str, lease_id: str) -> None:
        """Renews an executor's lease."""
        await self._native.client_heartbeat(executor_id, lease_id)

    async def client_finish(self, message: bytes) -> str:
        """Applies a ``client.tool.finish``: ``appended`` or ``repeated``."""
        return await self._native.client_finish(bytes(message))

    async def client_delivery_failed(self, token: str) -> None:
        """Closes a call whose execution could not be delivered."""
        await self._native.client_delivery_failed(token)

    async def client_tick(self) -> Dict[str, Any]:
        """Expires tokens and leases that passed their time."""
        return json.loads(await self._native.client_tick())

    async def outbox_next(self, executor_id: str, timeout: Optional[float] = None) -> Optional[bytes]:
        """The next control message for an executor (``None`` after ``timeout`` s)."""
        return await self._native.outbox_next(executor_id, timeout)
