"""Commands/s from Python against the same commands from Rust, on the same
engine and store, in one run.

    python examples/bench.py [--turns-1 N] [--turns-64 N] [--rounds R]
                             [--slice-1 N] [--slice-64 N]
                             [--backends redb,sqlite] [--dir DIR]

Each turn is 8 commands (message, start_run, start/finish tool call,
streamed text started/delta/completed, end_run). The Python side runs the
turns through the public ``narad.Engine`` as asyncio tasks; the Rust side
runs the identical turns through the engine's typed API as tokio tasks
(``NativeEngine._bench_rust``), without Python in the loop. Within a
round the two sides take turns in short slices (``--slice-1`` and
``--slice-64`` turns each, on fresh sessions), and which side goes first
alternates, so a slow spell of the disk (an fsync can take several times
its usual time for a second) hits both sides alike; a side's rate in a
round is its commands over the time of all its slices. Every round is
printed; the summary is the median of each side and the median of the
per-round ratios (no best-of).

After each 1-session row, a breakdown of the Python side's time per
command, from the bridge's counters (``_native._bridge_stats``): the
engine's work in the first poll on the loop's thread, the wait for the
store, the hop from the store's completion back to the loop, the loop's
poll, and the rest (Python code and the asyncio loop's own turns). Then,
on Linux, after every row: each side's CPU time per command by thread (the
loop's thread, the engine's tokio threads and the store's threads), and
the other processes that ran meanwhile; each round also prints how many
cores other processes took during it, so a round slowed by the machine
(another job, the kernel writing back a build's files) shows as such.
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
    """Seconds for ``turns`` turns on each of ``sessions`` fresh sessions."""
    sids = [await e.create_session() for _ in range(sessions)]

    async def one(sid: str) -> None:
        for _ in range(turns):
            await turn(e, sid)

    t0 = time.perf_counter()
    await asyncio.gather(*(one(s) for s in sids))
    return time.perf_counter() - t0


async def rust_side(e: narad.Engine, sessions: int, turns: int) -> float:
    """The same, from Rust."""
    _, secs = await e._native._bench_rust(sessions, turns)
    return secs


def slices(turns: int, size: int) -> list:
    """``turns`` cut into slices of at most ``size``."""
    size = max(1, size)
    return [min(size, turns - i) for i in range(0, turns, size)]


def stats() -> dict:
    return narad._native._bridge_stats()


def cpu() -> dict:
    """Nanoseconds each group of this process's threads has run (Linux:
    ``/proc/self/task/*/schedstat``; empty elsewhere): the loop's thread,
    the engine's tokio threads, and the store's own threads."""
    out: dict = {}
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                ran = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
        group = ("loop" if int(tid) == os.getpid() else "engine" if name.startswith("narad-engine")
                 else "store" if name.startswith("narad-") else "other")
        out[group] = out.get(group, 0) + ran
    return out


def others() -> dict:
    """CPU seconds the machine's other processes have run so far, by name
    (Linux: ``/proc/*/stat``; empty elsewhere): what else ran beside the
    benchmark, including the kernel's own workers (``kworker``: disk
    writeback, also for this benchmark's commits)."""
    out: dict = {}
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]
        tick = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, AttributeError):
        return out
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
            name = stat[stat.index("(") + 1:stat.rindex(")")]
            if name.startswith("kworker/"):
                name = "kworker"  # the kernel's workers (their names change with the work)
            fields = stat[stat.rindex(")") + 2:].split()
            secs = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
        except (OSError, ValueError, IndexError):
            continue  # a process that ended meanwhile
        out[name] = out.get(name, 0.0) + secs
    return out


def add(total: dict, before: dict, after: dict) -> None:
    """Adds each counter's rise from ``before`` to ``after`` to ``total``."""
    for k in after:
        total[k] = total.get(k, 0) + after[k] - before.get(k, 0)


def breakdown(label: str, spent: dict, commands: int, secs: float, rust_rate: float) -> None:
    """Prints the Python side's microseconds per command by phase, and the
    Rust side's (median) for comparison (at one session, where a command's
    phases do not overlap another's)."""
    inline, store, hop, loop = (spent[k] / commands / 1000
                                for k in ("ns_inline_poll", "ns_pending_to_wake", "ns_wake_to_poll", "ns_loop_poll"))
    wall = secs * 1e6 / commands
    print(f"  {label:8}   1 session python us/cmd: wall {wall:.0f} = engine on loop (inline poll) {inline:.0f}"
          f" + store {store:.0f} + hop to loop {hop:.0f} + loop poll {loop:.0f}"
          f" + python/asyncio {wall - inline - store - hop - loop:.0f}; rust {1e6 / rust_rate:.0f}", flush=True)


def cpu_line(label: str, sessions: int, commands: int, cpu_py: dict, cpu_rust: dict) -> None:
    """Prints the CPU time per command of each group of threads, on each
    side (Linux only; the wall gap at one session is the part of the Python
    side's time that is not CPU: waiting for its loop to wake)."""
    if not cpu_py:
        return

    def per(c: dict) -> str:
        return ", ".join(f"{g} {c.get(g, 0) / commands / 1000:.0f}" for g in ("loop", "engine", "store"))
    print(f"  {label:8} {sessions:>3} sessions cpu us/cmd: python side: {per(cpu_py)}; rust side: {per(cpu_rust)}",
          flush=True)


async def measure(e: narad.Engine, sessions: int, turns: int, rounds: int, slice_turns: int,
                  label: str) -> float:
    rust, py = [], []
    spent, py_secs = dict.fromkeys(stats(), 0), 0.0
    cpu_py: dict = {}
    cpu_rust: dict = {}

    async def rust_slice(k: int) -> float:
        c0 = cpu()
        secs = await rust_side(e, sessions, k)
        add(cpu_rust, c0, cpu())
        return secs

    busy: dict = {}
    for r in range(rounds):
        rust_secs = python_secs = 0.0
        o0, t0 = others(), time.perf_counter()
        for i, k in enumerate(slices(turns, slice_turns)):
            python_first = (r + i) % 2 == 0
            if not python_first:
                rust_secs += await rust_slice(k)
            before, c0 = stats(), cpu()
            python_secs += await python_side(e, sessions, k)
            add(spent, before, stats())
            add(cpu_py, c0, cpu())
            if python_first:
                rust_secs += await rust_slice(k)
        commands = COMMANDS_PER_TURN * sessions * turns
        py.append(commands / python_secs)
        rust.append(commands / rust_secs)
        py_secs += python_secs
        rose = {k: v - o0.get(k, 0.0) for k, v in others().items() if v > o0.get(k, 0.0)}
        add(busy, {}, rose)
        print(f"  {label:8} {sessions:>3} sessions round {r + 1}: rust {rust[-1]:8.0f}  python {py[-1]:8.0f}"
              f"  ratio {py[-1] / rust[-1]:5.2f}  other processes {sum(rose.values()) / (time.perf_counter() - t0):.2f}"
              " cores", flush=True)
    ratios = [p / q for p, q in zip(py, rust)]
    med = statistics.median(ratios)
    print(f"{label:8} {sessions:>8} {statistics.median(rust):>11.0f} {statistics.median(py):>13.0f}"
          f" {med:>12.2f}x  (rounds: {' '.join(f'{x:.2f}' for x in ratios)})", flush=True)
    row_commands = COMMANDS_PER_TURN * sessions * turns * rounds
    if sessions == 1:
        breakdown(label, spent, row_commands, py_secs, statistics.median(rust))
    cpu_line(label, sessions, row_commands, cpu_py, cpu_rust)
    if busy:
        top = sorted(busy.items(), key=lambda kv: -kv[1])[:3]
        print(f"  {label:8} {sessions:>3} sessions: busiest other processes (CPU seconds): "
              + ", ".join(f"{name} {secs:.2f}" for name, secs in top), flush=True)
    return med


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns-1", type=int, default=150, help="turns per round at 1 session")
    ap.add_argument("--turns-64", type=int, default=6, help="turns per session per round at 64 sessions")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--slice-1", type=int, default=20, help="turns per slice at 1 session")
    ap.add_argument("--slice-64", type=int, default=3, help="turns per session per slice at 64 sessions")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--backends", default="redb,sqlite")
    a = ap.parse_args()
    if a.dir:
        await bench(a, a.dir)
    else:
        with tempfile.TemporaryDirectory(prefix="narad-bench-") as d:
            await bench(a, d)


async def bench(a: argparse.Namespace, d: str) -> None:
    """Runs the benchmark on stores inside the directory ``d``."""
    inline = os.environ.get("NARAD_INLINE_LIMIT", "default")
    loop_polls = os.environ.get("NARAD_LOOP_POLLS", "default")
    print(f"NARAD_INLINE_LIMIT={inline} NARAD_LOOP_POLLS={loop_polls}; {a.rounds} interleaved rounds per row; "
          f"{a.turns_1} turns at 1 session, {a.turns_64} turns x 64 sessions, in alternating slices of "
          f"{a.slice_1} and {a.slice_64} turns; 8 commands per turn")
    print(f"{'store':8} {'sessions':>8} {'rust cmd/s':>11} {'python cmd/s':>13} {'median ratio':>13}"
          "  (medians; per-round python/rust ratios)")
    t0 = time.perf_counter()
    for backend in a.backends.split(","):
        url = f"{backend}:{os.path.join(d, 'bench.' + backend)}"
        e = await narad.Engine.open(url)
        await python_side(e, 4, 3)  # warm up both sides (caches, threads)
        await rust_side(e, 4, 3)
        for sessions, turns, size in ((1, a.turns_1, a.slice_1), (64, a.turns_64, a.slice_64)):
            await measure(e, sessions, turns, a.rounds, size, backend)
        await e.close()
    print(f"total {time.perf_counter() - t0:.1f}s")


if __name__ == "__main__":
    asyncio.run(main())
