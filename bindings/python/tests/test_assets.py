"""Views, attachments and artifacts through typed commands (no protocol
JSON written by the caller), with the engine's refusals and idempotency;
and the primary transcript view."""

import pytest

import narad


def types(page):
    return [i.type for i in page.events]


async def test_a_view_opens_updates_by_model_and_patch_and_closes(url):
    e = await narad.Engine.open(url)
    sid = await e.create_session()
    opened = await e.open_view(sid, "plan", {"steps": []})
    assert opened["type"] == "view.opened" and opened["viewId"] == "plan"
    assert opened["model"] == {"steps": []}
    patched = await e.update_view(sid, "plan", patch=[{"op": "add", "path": "/steps/-", "value": "search"}])
    assert patched["operation"] == "patch"
    replaced = await e.update_view(sid, "plan", model={"steps": ["a", "b"]})
    assert replaced["operation"] == "replace" and replaced["model"] == {"steps": ["a", "b"]}
    head = (await e.capabilities(sid))["sessionSequence"]

    with pytest.raises(narad.ProtocolError) as again:
        await e.open_view(sid, "plan", {})
    assert again.value.code == "view_already_open"
    with pytest.raises(narad.ProtocolError) as bad_patch:
        await e.update_view(sid, "plan", patch=[{"op": "remove", "path": "/nothing/here"}])
    assert bad_patch.value.code == "patch_failed"
    with pytest.raises(TypeError):
        await e.update_view(sid, "plan")
    with pytest.raises(narad.InvalidCommandError):
        await e.update_view(sid, "plan", patch=[{"op": "jump", "path": "/x"}])
    assert (await e.capabilities(sid))["sessionSequence"] == head

    closed = await e.close_view(sid, "plan")
    assert closed["type"] == "view.closed"
    with pytest.raises(narad.ProtocolError) as not_open:
        await e.update_view(sid, "plan", model={})
    assert not_open.value.code == "view_not_open"
    assert types(await e.history(sid)) == ["view.opened", "view.updated", "view.updated", "view.closed"]
    await e.close()


async def test_attachments_and_artifacts_follow_their_lifecycles(url):
    e = await narad.Engine.open(url)
    sid = await e.create_session()
    run = await e.start_run(sid)
    photo = await e.add_attachment(sid, name="photo.png", media_type="image/png", uri="s3://in/photo.png",
                                   size_bytes=48213, metadata={"sha256": "ab"})
    ready = await e.update_attachment(sid, photo, "ready")
    assert ready["type"] == "attachment.ready" and ready["attachmentId"] == photo
    await e.update_attachment(sid, photo, "removed")
    added = [i.data for i in (await e.history(sid)).events if i.type == "attachment.added"]
    assert added == [{**added[0], "attachmentId": photo, "name": "photo.png", "mediaType": "image/png",
                      "uri": "s3://in/photo.png", "sizeBytes": 48213, "sha256": "ab"}]

    report = await e.add_artifact(sid, artifact_id="report", name="report.md", run_id=run)
    assert report == "report"
    failed = await e.update_artifact(sid, report, "failed", code="render_failed", message="Could not render.",
                                     run_id=run)
    assert failed["type"] == "artifact.failed" and failed["code"] == "render_failed"
    assert failed["runId"] == run
    head = (await e.capabilities(sid))["sessionSequence"]

    with pytest.raises(narad.InvalidCommandError) as raw_bytes:
        await e.add_attachment(sid, uri="data:image/png;base64,SECRETBYTES")
    assert "SECRETBYTES" not in str(raw_bytes.value)
    with pytest.raises(narad.InvalidCommandError):
        await e.update_artifact(sid, report, "removed", run_id=run)
    with pytest.raises(narad.InvalidCommandError):
        await e.update_attachment(sid, photo, "failed")  # no code and message
    with pytest.raises(narad.ProtocolError) as unknown:
        await e.update_attachment(sid, "never-added", "ready")
    assert unknown.value.code == "lifecycle_unknown"
    with pytest.raises(narad.ProtocolError) as after_removed:
        await e.update_attachment(sid, photo, "ready")
    assert after_removed.value.code == "lifecycle_invalid"
    assert (await e.capabilities(sid))["sessionSequence"] == head
    await e.end_run(sid, run)
    await e.close()


async def test_a_keyed_retry_returns_the_first_asset_id(url):
    e = await narad.Engine.open(url)
    sid = await e.create_session()
    first = await e.add_attachment(sid, name="a.txt", idempotency_key="att")
    again = await e.add_attachment(sid, name="a.txt", idempotency_key="att")
    assert first == again
    with pytest.raises(narad.ConflictError) as other:
        await e.add_attachment(sid, name="b.txt", idempotency_key="att")
    assert other.value.code == "idempotency_conflict"
    await e.open_view(sid, "v", {"n": 1}, idempotency_key="view")
    await e.open_view(sid, "v", {"n": 1}, idempotency_key="view")
    assert types(await e.history(sid)) == ["attachment.added", "view.opened"]
    await e.close()


async def test_the_transcript_view_shows_what_a_chat_shows(url):
    e = await narad.Engine.open(url)
    sid = await e.create_session()
    await e.message(sid, "first question")
    old = await e.start_run(sid)
    await e.say(sid, "an old answer", run_id=old)
    await e.end_run(sid, old)
    await e.message(sid, "second question")
    run = await e.start_run(sid)
    async with e.stream_text(sid, run) as s:
        async with await s.reasoning() as r:
            await r.delta("thinking it over")
        await s.delta("the answer")
    await e.end_run(sid, run)

    view = await e.transcript_view(sid)
    # The last top-level run's messages, not the older run's.
    assert [(m.role, m.text) for m in view] == [
        ("user", "first question"), ("user", "second question"), ("assistant", "the answer")]
    assert all(m.reasoning == [] for m in view) and view[-1].run_id == run and view[-1].completed
    joined = await e.transcript_view(sid, with_reasoning=True)
    assert joined[-1].reasoning == ["thinking it over"]
    assert isinstance(joined[-1], narad.TranscriptMessage)
    with pytest.raises(narad.NotFoundError):
        await e.transcript_view("no-such-session")
    await e.close()


async def test_a_runtime_keeps_its_own_tool_call_id_and_writes_snapshots(url):
    e = await narad.Engine.open(url)
    sid = await e.create_session()
    run = await e.start_run(sid)
    tc = await e.start_tool_call(sid, run, "search", {"q": "x"}, tool_call_id="call_abc123")
    assert tc == "call_abc123"
    # The id is the idempotency key: a retry appends nothing.
    assert await e.start_tool_call(sid, run, "search", {"q": "x"}, tool_call_id="call_abc123") == tc
    with pytest.raises(narad.ConflictError) as other:
        await e.start_tool_call(sid, run, "search", {"q": "y"}, tool_call_id="call_abc123")
    assert other.value.code == "idempotency_conflict"
    with pytest.raises(narad.InvalidCommandError):
        await e.start_tool_call(sid, run, "search", {}, tool_call_id="call_2", idempotency_key="k")
    await e.finish_tool_call(sid, tc, {"hits": 1})
    await e.end_run(sid, run)
    assert types(await e.history(sid)) == ["run.started", "tool.call.started", "tool.call.finished",
                                           "run.finished"]
    assert await e.write_snapshot(sid) == 4
    await e.close()
    # A restart hydrates from that snapshot.
    again = await narad.Engine.open(url)
    assert (await again.state(sid)).tool_calls[tc].state == "finished"
    assert again.stats()["fromSnapshot"] == 1
    await again.close()
