"""The asyncio bridge's paths, read from the extension's counters (no timing)."""

import asyncio
import sqlite3

import narad
from narad import _native

INLINE_PENDING, LOOP_READY, LOOP_PENDING, SPAWNED = "inline_pending", "loop_ready", "loop_pending", "spawned"


async def _turns(e: narad.Engine, sid: str, n: int) -> dict:
    before = _native._bridge_stats()
    for _ in range(n):
        run = await e.start_run(sid)
        tool = await e.start_tool_call(sid, run, "weather", {"city": "Oslo"})
        await e.finish_tool_call(sid, tool, {"temp": 3})
        await e.end_run(sid, run)
    after = _native._bridge_stats()
    return {k: after[k] - before[k] for k in after}


async def _ten_turns_with(url: str, setting, value) -> dict:
    """The bridge's counters over ten turns on a fresh session, with one
    of its settings (``_native._set_loop_polls``, ``_set_spin_us``) at
    ``value`` meanwhile; every run must have finished."""
    e = await narad.Engine.open(url)
    sid = await e.create_session()
    was = setting(value)
    try:
        d = await _turns(e, sid, 10)
    finally:
        setting(was)
    st = await e.state(sid)
    assert len(st.runs) == 10 and all(r.state == "finished" for r in st.runs.values())
    await e.close()
    return d


async def test_first_wake_is_polled_on_the_loop(url):
    # One session: each command is polled inline and waits for the store;
    # the store's completion queues a poll on the loop, which finishes the
    # command there. Only a command still waiting after that poll goes to a
    # tokio worker, so worker hand-overs are at most the loop polls that waited.
    d = await _ten_turns_with(url, _native._set_loop_polls, None)
    assert d[INLINE_PENDING] > 0
    assert d[LOOP_READY] + d[LOOP_PENDING] > 0
    assert d[LOOP_READY] > d[LOOP_PENDING]
    assert d[SPAWNED] <= d[LOOP_PENDING]


async def _turns_until_a_loop_poll_waits(e: narad.Engine, sid: str) -> dict:
    # Whether an end_run's queue read waits depends on the store's timing,
    # so turns run in batches until some loop poll waited (or 20 batches).
    total = dict.fromkeys(_native._bridge_stats(), 0)
    for _ in range(20):
        d = await _turns(e, sid, 10)
        total = {k: total[k] + d[k] for k in total}
        if total[LOOP_PENDING] > 0:
            break
    return total


async def test_a_command_that_waits_twice_finishes_on_the_loop(url):
    # end_run waits twice (it reads the session's queue, then appends): its
    # second wake-up is polled on the loop as well, so no command of these
    # turns goes to a worker (with one loop poll each such end_run does: a
    # third thread hop, store -> worker -> loop). The session's first
    # command loads it into the cache (more waits), so it is not counted.
    # Automatic snapshots are off: a snapshot is encoded on the blocking
    # pool, one more wait for the command whose batch carries it, which
    # would then move to a worker whenever the turns reach the interval.
    e = await narad.Engine.open(url, config=narad.EngineConfig(snapshot_every=0))
    sid = await e.create_session()
    was = _native._set_loop_polls(None)
    try:
        await _turns(e, sid, 1)
        d = await _turns_until_a_loop_poll_waits(e, sid)
        _native._set_loop_polls(1)
        one = await _turns_until_a_loop_poll_waits(e, sid)
    finally:
        _native._set_loop_polls(was)
    assert d[LOOP_PENDING] > 0, d  # a first loop poll waited...
    assert d[SPAWNED] == 0, d  # ...and the second finished the call on the loop
    assert one[LOOP_PENDING] > 0
    assert one[SPAWNED] >= one[LOOP_PENDING]  # with one loop poll, such a call moves
    st = await e.state(sid)
    assert all(r.state == "finished" for r in st.runs.values())
    await e.close()


async def test_first_wake_can_go_to_a_worker(url):
    # The measured alternative (NARAD_LOOP_POLLS=0): the first wake-up moves
    # the call onto a worker and the loop only receives its output.
    d = await _ten_turns_with(url, _native._set_loop_polls, 0)
    assert d[LOOP_READY] + d[LOOP_PENDING] == 0
    assert d[SPAWNED] >= d[INLINE_PENDING] > 0


def test_a_command_in_flight_when_its_loop_closes_still_finishes(url):
    # The command waits for the store when its loop closes: its poll, queued
    # for that loop, goes to a tokio worker instead, so it finishes and the
    # session takes the next command from another loop.
    first = asyncio.new_event_loop()

    async def start() -> tuple:
        e = await narad.Engine.open(url)
        sid = await e.create_session()
        run = await e.start_run(sid)
        e._native.message(sid, "in flight", None, None)  # not awaited
        return e, sid, run

    was = _native._set_loop_polls(None)
    try:
        e, sid, run = first.run_until_complete(start())
        first.close()
    finally:
        _native._set_loop_polls(was)

    async def after() -> None:
        await asyncio.wait_for(e.message(sid, "after"), 10)
        await asyncio.wait_for(e.end_run(sid, run), 10)
        st = await e.state(sid)
        assert [m.content for m in st.transcript] == ["in flight", "after"]
        await e.close()

    second = asyncio.new_event_loop()
    try:
        second.run_until_complete(after())
    finally:
        second.close()


SPIN_SLICES, SPIN_CAUGHT = "spin_slices", "spin_caught"


async def test_the_loop_spins_for_a_wait_and_stops_when_idle(url):
    # One session: while a command waits for the store, the loop spins
    # (src/spin.rs) and its spinner handles the completion; once nothing is
    # in flight it stops, so an idle loop spins no more slices. A limit of
    # 1 s keeps a slow disk from turning the spin off (its waits would then
    # average over the default limit).
    e = await narad.Engine.open(url)
    sid = await e.create_session()
    was = _native._set_spin_us(1_000_000)
    try:
        await _turns(e, sid, 1)
        d = await _turns(e, sid, 10)
        idle = _native._bridge_stats()[SPIN_SLICES]
        await asyncio.sleep(0.05)
        still = _native._bridge_stats()[SPIN_SLICES]
    finally:
        _native._set_spin_us(was)
    assert d[SPIN_CAUGHT] > 0 and d[SPIN_SLICES] >= d[SPIN_CAUGHT]
    assert still == idle, "the loop spun with no command in flight"
    await e.close()


async def test_spinning_can_be_turned_off(url):
    # NARAD_SPIN_US=0 (here `_set_spin_us(0)`): the loop sleeps while a
    # command waits, and the store's completion wakes it through the pipe.
    d = await _ten_turns_with(url, _native._set_spin_us, 0)
    assert d[SPIN_SLICES] == 0
    assert d[INLINE_PENDING] > 0 and d[LOOP_READY] > 0


async def test_other_tasks_run_while_the_loop_spins(tmp_path):
    # A spin slice holds the loop at most 50 us (GIL released), then gives
    # it back. Another connection holds SQLite's write lock, so the
    # command's commit waits (busy timeout) until a task on this same loop
    # releases the lock after 200 turns of its own: a spinner that kept the
    # loop for the whole wait would never let it, and the command would
    # fail at the busy timeout instead.
    path = tmp_path / "store.sqlite"
    e = await narad.Engine.open(f"sqlite:{path}")
    sid = await e.create_session()
    await e.message(sid, "before")
    blocker = sqlite3.connect(str(path), isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    ticks = 0

    async def release_after_200_turns() -> None:
        nonlocal ticks
        while ticks < 200:
            ticks += 1
            await asyncio.sleep(0)
        blocker.execute("ROLLBACK")

    was = _native._set_spin_us(10_000_000)
    try:
        before = _native._bridge_stats()
        t = asyncio.ensure_future(release_after_200_turns())
        await asyncio.wait_for(e.message(sid, "waits for the lock"), 5)
        after = _native._bridge_stats()
        await t
    finally:
        _native._set_spin_us(was)
        blocker.close()
    assert ticks == 200
    assert after[SPIN_SLICES] - before[SPIN_SLICES] > 1, "the loop did not spin through the wait"
    st = await e.state(sid)
    assert [m.content for m in st.transcript] == ["before", "waits for the lock"]
    await e.close()


def test_the_binding_turns_on_the_writers_polling():
    # The import set it from NARAD_WRITER_SPIN_US (default 200 us): the
    # loop's thread keeps running after it queues an append, so a sleeping
    # writer would cost every append a wake-up (src/spin.rs).
    import os

    want = min(int(os.environ.get("NARAD_WRITER_SPIN_US", "200")), 10_000)
    assert _native._writer_spin_us() == want


def test_absurd_spin_settings_are_bounded():
    # A writer polls for the whole limit after the last append, and the
    # loop spins through any wait shorter than its limit: a limit of years
    # would keep a core busy. Both are taken as 10 ms.
    import os
    import subprocess
    import sys

    probe = (
        "from narad import _native; "
        "print(_native._writer_spin_us(), _native._set_spin_us(None))"
    )
    huge = str(2**64 - 1)
    env = dict(os.environ, NARAD_WRITER_SPIN_US=huge, NARAD_SPIN_US=huge)
    out = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["10000", "10000"]
