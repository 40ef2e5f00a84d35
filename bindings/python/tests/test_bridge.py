"""The asyncio bridge's paths, read from the extension's counters (no timing)."""

import narad
from narad import _native

INLINE_PENDING, LOOP_READY, LOOP_PENDING, SPAWNED = 1, 2, 3, 4


async def _turns(e: narad.Engine, sid: str, n: int) -> list:
    before = _native._bridge_stats()
    for _ in range(n):
        run = await e.start_run(sid)
        tool = await e.start_tool_call(sid, run, "weather", {"city": "Oslo"})
        await e.finish_tool_call(sid, tool, {"temp": 3})
        await e.end_run(sid, run)
    return [b - a for a, b in zip(before, _native._bridge_stats())]


async def test_first_wake_is_polled_on_the_loop(url):
    # One session: each command is polled inline and waits for the store;
    # the store's completion queues a poll on the loop, which finishes the
    # command there. Only a command still waiting after that poll goes to a
    # tokio worker, so worker hand-overs are at most the loop polls that waited.
    e = await narad.Engine.open(url)
    sid = await e.create_session()
    was = _native._set_loop_wake(True)
    try:
        d = await _turns(e, sid, 10)
    finally:
        _native._set_loop_wake(was)
    assert d[INLINE_PENDING] > 0
    assert d[LOOP_READY] + d[LOOP_PENDING] > 0
    assert d[LOOP_READY] > d[LOOP_PENDING]
    assert d[SPAWNED] <= d[LOOP_PENDING]
    st = await e.state(sid)
    assert len(st.runs) == 10 and all(r.state == "finished" for r in st.runs.values())
    await e.close()


async def test_first_wake_can_go_to_a_worker(url):
    # The measured alternative (NARAD_LOOP_WAKE=0): the first wake-up moves
    # the call onto a worker and the loop only receives its output.
    e = await narad.Engine.open(url)
    sid = await e.create_session()
    was = _native._set_loop_wake(False)
    try:
        d = await _turns(e, sid, 10)
    finally:
        _native._set_loop_wake(was)
    assert d[LOOP_READY] + d[LOOP_PENDING] == 0
    assert d[SPAWNED] >= d[INLINE_PENDING] > 0
    st = await e.state(sid)
    assert len(st.runs) == 10 and all(r.state == "finished" for r in st.runs.values())
    await e.close()
