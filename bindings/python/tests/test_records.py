"""Typed recording commands, run controls, timers and watch streams, on
redb and SQLite."""

import asyncio

import pytest

import narad

T0 = 1_780_000_000


async def test_progress_documents_extensions_and_idempotent_message(url):
    e = await narad.Engine.open(url)
    sid = await e.create_session()
    assert await e.message(sid, "hi", message_id="turn-1") == "turn-1"
    assert await e.message(sid, "hi", message_id="turn-1") == "turn-1"  # a retry appends nothing
    with pytest.raises(narad.ConflictError) as ex:
        await e.message(sid, "other", message_id="turn-1")
    assert ex.value.code == "idempotency_conflict"
    run = await e.start_run(sid)
    pid = await e.record_progress(sid, run, "agent.phase", "Planning", detail="step 1")
    assert await e.record_progress(sid, run, "agent.phase", "Planned", progress_id=pid,
                                   status="completed") == pid
    with pytest.raises(narad.InvalidCommandError):
        await e.record_progress(sid, run, "agent.phase", "x", status="bogus")
    assert await e.put_document(sid, {"step": 1, "items": []}) == 1
    assert await e.patch_document(sid, [{"op": "replace", "path": "/step", "value": 2},
                                        {"op": "add", "path": "/items/-", "value": "a"}]) == 2
    assert await e.put_document(sid, {"view": "table"}, kind="ui", run_id=run) == 1
    with pytest.raises(narad.NaradError):
        await e.patch_document(sid, [{"op": "remove", "path": "/missing"}])
    ev = await e.record_custom(sid, "acme.note", {"n": 1}, run_id=run)
    assert ev["type"] == "run.custom" and ev["value"] == {"n": 1}
    raw = await e.record_raw(sid, "text/plain", "aGk=")
    assert raw["type"] == "session.raw" and raw["payload"] == "aGk="
    mid = await e.say(sid, "Done.", run_id=run)
    async with e.stream_text(sid, run) as s:
        async with await s.reasoning() as r:
            await r.delta("thinking")
        await s.delta("Answer")
    assert r.reasoning_id == f"reasoning:{s.message_id}"
    await e.end_run(sid, run, usage={"promptTokens": 3, "completionTokens": 2, "totalTokens": 5})
    st = await e.state(sid)
    assert st.documents["state:session"] == (2, {"step": 2, "items": ["a"]})
    assert st.documents[f"ui:run:{run}"] == (1, {"view": "table"})
    assert [(m.message_id, m.content) for m in st.transcript][-2:] == [(mid, "Done."), (s.message_id, "Answer")]
    assert [(x.message_id, x.content, x.completed) for x in st.reasoning] == [(s.message_id, "thinking", True)]
    types = [x.type for x in (await e.history(sid)).events]
    assert types.count("progress.recorded") == 2 and types.count("message.user.recorded") == 1
    run2 = await e.start_run(sid)
    with pytest.raises(narad.NaradError):
        await e.end_run(sid, run2, usage={"input_tokens": 3})  # the wire is camelCase
    await e.close()


async def test_pause_until_resumes_on_the_timer_pass(url):
    clock = narad.ManualClock(T0)
    e = await narad.Engine.open(url, clock=clock, sequential_ids=True)
    sid = await e.create_session()
    assert sid == "session-1"
    run = await e.start_run(sid)
    assert run == "run-2"  # one counter across kinds
    wait = await e.pause_run(sid, run, "rate_limited", retry_at=T0 + 30)
    assert (await e.state(sid)).runs[run].state == "paused"
    paused = [x for x in (await e.history(sid)).events if x.type == "run.paused"][0]
    assert paused.data["resumeMode"] == "automatic" and paused.data["retryAt"].startswith("2026-05-28T")
    assert (await e.fire_due_timers())["fired"] == []
    clock.advance(31)
    report = await e.fire_due_timers()
    assert [(f["id"], f["eventTypes"]) for f in report["fired"]] == [(wait, ["run.resumed"])]
    assert (await e.state(sid)).runs[run].state == "running"
    # Every timestamp comes from the fixed clock.
    assert (await e.history(sid)).events[-1].data["timestamp"] == "2026-05-28T20:27:11.000Z"
    await e.close()


async def test_run_timers_fires_a_due_resume_until_cancelled(url):
    clock = narad.ManualClock(T0)
    e = await narad.Engine.open(url, clock=clock)
    sid = await e.create_session()
    run = await e.start_run(sid)
    await e.pause_run(sid, run, "rate_limited", retry_at=T0 + 30)
    driver = asyncio.create_task(e.run_timers(0.01))
    await asyncio.sleep(0.05)
    assert (await e.state(sid)).runs[run].state == "paused"
    clock.advance(31)
    for _ in range(500):
        if (await e.state(sid)).runs[run].state == "running":
            break
        await asyncio.sleep(0.01)
    assert (await e.state(sid)).runs[run].state == "running"
    driver.cancel()
    with pytest.raises(asyncio.CancelledError):
        await driver
    await e.close()


async def test_watch_follows_revisions(url):
    e = await narad.Engine.open(url)
    sid = await e.create_session()
    w = e.watch(sid)
    got = []

    async def follow():
        async for ev in w:
            got.append(ev)
            if ev["type"] == "session.revision" and ev["revision"] >= 3:
                return

    task = asyncio.ensure_future(follow())
    await e.message(sid, "a")
    run = await e.start_run(sid)
    await e.end_run(sid, run)
    await asyncio.wait_for(task, 5)
    kinds = {ev["type"] for ev in got}
    assert "session.revision" in kinds and "run.revision" in kinds
    assert got[-1]["cursor"] == {"kind": "session", "sessionId": sid, "sessionSequence": 3}
    assert w.cursor == 3
    await e.close()
