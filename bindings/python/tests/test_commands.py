"""Every command of the Python surface, on redb and SQLite."""

import asyncio
import datetime as dt

import pytest

import narad


async def test_session_run_tools_interrupt_text_and_end(url):
    e = await narad.Engine.open(url)
    sid = await e.create_session(workspace_id="ws")
    mid = await e.message(sid, "hello")
    assert mid
    run = await e.start_run(sid)
    assert isinstance(run, str) and not run.queued
    tool = await e.start_tool_call(sid, run, "search", {"q": "x"})
    iid, wait = await e.request_interrupt(sid, run, kind="approval", actions=["approve", "deny"],
                                          input={"why": "send"})
    st = await e.state(sid)
    assert st.runs[run].state == "paused"
    assert [i.interrupt_id for i in st.open_interrupts] == [iid]
    assert st.open_interrupts[0].wait_id == wait and st.open_interrupts[0].actions == ["approve", "deny"]
    assert st.tool_calls[tool].state == "open"
    listed = await e.open_interrupts()
    assert [i["interruptId"] for i in listed["open"]] == [iid]
    assert await e.resolve_interrupt(iid, "approve", reason="ok") == sid
    await e.finish_tool_call(sid, tool, {"hits": 3})
    async with e.stream_text(sid, run) as s:
        await s.delta("Hel")
        await s.delta("lo")
    assert s.completed and s.text == "Hello"
    await e.end_run(sid, run, usage={"inputTokens": 3})
    st = await e.state(sid)
    assert st.runs[run].state == "finished"
    assert st.tool_calls[tool].state == "finished"
    assert st.open_interrupts == [] and st.active is None
    assert [(m.role, m.content, m.completed) for m in st.transcript] == [
        ("user", "hello", True), ("assistant", "Hello", True)]
    page = await e.history(sid)
    types = [ev.type for ev in page.events]
    assert types == ["message.user.recorded", "run.started", "tool.call.started", "interrupt.requested",
                     "run.paused", "interrupt.resolved", "run.resumed", "tool.call.finished",
                     "message.text.started", "message.text.delta", "message.text.delta",
                     "message.text.completed", "run.finished"]
    assert [ev.session_sequence for ev in page.events] == list(range(1, 14))
    assert all(isinstance(ev.raw, bytes) and ev.data["sessionId"] == sid for ev in page.events)
    second = await e.history(sid, after=10, limit=2)
    assert [ev.session_sequence for ev in second.events] == [11, 12]
    caps = await e.capabilities(sid)
    assert caps["sessionSequence"] == 13 and caps["activeExecution"] is None
    await e.close()


async def test_queue_stop_pause_workflow_append_and_expiry(url):
    e = await narad.Engine.open(url)
    sid = await e.create_session("s-1", profiles="all")
    assert sid == "s-1"
    first = await e.start_run(sid, run_id="r-1")
    queued = await e.start_run(sid, queue=True)
    assert queued.queued
    child = await e.start_run(sid, parent_run_id=first)
    wait = await e.pause_run(sid, child, "rate_limited")
    await e.resume_run(sid, child, wait)
    await e.start_tool_call(sid, child, "slow")
    ev = await e.append(sid, "progress.recorded", {"progressId": "p1", "category": "step", "label": "half", "status": "active", "privacy": "public"},
                        run_id=first)
    assert ev.type == "progress.recorded" and ev.data["runId"] == first
    assert await e.stop(sid) == first
    st = await e.state(sid)
    assert st.runs[first].state == "cancelled" and st.runs[child].state == "cancelled"
    # The stop freed the slot: the queued start began in the same batch.
    assert st.runs[queued].state == "running"
    await e.drain_queue(sid)
    await e.end_run(sid, queued, status="error", code="model_failed", message="The model failed.")
    wf = await e.start_workflow(sid, "wf-1")
    assert wf == "wf-1"
    wrun = await e.start_run(sid, workflow_id=wf)
    iid, _ = await e.request_interrupt(sid, wrun, expires_at=dt.datetime.now(dt.timezone.utc)
                                       + dt.timedelta(milliseconds=300))
    await asyncio.sleep(0.4)
    assert await e.expire_due() == [iid]
    await e.end_run(sid, wrun, status="cancelled")
    st = await e.state(sid)
    assert st.runs[wrun].state == "cancelled" and st.active == {"workflow": wf}
    await e.close()


async def test_stream_text_aborts_cleanly_on_exception(url):
    e = await narad.Engine.open(url)
    sid = await e.create_session()
    run = await e.start_run(sid)
    with pytest.raises(RuntimeError, match="model died"):
        async with e.stream_text(sid, run) as s:
            await s.delta("partial")
            raise RuntimeError("model died")
    st = await e.state(sid)
    # The stream is closed (no dangling open message), the text kept.
    assert [(m.content, m.completed) for m in st.transcript] == [("partial", True)]
    await e.end_run(sid, run, status="error", code="model_failed", message="The model failed.")
    assert (await e.state(sid)).runs[run].state == "error"
    await e.close()


async def test_times_the_protocol_cannot_name_are_bounded_or_refused(url):
    # A deadline past the year 9999 is written as the latest timestamp; a
    # time past what the engine's clock type holds is a refusal, as is a
    # clock that would start there. Each used to raise a Rust panic.
    e = await narad.Engine.open(url)
    sid = await e.create_session()
    run = await e.start_run(sid)
    await e.request_interrupt(sid, run, expires_at=1e15)
    listed = await e.open_interrupts()
    assert [i["expiresAt"] for i in listed["open"]] == ["9999-12-31T23:59:59.999Z"]
    with pytest.raises(narad.InvalidCommandError):
        await e.pause_run(sid, run, "later", retry_at=1e300)
    await e.close()
    with pytest.raises(ValueError):
        narad.ManualClock(1e300)
    clock = narad.ManualClock(0)
    clock.advance(1e19)
    clock.advance(1e19)
    assert clock.now() >= 253_402_300_799
