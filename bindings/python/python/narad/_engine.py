"""The asyncio-native engine: every call is awaitable and runs on the
engine's own tokio runtime, so the event loop is never blocked."""

from __future__ import annotations

import asyncio
import datetime as _dt
import json
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Awaitable, Dict, Iterable, List, Optional, Sequence, Tuple, Type, Union

from . import _native
from ._errors import _count
from ._host import Authorizer, EngineConfig, ManualClock
from ._assets import _AssetsMixin
from ._more import _LifecycleMixin, _RecordsMixin, _posix, _scope
from ._state import SessionState, TranscriptMessage

__all__ = ["AttachItem", "Attachment", "Engine", "HistoryPage", "ReasoningStream", "StartedRun", "TextStream"]



class AttachItem:
    """One record: an authority event, or a hydrate record on attach.

    ``type`` is its ``type`` field, ``data`` the parsed record, ``raw`` the
    exact bytes as stored (or as produced, for hydrate records). The
    ``data`` of a hydrate record or a history page's event is parsed on
    first use: a long session's ``messages.snapshot`` is megabytes of JSON,
    a history page up to 4 MiB, and a caller that forwards ``raw`` never
    pays for it.
    """

    __slots__ = ("type", "raw", "_data")

    def __init__(self, type: str, data: Optional[Dict[str, Any]], raw: bytes) -> None:
        self.type = type
        self.raw = raw
        self._data = data

    @property
    def data(self) -> Dict[str, Any]:
        """The parsed record (a ``dict``)."""
        if self._data is None:
            self._data = json.loads(self.raw)
        return self._data

    @classmethod
    def _of(cls, raw: bytes) -> "AttachItem":
        data = json.loads(raw)
        return cls(type=data.get("type", ""), data=data, raw=raw)

    @classmethod
    def _typed(cls, item: Tuple[str, Dict[str, Any], bytes]) -> "AttachItem":
        return cls(type=item[0], data=item[1], raw=item[2])

    @property
    def session_sequence(self) -> Optional[int]:
        """The event's ``sessionSequence`` (``None`` for hydrate records)."""
        return self.data.get("sessionSequence")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AttachItem):
            return NotImplemented
        return (self.type, self.raw) == (other.type, other.raw)

    def __hash__(self) -> int:
        return hash((self.type, self.raw))

    def __repr__(self) -> str:
        return f"AttachItem(type={self.type!r}, raw={self.raw[:80]!r}{'...' if len(self.raw) > 80 else ''})"


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
    """Streamed assistant text (``message.text.*``) through the engine's
    typed stream handle.

    Use as ``async with engine.stream_text(sid, run) as s: await s.delta("…")``.
    Entering appends ``message.text.started``; leaving appends
    ``message.text.completed``. On an exception the stream is closed the
    same way (the text streamed so far stays, complete, so no stream is left
    open) and the exception propagates; the caller decides the run's end.
    A cancellation that lands while the stream starts closes it too.
    ``message_id`` is set once started (or given up front).
    """

    def __init__(self, engine: "Engine", session_id: str, run_id: Optional[str], role: str = "assistant",
                 message_id: Optional[str] = None, workflow_id: Optional[str] = None) -> None:
        self._engine = engine
        self.session_id = session_id
        self.run_id = run_id
        self.workflow_id = workflow_id
        self.role = role
        self.message_id: Optional[str] = message_id
        self.completed = False
        self._handle: Any = None
        # The deltas so far, joined when `text` is read: `self.text += d`
        # copied the whole text at each delta (an attribute gets no
        # in-place append), quadratic in a long stream's deltas.
        self._parts: List[str] = []

    @property
    def text(self) -> str:
        """The text streamed so far."""
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    async def start(self) -> "TextStream":
        """Appends ``message.text.started`` (done by ``async with``)."""
        if self._handle is None:
            scope, sid = _scope(self.run_id, self.workflow_id)
            started = _native.start_text(self._engine._native, self.session_id, scope, sid,
                                         self.message_id, self.role)
            try:
                await _settled(started)
            finally:
                # Kept even when the caller was cancelled meanwhile, so that
                # a started stream can still be closed.
                self._handle = _result(started)
                if self._handle is not None:
                    self.message_id = self._handle.id
        return self

    async def delta(self, text: str) -> None:
        """Appends one ``message.text.delta``."""
        if self._handle is None:
            await self.start()
        await self._handle.delta(text)
        self._parts.append(text)

    async def complete(self) -> None:
        """Appends ``message.text.completed`` (once)."""
        if self._handle is not None and not self.completed:
            await self._handle.complete()
            self.completed = True

    async def reasoning(self) -> "ReasoningStream":
        """Starts this message's reasoning (``reasoningId`` ``reasoning:{messageId}``)."""
        if self._handle is None:
            await self.start()
        return await ReasoningStream._open(self._handle.reasoning())

    async def __aenter__(self) -> "TextStream":
        try:
            return await self.start()
        except asyncio.CancelledError:
            # Started, though the caller gives up before the body: close
            # it, so no stream is left open, then give up.
            if self._handle is not None:
                await _quietly(self.complete())
            raise

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


async def _settled(fut: "asyncio.Future[Any]") -> None:
    """Awaits a stream's start so that a cancellation cannot lose a stream
    that was started: the start is shielded, and a cancelled caller still
    waits for its outcome (kept in ``fut``, see :func:`_result`) before the
    cancellation propagates. A refused start raises its error."""
    try:
        await asyncio.shield(fut)
    except asyncio.CancelledError:
        if not fut.done():
            await _quietly(fut)
        raise


def _result(fut: "asyncio.Future[Any]") -> Any:
    """``fut``'s result, or ``None`` if it is pending, cancelled or failed."""
    if fut.done() and not fut.cancelled() and fut.exception() is None:
        return fut.result()
    return None


async def _quietly(aw: Awaitable[Any]) -> None:
    """Awaits ``aw``, dropping any error: a caller's own exception (or
    cancellation) is the one that propagates."""
    try:
        await aw
    except Exception:
        pass


class ReasoningStream:
    """A reasoning stream (``reasoning.*``): ``delta`` then ``complete``;
    also an async context manager that completes on exit."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle
        self.reasoning_id: str = handle.id
        self.completed = False

    @classmethod
    async def _open(cls, started: "asyncio.Future[Any]") -> "ReasoningStream":
        """The stream of a native start; one started while its caller was
        cancelled is completed before the cancellation propagates."""
        try:
            await _settled(started)
        except asyncio.CancelledError:
            handle = _result(started)
            if handle is not None:
                await _quietly(handle.complete())
            raise
        return cls(started.result())

    async def delta(self, text: str) -> None:
        """Appends one ``reasoning.delta``."""
        await self._handle.delta(text)

    async def complete(self) -> None:
        """Appends ``reasoning.completed`` (once)."""
        if not self.completed:
            await self._handle.complete()
            self.completed = True

    async def __aenter__(self) -> "ReasoningStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        try:
            await self.complete()
        except Exception:
            if exc[0] is None:
                raise


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
        self._pending: List[Tuple[str, bytes]] = []
        self.capabilities: Optional[Dict[str, Any]] = None

    async def _open(self) -> None:
        n = self._engine._n()
        if self._after is None:
            caps, hydrate, follow = await n.attach(self.session_id)
            self.capabilities = _caps(caps)
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
            kind, raw = self._pending.pop(0)
            return AttachItem(kind, None, raw)
        item = await self._follow.next()
        if item is None:
            raise StopAsyncIteration
        return AttachItem._typed(item)

    @property
    def cursor(self) -> int:
        """The ``sessionSequence`` of the last event returned (readable from
        another task while this one waits for a live event)."""
        return self._follow.cursor() if self._follow is not None else (self._after or 0)

    @property
    def lag_signals(self) -> int:
        """How often the follower fell behind the live notices and re-read
        from its cursor: nothing is lost, a count for monitoring."""
        return self._follow.lag_signals() if self._follow is not None else 0

    async def aclose(self) -> None:
        """Stops following."""
        self._follow = None


def _caps(c: Tuple[Any, ...]) -> Dict[str, Any]:
    version, profiles, limit, seq, active = c
    return {"protocolVersion": version, "activeProfiles": list(profiles), "historyLimit": limit,
            "sessionSequence": seq,
            "activeExecution": None if active is None else {"kind": active[0], "id": active[1]}}


class Engine(_LifecycleMixin, _RecordsMixin, _AssetsMixin):
    """The Narad engine over one store.

    Open it with ``await Engine.open(url)``: ``redb:PATH``, ``sqlite:PATH``
    or ``postgres://…`` (``?schema=NAME``). Every method is a coroutine;
    refusals raise a :class:`narad.NaradError` subclass with ``.code`` and
    ``.section``, and append nothing. Cancelling a call drops it where it
    stands: it is appended whole or not at all, and settled before the
    session's next command (retry under ``idempotency_key=`` to learn
    which).
    """

    def __init__(self, native: Any) -> None:
        self._native: Any = native

    def _n(self) -> Any:
        return self._native

    @classmethod
    async def open(cls, url: str, *, principal: str = "local", clock: Optional[ManualClock] = None,
                   sequential_ids: bool = False, authorizer: Optional[Authorizer] = None,
                   config: Optional[EngineConfig] = None,
                   redb_cache_bytes: Optional[int] = None, read_only: bool = False) -> "Engine":
        """Opens (or creates) the store ``url`` names.

        ``principal`` is who this handle acts as (see :meth:`as_principal`).
        For tests, ``clock`` fixes time (a :class:`ManualClock`) and
        ``sequential_ids`` makes new ids ``kind-1``, ``kind-2``, ...
        ``authorizer`` (an :class:`Authorizer` of allow rules) refuses what
        no rule allows; the default allows everything but trace and debug.
        ``config`` (an :class:`EngineConfig`) sets cache size, history page
        limit, snapshot interval, retries and client lease/token times.
        ``redb_cache_bytes`` caps a ``redb:`` store's page cache (redb's
        default is a ceiling of 1 GiB, filled by every page read); other
        stores ignore it. ``read_only=True`` opens an existing ``redb:`` or
        ``sqlite:`` store for reading only, as a file this process may not
        write must be (a backup, another user's file): every read works,
        and every command raises :class:`StoreError` with ``read_only``.

        A store that cannot be opened raises :class:`StoreError` with its
        reason as ``.code``: ``invalid_url``, ``locked`` (a ``redb:`` file
        already open, in this process or another), ``not_a_store``, or the
        store's own (``corrupt``, ``newer_schema``, ...). A negative count
        or duration (here or in ``config``) raises
        :class:`InvalidCommandError` with ``invalid_command``, naming it.
        """
        native = await _native.NativeEngine.open(
            url, principal, None if clock is None else clock._native, sequential_ids,
            None if authorizer is None else authorizer._native, None if config is None else config._args(),
            _count("redb_cache_bytes", redb_cache_bytes), read_only)
        return cls(native)

    def as_principal(self, principal: str) -> "Engine":
        """The same engine (same store, same caches) acting as ``principal``."""
        return Engine(self._native.with_principal(principal))

    @property
    def principal(self) -> str:
        """The principal this handle acts as."""
        return self._native.principal

    async def close(self) -> None:
        """Finishes accepted appends and releases the store (idempotent);
        later calls raise :class:`InvalidCommandError`."""
        await self._native.close()

    async def __aenter__(self) -> "Engine":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    # Sessions and messages

    async def create_session(self, session_id: Optional[str] = None, *,
                             profiles: Union[None, str, Iterable[str]] = None,
                             workspace_id: Optional[str] = None,
                             labels: Optional[Dict[str, str]] = None,
                             idempotency_key: Optional[str] = None) -> str:
        """Creates a session (profiles fixed for its life; default: all),
        with host ``labels`` the session index filters on. Returns its id.

        Every command takes ``idempotency_key``: a retry under the same key
        (after a crash, a timeout or a restart) appends nothing and returns
        the original result; the same key with another request raises
        ``idempotency_conflict``. The key is recorded in the store with the
        command's events."""
        if profiles is not None and not isinstance(profiles, str):
            profiles = ",".join(profiles)
        return await self._native.create_session(session_id, profiles, workspace_id, dict(labels or {}),
                                                 idempotency_key)

    async def message(self, session_id: str, text: Any, *, message_id: Optional[str] = None,
                      idempotency_key: Optional[str] = None) -> str:
        """Records a user message (``message.user.recorded``). Returns its
        ``messageId``. A caller-chosen ``message_id`` is an idempotency key:
        a retry with the same id and text appends nothing; other text is
        refused (``idempotency_conflict``)."""
        return await self._native.message(session_id, text, message_id, idempotency_key)

    async def append(self, session_id: str, event_type: str, body: Optional[Dict[str, Any]] = None, *,
                     run_id: Optional[str] = None, workflow_id: Optional[str] = None,
                     idempotency_key: Optional[str] = None) -> AttachItem:
        """Appends one event of any active profile at session, run or workflow scope."""
        scope, sid = ("run", run_id) if run_id else ("workflow", workflow_id) if workflow_id else ("session", None)
        raw = await self._native.append(session_id, event_type, scope, sid, body or {}, idempotency_key)
        return AttachItem._of(raw)

    # Runs

    async def start_run(self, session_id: str, *, run_id: Optional[str] = None,
                        parent_run_id: Optional[str] = None, workflow_id: Optional[str] = None,
                        client_executor_id: Optional[str] = None, queue: bool = False,
                        idempotency_key: Optional[str] = None) -> StartedRun:
        """Starts a run and returns its id. When the session slot is busy it
        raises :class:`SessionBusyError`, unless ``queue=True``: then the
        start is queued durably and the id comes back with ``.queued``."""
        running, rid = await self._native.start_run(
            session_id, run_id, parent_run_id, workflow_id, client_executor_id, queue, idempotency_key)
        return StartedRun(rid, not running)

    async def drain_queue(self, session_id: str) -> None:
        """Starts the head of the session's queue if the slot is free."""
        await self._native.drain_queue(session_id)

    async def start_workflow(self, session_id: str, workflow_id: Optional[str] = None, *,
                             default_client_executor_id: Optional[str] = None,
                             idempotency_key: Optional[str] = None) -> str:
        """Starts a workflow (it holds the session slot). Returns its id."""
        return await self._native.start_workflow(session_id, workflow_id, default_client_executor_id,
                                                 idempotency_key)

    async def pause_run(self, session_id: str, run_id: str, reason: str, *, automatic: bool = False,
                        retry_at: Union[None, float, _dt.datetime] = None,
                        idempotency_key: Optional[str] = None) -> str:
        """Pauses a run without an interrupt. Returns the ``waitId``. With
        ``retry_at`` (a POSIX time or datetime) the pause is automatic and
        :meth:`fire_due_timers` resumes the run then (``pause_run_until``)."""
        return await self._native.pause_run(session_id, run_id, reason, automatic, _posix(retry_at),
                                            idempotency_key)

    async def resume_run(self, session_id: str, run_id: str, wait_id: str, *,
                         idempotency_key: Optional[str] = None) -> None:
        """Resumes a paused run (``wait_id`` of its active pause)."""
        await self._native.resume_run(session_id, run_id, wait_id, idempotency_key)

    async def end_run(self, session_id: str, run_id: str, *, status: str = "finished",
                      usage: Optional[Dict[str, Any]] = None, artifact_ids: Sequence[str] = (),
                      code: Optional[str] = None, message: Optional[str] = None,
                      idempotency_key: Optional[str] = None) -> None:
        """Ends a run: ``status`` is ``finished``, ``error`` (needs ``code``)
        or ``cancelled``. Open work must be closed first (``open_work``)."""
        await self._native.end_run(session_id, run_id, status, usage, list(artifact_ids),
                                   code, message, idempotency_key)

    async def stop(self, session_id: str, run_id: Optional[str] = None, *,
                   idempotency_key: Optional[str] = None) -> str:
        """Stops a run (default: the active root) and closes its open work in
        one batch. Returns the stopped run's id."""
        return await self._native.stop(session_id, run_id, idempotency_key)

    # Tool calls

    async def start_tool_call(self, session_id: str, run_id: str, tool_name: str,
                              args: Optional[Dict[str, Any]] = None, *, client: bool = False,
                              tool_call_id: Optional[str] = None,
                              idempotency_key: Optional[str] = None) -> str:
        """Starts a backend tool call (or, with ``client=True``, a client
        tool call on a run bound to an executor). Returns its ``toolCallId``.

        ``tool_call_id`` keeps the runtime's own id (a model's tool call
        id) and is an idempotency key: a retry with the same id, run, name
        and args appends nothing and returns it; other arguments under that
        id are refused (``idempotency_conflict``)."""
        return await self._native.start_tool_call(session_id, run_id, tool_name, args or {}, client,
                                                  idempotency_key, tool_call_id)

    async def finish_tool_call(self, session_id: str, tool_call_id: str, response: Any = None, *,
                               outcome: str = "success", code: Optional[str] = None,
                               message: Optional[str] = None, idempotency_key: Optional[str] = None) -> None:
        """Finishes a tool call exactly once: ``success``, ``error`` or ``cancelled``."""
        await self._native.finish_tool_call(session_id, tool_call_id, outcome, response, code, message,
                                            idempotency_key)

    # Interrupts

    async def request_interrupt(self, session_id: str, run_id: Optional[str] = None, *,
                                workflow_id: Optional[str] = None, kind: str = "approval",
                                actions: Sequence[str] = ("approve", "deny"),
                                input: Optional[Dict[str, Any]] = None,
                                expires_at: Union[None, float, _dt.datetime] = None,
                                title: Optional[str] = None,
                                idempotency_key: Optional[str] = None) -> Tuple[str, str]:
        """Requests an interrupt on a run (or a workflow); the run pauses in
        the same batch. Returns ``(interrupt_id, wait_id)``."""
        scope, sid = ("workflow", workflow_id) if workflow_id else ("run", run_id)
        if sid is None:
            raise TypeError("request_interrupt needs run_id or workflow_id")
        iid, wait = await self._native.request_interrupt(
            session_id, scope, sid, kind, list(actions), input, _posix(expires_at), title, idempotency_key)
        return iid, wait

    async def resolve_interrupt(self, interrupt_id: str, decision: str, *, reason: Optional[str] = None,
                                expected_revision: Optional[int] = None,
                                members: Optional[Any] = None, idempotency_key: Optional[str] = None) -> str:
        """``resolve-interrupt`` by id alone; the run resumes. Returns the session id."""
        return await self._native.resolve_interrupt(interrupt_id, decision, reason, expected_revision, members,
                                                    idempotency_key)

    async def expire_due(self) -> List[str]:
        """Resolves every interrupt whose expiry passed as ``expired``."""
        return list(await self._native.expire_due())

    async def open_interrupts(self, *, after: Optional[str] = None, limit: int = 100) -> Dict[str, Any]:
        """Open interrupts of every session, one index page: ``{"open": [...], "next": ...}``."""
        page, nxt = await self._native.open_interrupts(after, _count("limit", limit, "invalid_limit"))
        return {"open": [{"sessionId": s, "interruptId": i, "scope": {"kind": sc[0], "id": sc[1]}, "kind": k,
                          "title": t, "actions": list(a), "expiresAt": x} for s, i, sc, k, t, a, x in page],
                "next": nxt}

    # Streamed text

    def stream_text(self, session_id: str, run_id: Optional[str] = None, *, role: str = "assistant",
                    message_id: Optional[str] = None, workflow_id: Optional[str] = None) -> TextStream:
        """An async context manager streaming one message on a run (or a
        workflow, or the session when neither is given)."""
        return TextStream(self, session_id, run_id, role, message_id, workflow_id)

    # Reads

    async def state(self, session_id: str) -> SessionState:
        """The session's reduced state as dataclasses (the engine's typed state)."""
        return await SessionState._from_native(session_id, await self._native.state(session_id))

    async def write_snapshot(self, session_id: str) -> int:
        """Writes a reducer snapshot of the session at its head now (the
        engine also writes one every ``snapshot_every`` events); returns
        that head. A later hydrate restores from it instead of replaying."""
        return await self._native.write_snapshot(session_id)

    async def transcript_view(self, session_id: str, *, with_reasoning: bool = False) -> List[TranscriptMessage]:
        """The primary transcript (§9.2), as a chat UI shows it: session and
        workflow messages and those of the last top-level run, in order; a
        redaction's replacement text, a hidden message left out. With
        ``with_reasoning`` (display-sensitive) each entry carries the
        reasoning joined to it."""
        return await TranscriptMessage._list(await self._native.transcript_view(session_id, with_reasoning))

    async def state_json(self, session_id: str) -> str:
        """The reduced state as the checker holds it (deterministic JSON)."""
        return await self._native.state_json(session_id)

    async def capabilities(self, session_id: str) -> Dict[str, Any]:
        """The §10.4 capability record."""
        return _caps(await self._native.capabilities(session_id))

    async def history(self, session_id: str, *, after: Optional[int] = None,
                      root_run_id: Optional[str] = None, after_sequence: Optional[int] = None,
                      workflow_id: Optional[str] = None, after_workflow_sequence: Optional[int] = None,
                      limit: int = 1000) -> HistoryPage:
        """One page of history (§10.2) by session, run-tree or workflow cursor."""
        events, nxt = await self._native.history(session_id, _count("after", after), root_run_id,
                                                 _count("after_sequence", after_sequence), workflow_id,
                                                 _count("after_workflow_sequence", after_workflow_sequence),
                                                 _count("limit", limit, "invalid_limit"))
        return HistoryPage([AttachItem(kind, None, raw) for kind, raw in events], nxt)

    def attach(self, session_id: str) -> Attachment:
        """Attach (§10.3): hydrate records, then live events without gap."""
        return Attachment(self, session_id)

    def subscribe(self, session_id: str, after: int = 0) -> Attachment:
        """Follows a session from ``after`` (a ``sessionSequence``): replay, then live."""
        return Attachment(self, session_id, _count("after", after))

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
        expired, paused, unavailable = await self._native.client_tick()
        return {"expiredCalls": list(expired), "pausedRuns": list(paused), "unavailable": list(unavailable)}

    async def outbox_next(self, executor_id: str, timeout: Optional[float] = None) -> Optional[bytes]:
        """The next control message for an executor (``None`` after ``timeout`` s)."""
        return await self._native.outbox_next(executor_id, timeout)
