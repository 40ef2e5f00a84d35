"""The engine's surface beyond the core commands: the session lifecycle
(index, labels, archive, delete, retention, point-in-time state, fork,
import), timers, watch streams and the typed recording commands. Mixed
into :class:`narad.Engine`."""

from __future__ import annotations

import asyncio
import datetime as _dt
import json
import logging
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from . import _native
from ._errors import NaradError, NotFoundError, _count
from ._state import Deleted, PruneReport, SessionEntry, SessionPage, SessionState

Time = Union[None, float, int, _dt.datetime]


#: Items of a split-out array parsed per turn of the event loop.
_SLICE = 512
#: Records ``import_records`` copies into the extension per loop turn.
_IMPORT_SLICE = 4096


async def _parse_split(base: bytes, arrays: List[Tuple[str, bytes, bytes]]) -> Dict[str, Any]:
    """A record the extension split: ``base`` is its JSON with ``null`` in
    place of each large top-level array, and each array comes as its key,
    its items' bytes joined by commas and their end offsets (native
    ``u64``). Each slice of items is one ``json.loads``, then the loop runs."""
    rec: Dict[str, Any] = json.loads(base)
    for key, blob, ends in arrays:
        offsets = memoryview(ends).cast("Q")
        items: List[Any] = []
        start = 0
        for at in range(0, len(offsets), _SLICE):
            await asyncio.sleep(0)
            end = offsets[min(at + _SLICE, len(offsets)) - 1]
            items += json.loads(b"[" + blob[start:end] + b"]")
            start = end + 1
        rec[key] = items
    return rec


def _posix(t: Time) -> Optional[float]:
    if t is None:
        return None
    if isinstance(t, _dt.datetime):
        if t.tzinfo is None:
            t = t.replace(tzinfo=_dt.timezone.utc)
        return t.timestamp()
    return float(t)


def _seconds(d: Union[None, float, int, _dt.timedelta]) -> Optional[float]:
    if d is None:
        return None
    if isinstance(d, _dt.timedelta):
        return d.total_seconds()
    return float(d)


def _scope(run_id: Optional[str], workflow_id: Optional[str]) -> Tuple[str, Optional[str]]:
    if run_id:
        return "run", run_id
    if workflow_id:
        return "workflow", workflow_id
    return "session", None


class WatchFollow:
    """``async for event in engine.watch(sid)``: the session's watch events
    (§8) as dicts, live."""

    def __init__(self, engine: Any, session_id: str, after: int) -> None:
        self._engine = engine
        self.session_id = session_id
        self._after = after
        self._native: Any = None

    def __aiter__(self) -> "WatchFollow":
        return self

    async def __anext__(self) -> Dict[str, Any]:
        if self._native is None:
            self._native = await _native.watch(self._engine._native, self.session_id, self._after)
        raw = await self._native.next()
        if raw is None:
            raise StopAsyncIteration
        return json.loads(raw)

    @property
    def cursor(self) -> int:
        """The session position covered so far."""
        return self._native.cursor() if self._native is not None else self._after


class _LifecycleMixin:
    _native: Any

    async def sessions(self, *, status: Iterable[str] = (), workspace_id: Optional[str] = None,
                       labels: Optional[Dict[str, str]] = None, updated_after: Time = None,
                       updated_before: Time = None, after: Optional[str] = None,
                       limit: int = 100) -> SessionPage:
        """Sessions matching every given filter, in id order, from the
        session index alone (no journal is read). ``after`` is the previous
        page's ``next``; sessions this principal may not read are left out."""
        entries, nxt = await _native.sessions(self._native, list(status), workspace_id, dict(labels or {}),
                                              _posix(updated_after), _posix(updated_before), after,
                                              _count("limit", limit, "invalid_limit"))
        return SessionPage([SessionEntry(*e) for e in entries], nxt)

    async def list_sessions(self, *, after: Optional[str] = None, limit: int = 100) -> List[str]:
        """Session ids in id order after ``after``, at most ``limit``."""
        return list(await _native.list_sessions(self._native, after, _count("limit", limit, "invalid_limit")))

    async def set_labels(self, session_id: str, labels: Dict[str, str]) -> None:
        """Replaces a session's host labels (refused once archived)."""
        await _native.set_labels(self._native, session_id, dict(labels))

    async def archive(self, session_id: str) -> None:
        """Archives a session: later commands are refused
        (``session_archived``); reads still work. A session with open work
        is refused (``session_has_open_work``)."""
        await _native.archive(self._native, session_id)

    async def delete_session(self, session_id: str, *, force: bool = False) -> Deleted:
        """Deletes a session's journal and records. With open work it is
        refused (``open_work``) unless ``force``."""
        sid, events, records, (runs, wfs, ints, queued) = await _native.delete_session(
            self._native, session_id, force)
        return Deleted(sid, events, records, list(runs), list(wfs), list(ints), queued)

    async def deleted_sessions(self, *, after: Optional[str] = None, limit: int = 100) -> List[str]:
        """Ids of the sessions deleted so far, in id order."""
        return list(await _native.deleted_sessions(self._native, after, _count("limit", limit, "invalid_limit")))

    async def prune(self, *, max_idle: Union[None, float, _dt.timedelta] = None,
                    max_sessions_per_workspace: Optional[int] = None, force: bool = False,
                    dry_run: bool = False) -> PruneReport:
        """Applies a retention policy once: deletes sessions idle longer than
        ``max_idle`` or beyond ``max_sessions_per_workspace`` (the most
        recently active kept). Sessions with open work are kept unless ``force``."""
        deleted, kept = await _native.prune(self._native, _seconds(max_idle), max_sessions_per_workspace,
                                            force, dry_run)
        return PruneReport(list(deleted), [(sid, why) for sid, why in kept])

    def set_retention(self, *, max_idle: Union[None, float, _dt.timedelta] = None,
                      max_sessions_per_workspace: Optional[int] = None, force: bool = False) -> None:
        """Sets the policy :meth:`fire_due_timers` applies on each pass
        (no limit given: off)."""
        _native.set_retention(self._native, _seconds(max_idle), max_sessions_per_workspace, force)

    async def state_at(self, session_id: str, sequence: int) -> SessionState:
        """The typed state after the events through ``sequence`` (a
        ``sequence`` past the head raises :class:`InvalidCommandError`)."""
        t = await _native.state_at(self._native, session_id, _count("sequence", sequence))
        if t is None:
            shown = repr(session_id)[1:-1]  # control characters escaped
            raise NotFoundError("unknown_session", None, f"no session `{shown}` in this store")
        return await SessionState._from_native(session_id, t)

    async def fork(self, session_id: str, through: int) -> str:
        """A new session whose journal is this one's first ``through``
        events (new session and event ids); returns its id."""
        return await _native.fork(self._native, session_id, _count("through", through))

    async def import_records(self, records: Iterable[bytes]) -> Tuple[str, int]:
        """Imports one session's JSONL records (bytes, in order), checked and
        appended in one batch; redeliveries are recognized. Returns
        ``(session_id, events appended)``. A long journal is copied into
        the extension a slice at a time, letting the event loop run between
        slices."""
        buffer = _native.ImportBuffer()
        chunk: List[bytes] = []
        for r in records:
            chunk.append(bytes(r))
            if len(chunk) == _IMPORT_SLICE:
                buffer.extend(chunk)
                chunk = []
                await asyncio.sleep(0)
        buffer.extend(chunk)
        sid, n = await _native.import_records(self._native, buffer)
        return sid, n

    async def hydrate_records(self, session_id: str) -> Tuple[int, List[Dict[str, Any]]]:
        """Hydrate records at the head (``messages.snapshot``,
        ``graph.snapshot``): ``(head, records)``. A long record's arrays
        are parsed a slice at a time, letting the event loop run between
        slices."""
        head, recs = await _native.hydrate_records(self._native, session_id)
        return head, [await _parse_split(base, arrays) for base, arrays in recs]

    async def fire_due_timers(self) -> Dict[str, Any]:
        """One pass of the timer driver: expiries, automatic resumes,
        client deadlines and retention. Returns ``{"fired": [...],
        "dropped": n, "failed": [...]}``."""
        fired, dropped, failed = await _native.fire_due_timers(self._native)
        return {"fired": [{"kind": k, "sessionId": s, "id": i, "due": d, "eventTypes": list(t)}
                          for k, s, i, d, t in fired],
                "dropped": dropped,
                "failed": [{"kind": k, "id": i, "code": c} for k, i, c in failed]}

    async def run_timers(self, interval: float = 1.0) -> None:
        """Runs :meth:`fire_due_timers` every ``interval`` seconds until the
        task is cancelled, as Rust's ``Engine::run_timers``: start it with
        ``asyncio.create_task(engine.run_timers())``. A failed pass is
        logged (logger ``narad``) and the next one runs."""
        while True:
            started = asyncio.get_running_loop().time()
            try:
                await self.fire_due_timers()
            except NaradError as e:
                logging.getLogger("narad").warning("timer pass failed: %s", e.code)
            await asyncio.sleep(max(0.0, interval - (asyncio.get_running_loop().time() - started)))

    async def reindex(self, session_id: str) -> bool:
        """Rebuilds the session's index entry from its journal if the stored
        one differs; returns whether it did."""
        return await _native.reindex(self._native, session_id)

    async def check_index(self, session_id: str) -> Optional[SessionEntry]:
        """The entry rebuilt from the journal when the stored one differs
        (``None``: the index is right)."""
        e = await _native.check_index(self._native, session_id)
        return None if e is None else SessionEntry(*e)

    def watch(self, session_id: str, after: int = 0) -> WatchFollow:
        """The session's watch events (§8) after session position ``after``, live."""
        return WatchFollow(self, session_id, _count("after", after))

    async def workspace_watch(self, workspace_id: str, *, after: int = 0,
                              limit: int = 1000) -> Tuple[List[Tuple[int, Dict[str, Any]]], Optional[int]]:
        """One page of a workspace's watch stream: ``([(revision, event)], next)``."""
        events, nxt = await _native.workspace_watch(self._native, workspace_id, _count("after", after),
                                                    _count("limit", limit, "invalid_limit"))
        return [(rev, json.loads(b)) for rev, b in events], nxt

    async def announce_session(self, session_id: str, *, archived: bool = False) -> int:
        """Announces a session on its workspace's watch stream
        (``session.updated`` or ``session.archived``); returns the revision."""
        return await _native.announce_session(self._native, session_id, archived)

    def stats(self) -> Dict[str, int]:
        """What the engine did so far (hydrations, retries, ...) and how many
        sessions are cached."""
        h, snap, retries, rejected, cached, earlier = self._native.stats()
        return {"hydrations": h, "fromSnapshot": snap, "retries": retries, "snapshotsRejected": rejected,
                "snapshotsEarlier": earlier, "cachedSessions": cached}


class _RecordsMixin:
    _native: Any

    async def record_progress(self, session_id: str, run_id: str, category: str, label: str, *,
                              progress_id: Optional[str] = None, status: str = "active",
                              privacy: str = "public", detail: Optional[str] = None,
                              idempotency_key: Optional[str] = None) -> str:
        """``progress.recorded`` on a run; returns the ``progressId`` (pass
        it again to update the same item, e.g. ``status="completed"``)."""
        return await _native.record_progress(self._native, session_id, run_id, category, label, progress_id,
                                             status, privacy, detail, idempotency_key)

    async def put_document(self, session_id: str, value: Any, *, kind: str = "state",
                           run_id: Optional[str] = None, workflow_id: Optional[str] = None,
                           idempotency_key: Optional[str] = None) -> int:
        """Replaces a ``state`` or ``ui`` document at session, run or
        workflow scope; returns its new revision."""
        scope, sid = _scope(run_id, workflow_id)
        return await _native.put_document(self._native, session_id, kind, scope, sid, value, idempotency_key)

    async def patch_document(self, session_id: str, operations: Sequence[Dict[str, Any]], *,
                             kind: str = "state", run_id: Optional[str] = None,
                             workflow_id: Optional[str] = None, idempotency_key: Optional[str] = None) -> int:
        """Patches a document with JSON Patch operations
        (``{"op": "replace", "path": "/step", "value": 2}``); returns its new
        revision. A patch that does not apply is refused (``patch_failed``)."""
        scope, sid = _scope(run_id, workflow_id)
        return await _native.patch_document(self._native, session_id, kind, scope, sid, list(operations),
                                            idempotency_key)

    async def record_custom(self, session_id: str, name: str, value: Any, *, run_id: Optional[str] = None,
                            workflow_id: Optional[str] = None, idempotency_key: Optional[str] = None) -> Dict[str, Any]:
        """A ``*.custom`` extension event (``name`` dotted lowercase, e.g.
        ``acme.note``); returns the stored event."""
        scope, sid = _scope(run_id, workflow_id)
        return json.loads(await _native.record_custom(self._native, session_id, scope, sid, name, value,
                                                      idempotency_key))

    async def record_raw(self, session_id: str, content_type: str, payload: str, *,
                         run_id: Optional[str] = None, workflow_id: Optional[str] = None,
                         idempotency_key: Optional[str] = None) -> Dict[str, Any]:
        """A ``*.raw`` extension event with an encoded payload; returns the stored event."""
        scope, sid = _scope(run_id, workflow_id)
        return json.loads(await _native.record_raw(self._native, session_id, scope, sid, content_type, payload,
                                                   idempotency_key))

    async def say(self, session_id: str, text: str, *, run_id: Optional[str] = None,
                  workflow_id: Optional[str] = None) -> str:
        """A whole assistant message at once (started, delta, completed);
        returns its ``messageId``."""
        scope, sid = _scope(run_id, workflow_id)
        return await _native.say(self._native, session_id, scope, sid, text)

    async def start_reasoning(self, session_id: str, *, run_id: Optional[str] = None,
                              workflow_id: Optional[str] = None, reasoning_id: Optional[str] = None,
                              message_id: Optional[str] = None) -> Any:
        """Starts a reasoning stream (a :class:`narad.ReasoningStream`),
        joined to ``message_id`` when given."""
        from ._engine import ReasoningStream

        scope, sid = _scope(run_id, workflow_id)
        return await ReasoningStream._open(
            _native.start_reasoning(self._native, session_id, scope, sid, reasoning_id, message_id))
