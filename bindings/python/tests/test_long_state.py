"""A long session's state is read without stalling the event loop: the
engine's copy is made on a worker, and the dataclasses are built in slices
with the loop running between them (counted, not timed)."""

import asyncio
import json

import narad
from narad import _more, _native, _state

SPAWNED, INLINE_READY, INLINE_PENDING = "spawned", "inline_ready", "inline_pending"
SLICE = 512  # the extension's SLICE_ITEMS
IMPORT_SLICE = 4096  # records import_records copies per loop turn


def _started_on_a_worker(before: dict, after: dict) -> None:
    """The one call between the two counter reads skipped the inline poll."""
    assert after[SPAWNED] - before[SPAWNED] == 1
    assert after[INLINE_READY] == before[INLINE_READY]
    assert after[INLINE_PENDING] == before[INLINE_PENDING]


class _Turns:
    """Another task, turning beside a call: the most ``counter[0]`` moved
    between two of its turns (all of it, if the call did its work in one
    go on the loop)."""

    def __init__(self, counter: list) -> None:
        self.counter, self.most = counter, 0
        self._stop = asyncio.Event()

    async def _turn(self) -> None:
        last = self.counter[0]
        while not self._stop.is_set():
            await asyncio.sleep(0)
            self.most = max(self.most, self.counter[0] - last)
            last = self.counter[0]

    async def __aenter__(self) -> "_Turns":
        self._task = asyncio.create_task(self._turn())
        await asyncio.sleep(0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        await self._task


def _records(sid: str, n: int) -> list:
    return [json.dumps({
        "content": f"message {i}", "eventId": f"evt-{i}", "messageId": f"msg-{i}",
        "messageScope": "session", "protocolVersion": "narad/v1", "sessionId": sid,
        "sessionSequence": i + 1, "timestamp": "2026-12-06T04:37:39.735Z",
        "type": "message.user.recorded",
    }).encode() for i in range(n)]


async def test_a_long_transcript_is_built_in_slices_with_the_loop_running_between(url, monkeypatch):
    e = await narad.Engine.open(url)
    sid, n = "session-long", 5 * SLICE + 7
    await e.import_records(_records(sid, n))

    built = [0]

    class Counted(_state.Message):
        def __init__(self, *a: object) -> None:
            built[0] += 1
            super().__init__(*a)

    monkeypatch.setattr(_state, "Message", Counted)
    async with _Turns(built) as turns:
        before = _native._bridge_stats()
        st = await e.state(sid)
        after = _native._bridge_stats()

    assert [m.content for m in st.transcript] == [f"message {i}" for i in range(n)]
    assert built[0] == n
    assert 0 < turns.most <= SLICE
    # The engine's call started on a worker, not with a poll on the loop.
    _started_on_a_worker(before, after)
    await e.close()


async def test_a_state_read_in_slices_equals_the_engines(url):
    # Runs, tool calls, messages and reasoning past one slice each: the
    # sliced reading loses and repeats nothing.
    e = await narad.Engine.open(url)
    sid = await e.create_session()
    turns = SLICE + 1
    for i in range(turns):
        await e.message(sid, f"q{i}")
        run = await e.start_run(sid)
        tool = await e.start_tool_call(sid, run, "t", {"i": i})
        await e.finish_tool_call(sid, tool, {"ok": i})
        async with e.stream_text(sid, run) as s:
            async with await s.reasoning() as r:
                await r.delta(f"thinking {i}")
            await s.delta(f"a{i}")
        await e.end_run(sid, run)
    st = await e.state(sid)
    assert len(st.runs) == turns and len(st.tool_calls) == turns
    assert all(r.state == "finished" for r in st.runs.values())
    assert [m.content for m in st.transcript] == [x for i in range(turns) for x in (f"q{i}", f"a{i}")]
    assert [r.content for r in st.reasoning] == [f"thinking {i}" for i in range(turns)]
    assert list(st.runs) == sorted(st.runs) and list(st.tool_calls) == sorted(st.tool_calls)
    await e.close()


async def test_attach_to_a_long_session_renders_its_hydrate_on_a_worker(url):
    # The hydrate records are rendered on a worker; a record's type is read
    # there, and its data is parsed only when asked for (a caller that
    # forwards raw bytes never parses a long transcript on the loop).
    e = await narad.Engine.open(url)
    sid, n = "session-long", 3 * SLICE
    await e.import_records(_records(sid, n))
    before = _native._bridge_stats()
    att = e.attach(sid)
    first = await att.__anext__()
    _started_on_a_worker(before, _native._bridge_stats())
    assert first.type == "messages.snapshot"
    assert first._data is None  # not parsed yet
    assert first.data == json.loads(first.raw)
    assert [m["content"] for m in first.data["messages"]] == [f"message {i}" for i in range(n)]
    assert first == narad.AttachItem(first.type, None, first.raw)
    await att.aclose()
    await e.close()


async def test_hydrate_records_of_a_long_session_are_parsed_in_slices(url, monkeypatch):
    # The messages of a long `messages.snapshot` are parsed a slice per
    # loop turn (parses counted, not timed), and the records equal the
    # exact bytes' parse, keys in their order.
    e = await narad.Engine.open(url)
    sid, n = "session-long", 3 * SLICE + 5
    recs = _records(sid, n)
    recs[1] = recs[1].replace(b"message 1", "é \\\"q\\\" \\n \\u2713 😀".encode())
    await e.import_records(recs)
    parsed, real_loads = [0], json.loads

    def counted(s: object, *a: object, **k: object) -> object:
        parsed[0] += 1
        return real_loads(s, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(json, "loads", counted)
    async with _Turns(parsed) as turns:
        head, records = await e.hydrate_records(sid)
    monkeypatch.undo()
    # The base, then one parse per slice, with the loop turning between.
    assert head == n and parsed[0] == 1 + -(-n // SLICE)
    assert turns.most == 1
    att = e.attach(sid)
    first = await att.__anext__()
    await att.aclose()
    assert first.type == "messages.snapshot"
    want = json.loads(first.raw)
    # Each hydrate is rendered afresh: its own snapshotId and timestamp.
    for fresh in ("snapshotId", "timestamp"):
        want[fresh] = records[0][fresh]
    assert records[0] == want and list(records[0]) == list(want)
    assert records[0]["messages"][1]["content"] == "é \"q\" \n ✓ 😀"
    assert len(records[0]["messages"]) == n
    await e.close()


async def test_a_long_import_is_copied_in_slices_with_the_loop_running_between(url, monkeypatch):
    e = await narad.Engine.open(url)
    sid, n = "session-long", 2 * IMPORT_SLICE + 5
    recs: list = _records(sid, n)
    recs[0], recs[1] = bytearray(recs[0]), memoryview(recs[1])  # bytes-like, as before
    copied = [0]

    def counted(r: object) -> bytes:
        copied[0] += 1
        return bytes(r)  # type: ignore[call-overload]

    monkeypatch.setattr(_more, "bytes", counted, raising=False)
    async with _Turns(copied) as turns:
        assert await e.import_records(recs) == (sid, n)
    assert copied[0] == n and turns.most == IMPORT_SLICE
    assert await e.import_records(iter(recs)) == (sid, 0)  # any iterable; a rerun appends nothing
    assert len((await e.state(sid)).transcript) == n
    await e.close()


async def test_a_history_page_is_read_on_a_worker_and_parsed_on_use(url):
    e = await narad.Engine.open(url)
    sid, n = "session-long", 3 * SLICE
    await e.import_records(_records(sid, n))
    before = _native._bridge_stats()
    page = await e.history(sid)
    _started_on_a_worker(before, _native._bridge_stats())
    events = list(page.events)
    while page.next is not None:
        page = await e.history(sid, after=page.next)
        events += page.events
    assert len(events) == n
    assert {item.type for item in events} == {"message.user.recorded"}
    assert all(item._data is None for item in events)  # not parsed yet
    assert [item.session_sequence for item in events] == list(range(1, n + 1))
    assert all(item.data == json.loads(item.raw) for item in events)
    await e.close()


async def test_a_long_text_stream_keeps_its_text(url):
    # Many deltas: the stream's text (read midway and at the end) and the
    # transcript agree with what was sent.
    e = await narad.Engine.open(url)
    sid = await e.create_session()
    run = await e.start_run(sid)
    parts = [f"token {i} " for i in range(3 * SLICE)]
    async with e.stream_text(sid, run) as s:
        for i, p in enumerate(parts):
            await s.delta(p)
            if i == SLICE:
                assert s.text == "".join(parts[: SLICE + 1])
    assert s.completed and s.text == "".join(parts)
    await e.end_run(sid, run)
    st = await e.state(sid)
    assert [m.content for m in st.transcript] == ["".join(parts)]
    await e.close()
