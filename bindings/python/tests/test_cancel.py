"""Cancelling a call stops the wait, not the command: whatever loop turn
the cancellation lands on, the command is appended whole or not at all,
the session takes commands right after, a restart reads the same journal,
and an idempotency key tells a retry what the cancelled call did."""

import asyncio

import narad


async def cancelled_after(coro, turns: int) -> bool:
    """Runs ``coro`` as a task, cancels it after ``turns`` loop turns, and
    returns whether it finished before the cancellation landed."""
    task = asyncio.ensure_future(coro)
    for _ in range(turns):
        await asyncio.sleep(0)
    task.cancel()
    try:
        await task
        return True
    except asyncio.CancelledError:
        return False


async def test_a_cancelled_command_is_appended_whole_or_not_at_all(url):
    e = await narad.Engine.open(url)
    sid = await e.create_session()
    finished, cancelled = [], []
    # Turn 0 cancels before the first poll (nothing reaches the engine);
    # later turns land while the store writes or the result hops back.
    for i in range(60):
        text = f"m{i}"
        if await cancelled_after(e.message(sid, text), i % 6):
            finished.append(text)
        else:
            cancelled.append(text)
    assert cancelled, "no cancellation landed before its command finished"
    # The session takes commands right away, and a run opens and closes.
    await e.message(sid, "after")
    run = await e.start_run(sid)
    await e.end_run(sid, run)

    texts = [m.content for m in (await e.state(sid)).transcript]
    # Every finished call is there once, a cancelled one at most once, in
    # call order, and nothing else.
    assert texts[-1] == "after"
    assert all(texts.count(t) == 1 for t in finished)
    assert all(texts.count(t) <= 1 for t in cancelled)
    order = [f"m{i}" for i in range(60)]
    assert texts[:-1] == [t for t in order if t in texts]
    history = [i.session_sequence for i in (await e.history(sid)).events]
    assert history == list(range(1, len(history) + 1))
    await e.close()

    # A restart replays exactly the journal the first engine answered from.
    again = await narad.Engine.open(url)
    assert [m.content for m in (await again.state(sid)).transcript] == texts
    await again.close()


async def test_a_keyed_retry_after_a_cancellation_appends_once(url):
    e = await narad.Engine.open(url)
    sid = await e.create_session()
    for i in range(12):
        key = f"k{i}"
        first = await cancelled_after(e.message(sid, f"keyed {i}", idempotency_key=key), i % 4)
        # The retry answers the cancelled call's result if it was
        # appended, and appends it now if it was not: once either way.
        await e.message(sid, f"keyed {i}", idempotency_key=key)
        texts = [m.content for m in (await e.state(sid)).transcript]
        assert texts.count(f"keyed {i}") == 1, (i, first, texts)
    await e.close()


async def test_a_cancelled_stream_is_closed_wherever_the_cancellation_lands(url):
    """Cancelled while it starts, streams, starts its reasoning or
    reasons: each started stream is completed, none is left open."""
    e = await narad.Engine.open(url)
    sid = await e.create_session()
    run = await e.start_run(sid)

    async def stream() -> None:
        async with e.stream_text(sid, run) as s:
            await s.delta("x")
            async with await s.reasoning() as r:
                for _ in range(3):
                    await r.delta("y")
            for _ in range(1000):
                await s.delta("x")

    for turns in range(1, 40):
        await cancelled_after(stream(), turns)
        st = await e.state(sid)
        assert all(m.completed for m in st.transcript), turns
        assert all(r.completed for r in st.reasoning), turns
    # A session's own reasoning stream, cancelled while it starts.
    for turns in range(1, 12):
        task = asyncio.ensure_future(e.start_reasoning(sid))
        for _ in range(turns):
            await asyncio.sleep(0)
        task.cancel()
        try:
            await (await task).complete()
        except asyncio.CancelledError:
            pass
        assert all(r.completed for r in (await e.state(sid)).reasoning), turns
    await e.end_run(sid, run)
    assert (await e.state(sid)).runs[run].state == "finished"
    await e.close()
