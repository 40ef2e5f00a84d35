"""Idempotency keys from Python, on redb and SQLite: a retry under the same
key appends nothing and returns the original result, also from a new engine
on the same file; another request under a used key is refused."""

import pytest

import narad


async def head(e, sid):
    return (await e.capabilities(sid))["sessionSequence"]


async def test_every_command_under_a_key_answers_once(url):
    e = await narad.Engine.open(url)

    async def twice(sid, call):
        first = await call()
        before = await head(e, sid) if sid else None
        again = await call()
        assert again == first, "a retry answers the original result"
        if sid:
            assert await head(e, sid) == before, "a retry appends nothing"
        return first

    sid = await twice(None, lambda: e.create_session(idempotency_key="create"))
    assert len((await e.sessions()).sessions) == 1
    await twice(sid, lambda: e.message(sid, "hello", idempotency_key="m1"))
    run = await twice(sid, lambda: e.start_run(sid, idempotency_key="run"))
    tool = await twice(sid, lambda: e.start_tool_call(sid, run, "search", {"q": "x"}, idempotency_key="t"))
    await twice(sid, lambda: e.finish_tool_call(sid, tool, {"hits": 1}, idempotency_key="t-done"))
    await twice(sid, lambda: e.record_progress(sid, run, "agent.phase", "Searching", idempotency_key="pr"))
    await twice(sid, lambda: e.put_document(sid, {"step": 1}, idempotency_key="doc"))
    await twice(sid, lambda: e.patch_document(sid, [{"op": "replace", "path": "/step", "value": 2}],
                                              idempotency_key="doc-2"))
    await twice(sid, lambda: e.record_custom(sid, "acme.note", 1, run_id=run, idempotency_key="c"))
    await twice(sid, lambda: e.record_raw(sid, "text/plain", "aGk=", idempotency_key="r"))
    await twice(sid, lambda: e.append(sid, "view.opened", {"viewId": "v"}, idempotency_key="v"))
    iid, wait = await twice(sid, lambda: e.request_interrupt(sid, run, idempotency_key="ask"))
    await twice(sid, lambda: e.resolve_interrupt(iid, "approve", idempotency_key="ask-yes"))
    wait = await twice(sid, lambda: e.pause_run(sid, run, "rate limit", idempotency_key="pause"))
    await twice(sid, lambda: e.resume_run(sid, run, wait, idempotency_key="resume"))
    await twice(sid, lambda: e.end_run(sid, run, idempotency_key="end"))
    second = await e.start_run(sid)
    await twice(sid, lambda: e.stop(sid, second, idempotency_key="stop"))
    wf = await twice(sid, lambda: e.start_workflow(sid, idempotency_key="wf"))
    assert wf
    with pytest.raises(narad.ConflictError) as ex:
        await e.message(sid, "another text", idempotency_key="m1")
    assert ex.value.code == "idempotency_conflict"
    with pytest.raises(narad.InvalidCommandError):
        await e.message(sid, "x", message_id="id-1", idempotency_key="m2")
    n = await head(e, sid)
    await e.close()
    # A new engine on the same file still answers from the recorded key.
    e = await narad.Engine.open(url)
    again = await e.start_tool_call(sid, run, "search", {"q": "x"}, idempotency_key="t")
    assert again == tool
    assert await head(e, sid) == n
    await e.close()
