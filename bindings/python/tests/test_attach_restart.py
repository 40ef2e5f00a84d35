"""Attach without gap, and a restart that continues where it stopped."""

import asyncio

import pytest

import narad


async def test_attach_hydrates_then_follows_live_without_gap(url):
    e = await narad.Engine.open(url)
    sid = await e.create_session()
    await e.message(sid, "before attach")
    run = await e.start_run(sid)
    att = e.attach(sid)
    first = await att.__anext__()
    assert first.type == "messages.snapshot"
    boundary = att.capabilities["sessionSequence"]
    assert boundary == 2 and first.data["coversThroughSessionSequence"] == 2

    async def writer():
        for i in range(40):
            await e.message(sid, f"m{i}")
        async with e.stream_text(sid, run) as s:
            for i in range(10):
                await s.delta(str(i))
        await e.end_run(sid, run)

    task = asyncio.create_task(writer())
    seen = []
    async for item in att:
        if item.session_sequence is None:
            continue
        seen.append(item)
        if item.type == "run.finished":
            break
    await task
    seqs = [i.session_sequence for i in seen]
    assert seqs == list(range(boundary + 1, boundary + 1 + len(seqs)))
    assert len(seqs) == 40 + 12 + 1
    page = await e.history(sid, after=boundary)
    assert [i.raw for i in seen] == [p.raw for p in page.events]

    # subscribe(after=0) replays from the start, then is live.
    sub = e.subscribe(sid, after=0)
    replay = [await sub.__anext__() for _ in range(boundary + len(seqs))]
    assert [i.session_sequence for i in replay] == list(range(1, boundary + len(seqs) + 1))
    await e.close()


async def test_restart_and_continue(url):
    e = await narad.Engine.open(url)
    sid = await e.create_session()
    run = await e.start_run(sid)
    tool = await e.start_tool_call(sid, run, "t")
    queued = await e.start_run(sid, queue=True)
    iid, _ = await e.request_interrupt(sid, run)
    await e.close()
    del e

    e = await narad.Engine.open(url)
    st = await e.state(sid)
    assert st.runs[run].state == "paused" and st.open_interrupts[0].interrupt_id == iid
    assert st.tool_calls[tool].state == "open"
    await e.resolve_interrupt(iid, "approve")
    await e.finish_tool_call(sid, tool, {"ok": True})
    await e.end_run(sid, run)
    st = await e.state(sid)
    # The durable queue survived the restart and started when the slot freed.
    assert st.runs[queued].state == "running"
    await e.end_run(sid, queued)
    page = await e.history(sid)
    assert [p.session_sequence for p in page.events] == list(range(1, len(page.events) + 1))
    await e.close()


async def test_a_waiting_follower_never_blocks_the_event_loop(url):
    e = await narad.Engine.open(url)
    sid = await e.create_session()
    sub = e.subscribe(sid, after=0)
    waiting = asyncio.create_task(sub.__anext__())
    ticks = 0
    for _ in range(20):
        await asyncio.sleep(0.005)
        ticks += 1
    assert ticks == 20 and not waiting.done()
    await e.message(sid, "wake")
    item = await asyncio.wait_for(waiting, 5)
    assert item.type == "message.user.recorded" and item.session_sequence == 1
    # The cursor reads while a next() waits for a live event.
    before = sub.cursor
    waiting_again = asyncio.create_task(sub.__anext__())
    await asyncio.sleep(0.01)
    assert sub.cursor == before == 1 and sub.lag_signals == 0
    await e.message(sid, "again")
    assert (await asyncio.wait_for(waiting_again, 5)).session_sequence == 2
    assert sub.cursor == 2
    # A cancelled wait aborts its engine task cleanly.
    pending = asyncio.create_task(sub.__anext__())
    await asyncio.sleep(0.01)
    pending.cancel()
    await e.close()


async def test_a_capped_page_cache_reads_what_the_default_wrote(url):
    """``redb_cache_bytes`` caps a redb store's page cache (SQLite ignores
    it): the journal a default engine wrote reads back whole through a
    1 MiB cache, and a cap that is not a size is refused before opening."""
    e = await narad.Engine.open(url)
    sid = await e.create_session()
    for i in range(200):
        await e.message(sid, f"m{i} " + "x" * 2000)
    await e.close()
    del e

    e = await narad.Engine.open(url, redb_cache_bytes=1 << 20)
    page = await e.history(sid, limit=1000)
    assert [i.session_sequence for i in page.events] == list(range(1, 201))
    assert [m.content.split(" ")[0] for m in (await e.state(sid)).transcript] == [f"m{i}" for i in range(200)]
    await e.message(sid, "after")
    await e.close()
    for bad, refusal in ((-1, narad.InvalidCommandError), ("64MiB", TypeError)):
        with pytest.raises(refusal):
            await narad.Engine.open(url, redb_cache_bytes=bad)


async def test_a_store_opened_read_only_reads_and_refuses_every_command(url):
    e = await narad.Engine.open(url)
    sid = await e.create_session()
    await e.message(sid, "kept")
    before = await e.state(sid)
    await e.close()
    del e

    ro = await narad.Engine.open(url, read_only=True)
    assert (await ro.state(sid)).transcript == before.transcript
    assert [i.type for i in (await ro.history(sid)).events][-1] == "message.user.recorded"
    for command in (lambda: ro.message(sid, "lost"), lambda: ro.create_session()):
        with pytest.raises(narad.StoreError) as refused:
            await command()
        assert refused.value.code == "read_only"
    await ro.close()
    e = await narad.Engine.open(url)
    assert [m.content for m in (await e.state(sid)).transcript] == ["kept"]
    await e.close()
    missing = url + ".missing"
    with pytest.raises(narad.StoreError) as absent:
        await narad.Engine.open(missing, read_only=True)
    assert absent.value.code == "not_found"
