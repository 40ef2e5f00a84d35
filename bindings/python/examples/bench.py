"""Commands/s from Python against the same commands from Rust, on the same
engine and store, in one run.

    python examples/bench.py [--turns-1 N] [--turns-64 N] [--dir DIR]

Each turn is 8 commands (message, start_run, start/finish tool call,
streamed text started/delta/completed, end_run). The Rust side runs the
identical turns through the binding's own protocol layer on the same
engine (``NativeEngine._bench_rust``), without Python in the loop.
"""

import argparse
import asyncio
import os
import statistics
import tempfile
import time

import narad

COMMANDS_PER_TURN = 8


async def turn(e: narad.Engine, sid: str) -> None:
    await e.message(sid, "what is the weather?")
    run = await e.start_run(sid)
    tool = await e.start_tool_call(sid, run, "weather", {"city": "Oslo"})
    await e.finish_tool_call(sid, tool, {"temp": 3})
    async with e.stream_text(sid, run) as s:
        await s.delta("It is 3 degrees.")
    await e.end_run(sid, run)


async def python_side(e: narad.Engine, sessions: int, turns: int) -> float:
    sids = [await e.create_session() for _ in range(sessions)]

    async def one(sid: str) -> None:
        for _ in range(turns):
            await turn(e, sid)

    t0 = time.perf_counter()
    await asyncio.gather(*(one(s) for s in sids))
    return COMMANDS_PER_TURN * sessions * turns / (time.perf_counter() - t0)


async def rust_side(e: narad.Engine, sessions: int, turns: int) -> float:
    commands, secs = await e._n()._bench_rust(sessions, turns)
    return commands / secs


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns-1", type=int, default=150)
    ap.add_argument("--turns-64", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--backends", default="redb,sqlite")
    a = ap.parse_args()
    d = a.dir or tempfile.mkdtemp(prefix="narad-bench-")
    print(f"{'store':8} {'sessions':>8} {'rust cmd/s':>11} {'python cmd/s':>13} {'ratio':>6}"
          f" {'median ratio':>13}  (best of {a.rounds} interleaved rounds; median of per-round ratios)")
    for backend in a.backends.split(","):
        url = f"{backend}:{os.path.join(d, 'bench.' + backend)}"
        e = await narad.Engine.open(url)
        await python_side(e, 1, 3)  # warm up
        for sessions, turns in ((1, a.turns_1), (64, a.turns_64)):
            rust, py = [], []
            for _ in range(a.rounds):  # alternate, best of each
                rust.append(await rust_side(e, sessions, turns))
                py.append(await python_side(e, sessions, turns))
            r, p = max(rust), max(py)
            med = statistics.median(b / a for a, b in zip(rust, py))
            print(f"{backend:8} {sessions:>8} {r:>11.0f} {p:>13.0f} {p / r:>5.2f}x {med:>12.2f}x", flush=True)
        await e.close()


if __name__ == "__main__":
    asyncio.run(main())
