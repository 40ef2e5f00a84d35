"""A client tool runs exactly once: the executor accepts durably first."""

import asyncio

import narad


async def test_client_tool_runs_exactly_once(url, tmp_path):
    e = await narad.Engine.open(url)
    ex = await narad.ClientToolExecutor.open(f"redb:{tmp_path / 'ledger.redb'}", "desk-1")
    calls = []

    async def tool(name, args):
        calls.append((name, args))
        return {"read": args["path"]}

    await e.attach_client("desk-1")
    h = await ex.serve_once(e, tool, timeout=2)
    assert h.kind == "attached" and h.lease_id
    sid = await e.create_session()
    run = await e.start_run(sid, client_executor_id="desk-1")
    tc = await e.start_tool_call(sid, run, "read_file", {"path": "/a"}, client=True)
    msg = await e.outbox_next("desk-1", timeout=2)
    assert msg is not None
    first = await ex.handle(msg, tool)
    assert first.kind == "finish"
    assert await e.client_finish(first.finish) == "appended"
    # Duplicate delivery: not run again, the recorded finish comes back.
    again = await ex.handle(msg, tool)
    assert again.kind == "finish" and again.finish == first.finish
    assert await e.client_finish(again.finish) == "repeated"
    # A restarted executor process over the same ledger does not run it either.
    del ex
    ex2 = await narad.ClientToolExecutor.open(f"redb:{tmp_path / 'ledger.redb'}", "desk-1")
    third = await ex2.handle(msg, tool)
    assert third.kind == "finish" and third.finish == first.finish
    assert calls == [("read_file", {"path": "/a"})]
    st = await e.state(sid)
    assert st.tool_calls[tc].state == "finished"
    page = await e.history(sid)
    fin = [p for p in page.events if p.type == "tool.call.finished"]
    assert len(fin) == 1 and fin[0].data["response"] == {"read": "/a"}
    await e.end_run(sid, run)
    await e.close()


async def test_a_tool_that_raises_finishes_as_error_once(url, tmp_path):
    e = await narad.Engine.open(url)
    ex = await narad.ClientToolExecutor.open(f"sqlite:{tmp_path / 'ledger.sqlite'}", "w")
    n = []

    async def boom(name, args):
        n.append(1)
        raise ValueError("secret detail")

    await e.attach_client("w")
    await ex.serve_once(e, boom, timeout=2)
    sid = await e.create_session()
    run = await e.start_run(sid, client_executor_id="w")
    await e.start_tool_call(sid, run, "x", {}, client=True)
    h = await ex.serve_once(e, boom, timeout=2)
    assert h.kind == "finish" and b"secret" not in h.finish
    fin = [p for p in (await e.history(sid)).events if p.type == "tool.call.finished"]
    assert fin[0].data["outcome"] == "error" and fin[0].data["response"] == {"code": "tool_raised"}
    assert n == [1]
    await e.close()


async def test_authority_events_never_execute(url, tmp_path):
    e = await narad.Engine.open(url)
    ex = await narad.ClientToolExecutor.open(f"redb:{tmp_path / 'l.redb'}", "me")
    sid = await e.create_session()
    await e.message(sid, "hi")
    ev = (await e.history(sid)).events[0]

    async def never(name, args):
        raise AssertionError("ran")

    h = await ex.handle(ev.raw, never)
    assert h.kind == "ignored" and h.reason
    await e.close()


async def test_a_cancelled_handle_runs_its_tool_once_and_records_it(url, tmp_path):
    """Cancelling the call that handles a ``client.tool.execute`` while
    its tool runs does not stop the tool: it finishes, its finish is
    recorded, and a redelivery answers that finish without running the
    tool again."""
    e = await narad.Engine.open(url)
    ex = await narad.ClientToolExecutor.open(f"redb:{tmp_path / 'ledger.redb'}", "c")
    started, release, calls = asyncio.Event(), asyncio.Event(), []

    async def slow(name, args):
        calls.append(name)
        started.set()
        await release.wait()
        return {"done": True}

    await e.attach_client("c")
    await ex.serve_once(e, slow, timeout=2)
    sid = await e.create_session()
    run = await e.start_run(sid, client_executor_id="c")
    await e.start_tool_call(sid, run, "slow", {}, client=True)
    msg = await e.outbox_next("c", timeout=2)
    first = asyncio.ensure_future(ex.handle(msg, slow))
    await asyncio.wait_for(started.wait(), 5)
    first.cancel()
    release.set()
    for _ in range(500):
        again = await ex.handle(msg, slow)
        if again.kind == "finish":
            break
        assert again.kind == "accepted_before"
        await asyncio.sleep(0.01)
    assert again.kind == "finish" and calls == ["slow"]
    assert await e.client_finish(again.finish) == "appended"
    fin = [p for p in (await e.history(sid)).events if p.type == "tool.call.finished"]
    assert len(fin) == 1 and fin[0].data["outcome"] == "success"
    assert fin[0].data["response"] == {"done": True}
    await e.end_run(sid, run)
    await e.close()
