"""How long the asyncio loop stalls while the engine serves a long session.

A ticker task wakes every millisecond; for each call on a session of
``--messages`` messages (default 100k), this prints the call's time and the
longest gap between two ticks while it ran (the stall every other task of
the loop saw). A figure, not a test: run it beside a change to see whether
some call now does its work on the loop's thread.

    python bindings/python/examples/loop_stall.py --messages 100000
"""

import argparse
import asyncio
import json
import os
import tempfile
import time
from typing import Any, Awaitable, Callable, List

import narad


async def measured(label: str, call: Callable[[], Awaitable[Any]]) -> Any:
    """Runs ``call()`` beside a 1 ms ticker; prints its time and the
    longest gap between ticks."""
    stop = asyncio.Event()
    gaps: List[float] = []

    async def ticker() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    gaps.clear()
    t0 = time.perf_counter()
    out = await call()
    took = time.perf_counter() - t0
    stop.set()
    await task
    print(f"  {label:34} {took * 1e3:8.1f} ms   longest loop stall {max(gaps, default=0) * 1e3:6.1f} ms",
          flush=True)
    return out


def records(sid: str, n: int) -> List[bytes]:
    """``n`` user messages of one session, as stored records."""
    return [json.dumps({
        "content": f"message number {i} of a long session", "eventId": f"evt-{i}",
        "messageId": f"msg-{i}", "messageScope": "session", "protocolVersion": "narad/v1",
        "sessionId": sid, "sessionSequence": i + 1, "timestamp": "2026-12-06T00:00:00.000Z",
        "type": "message.user.recorded",
    }).encode() for i in range(n)]


async def run(url: str, n: int) -> None:
    """Measures each call on ``url``'s store."""
    e = await narad.Engine.open(url)
    sid = "session-long"
    recs = records(sid, n)
    await measured(f"import_records ({n} events)", lambda: e.import_records(recs))
    del recs
    await measured("message (writes a snapshot)", lambda: e.message(sid, "one more"))
    st = await measured("state()", lambda: e.state(sid))
    assert len(st.transcript) == n + 1
    del st

    async def attach_first() -> narad.AttachItem:
        att = e.attach(sid)
        item = await att.__anext__()
        await att.aclose()
        return item

    await measured("attach (first item)", attach_first)
    await measured("hydrate_records()", lambda: e.hydrate_records(sid))
    await measured("history (1000 events)", lambda: e.history(sid))
    await measured(f"state_at({n // 2})", lambda: e.state_at(sid, n // 2))
    await measured(f"fork (through {n})", lambda: e.fork(sid, n))
    await e.close()


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--backends", default="redb,sqlite")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="narad-stall-") as d:
        for backend in a.backends.split(","):
            print(f"{backend}: a session of {a.messages} messages", flush=True)
            await run(f"{backend}:{os.path.join(d, 'stall.' + backend)}", a.messages)


if __name__ == "__main__":
    asyncio.run(main())
