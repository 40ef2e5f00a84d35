"""A scripted agent loop (no LLM) on the Narad engine: streamed text, a
backend tool, a client tool run by a client executor exactly once, an
approval, and a UI task that attaches and renders the session live.

    python examples/agent.py [STORE_URL]      # default: a temporary SQLite file
"""

import asyncio
import os
import sys
import tempfile

import narad


async def ui(engine: narad.Engine, sid: str, done: asyncio.Event) -> list:
    """A UI: attach (hydrate, then live events without gap) and render."""
    seen = []
    async for item in engine.attach(sid):
        seen.append(item.type)
        if item.type == "messages.snapshot":
            print(f"[ui] hydrate: {len(item.data['messages'])} message(s)")
        elif item.type == "message.text.delta":
            print(f"[ui] assistant: {item.data['delta']!r}")
        elif item.type == "interrupt.requested":
            print(f"[ui] approval needed: {item.data['input']}")
        elif item.type == "tool.call.finished":
            print(f"[ui] tool {item.data['toolCallId'][:12]}… {item.data['outcome']}")
        elif item.type == "run.finished":
            print("[ui] run finished")
            break
    done.set()
    return seen


async def client_executor(engine: narad.Engine, ledger_url: str) -> int:
    """A desktop client executor: runs `read_file` once per execution."""
    ran = 0

    async def read_file(name: str, args: dict) -> dict:
        nonlocal ran
        ran += 1
        return {"path": args["path"], "bytes": 42}

    ex = await narad.ClientToolExecutor.open(ledger_url, "desktop-1")
    while True:
        h = await ex.serve_once(engine, read_file, timeout=5)
        if h is None or h.kind == "finish":
            return ran


async def agent(engine: narad.Engine, sid: str) -> None:
    """The scripted agent loop: think, call tools, ask for approval, answer."""
    await engine.message(sid, "Summarize notes.txt and email it to Bo.")
    run = await engine.start_run(sid, client_executor_id="desktop-1")
    try:
        async with engine.stream_text(sid, run) as s:
            for word in ["Reading ", "your ", "notes…"]:
                await s.delta(word)
        # A client tool: the executor on the user's machine runs it.
        await engine.start_tool_call(sid, run, "read_file", {"path": "notes.txt"}, client=True)
        while any(t.state == "open" for t in (await engine.state(sid)).tool_calls.values()):
            await asyncio.sleep(0.01)
        # A backend tool that needs an approval first.
        tool = await engine.start_tool_call(sid, run, "send_email", {"to": "bo@example.com"})
        iid, _ = await engine.request_interrupt(sid, run, kind="approval", actions=["approve", "deny"],
                                                input={"tool": "send_email", "to": "bo@example.com"})
        await asyncio.sleep(0.05)  # a human clicks "approve" in the UI
        await engine.resolve_interrupt(iid, "approve")
        await engine.finish_tool_call(sid, tool, {"sent": True})
        async with engine.stream_text(sid, run) as s:
            await s.delta("Done: the summary was emailed to Bo.")
        await engine.end_run(sid, run, usage={"inputTokens": 120, "outputTokens": 30})
    except Exception:
        await engine.stop(sid, run)
        raise


async def main() -> None:
    with tempfile.TemporaryDirectory(prefix="narad-agent-") as d:
        await run_in(d)


async def run_in(d: str) -> None:
    """Runs the example on stores inside the scratch directory ``d``."""
    url = sys.argv[1] if len(sys.argv) > 1 else f"sqlite:{os.path.join(d, 'agent.sqlite')}"
    engine = await narad.Engine.open(url)
    await engine.attach_client("desktop-1")
    sid = await engine.create_session()
    done = asyncio.Event()
    ui_task = asyncio.create_task(ui(engine, sid, done))
    exec_task = asyncio.create_task(client_executor(engine, f"redb:{os.path.join(d, 'ledger.redb')}"))
    await agent(engine, sid)
    ran = await exec_task
    seen = await asyncio.wait_for(ui_task, 10)
    st = await engine.state(sid)
    assert ran == 1, "the client tool ran exactly once"
    assert st.runs and all(r.state == "finished" for r in st.runs.values())
    assert "run.finished" in seen
    print(f"[agent] ok: {len(st.transcript)} messages, {len(st.tool_calls)} tool calls, "
          f"client tool ran {ran}x, head {st.head}")
    await engine.close()


if __name__ == "__main__":
    asyncio.run(main())
