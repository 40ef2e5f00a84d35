"""The session lifecycle from Python, on redb and SQLite: the session
index, labels, archive, delete, retention, point-in-time state, fork,
import and hydrate records."""

import asyncio

import pytest

import narad

T0 = 1_780_000_000


async def test_index_labels_archive_and_listing(url):
    e = await narad.Engine.open(url)
    a = await e.create_session("a", workspace_id="ws", labels={"team": "red"})
    b = await e.create_session("b", workspace_id="ws", labels={"team": "blue"})
    run = await e.start_run(b)
    page = await e.sessions(labels={"team": "red"})
    assert [s.session_id for s in page.sessions] == [a]
    entry = page.sessions[0]
    assert entry.status == "idle" and entry.workspace_id == "ws" and entry.labels == {"team": "red"}
    assert [s.session_id for s in (await e.sessions(status=["running"])).sessions] == [b]
    assert (await e.sessions(status=["running"])).sessions[0].active == ("run", run)
    first = await e.sessions(limit=1)
    assert [s.session_id for s in first.sessions] == [a] and first.next == a
    rest = await e.sessions(after=first.next)
    assert [s.session_id for s in rest.sessions] == [b] and rest.next is None
    assert await e.list_sessions() == [a, b]
    await e.set_labels(a, {"team": "green"})
    assert [s.session_id for s in (await e.sessions(labels={"team": "green"})).sessions] == [a]
    # Archiving a session with an active run is refused: its work could never finish.
    with pytest.raises(narad.ConflictError) as ex:
        await e.archive(b)
    assert ex.value.code == "session_has_open_work"
    await e.message(a, "hi")
    await e.archive(a)
    assert (await e.sessions(status=["archived"])).sessions[0].session_id == a
    with pytest.raises(narad.ConflictError) as ex:
        await e.message(a, "more")
    assert ex.value.code == "session_archived"
    # Reads still work; the archive was announced on the workspace's watch stream.
    assert (await e.history(a)).events[0].type == "message.user.recorded"
    events, _ = await e.workspace_watch("ws")
    assert [ev["type"] for _, ev in events] == ["session.created", "session.created", "session.archived"]
    assert [rev for rev, _ in events] == [1, 2, 3]
    assert await e.announce_session(b) == 4
    with pytest.raises(narad.InvalidCommandError) as ex:
        await e.list_sessions(limit=0)
    assert ex.value.code == "invalid_limit"
    await e.close()


async def test_delete_refuses_open_work_unless_forced(url):
    e = await narad.Engine.open(url)
    sid = await e.create_session()
    run = await e.start_run(sid)
    await e.message(sid, "x")
    with pytest.raises(narad.ConflictError) as ex:
        await e.delete_session(sid)
    assert ex.value.code == "session_has_open_work"
    assert (await e.state(sid)).runs[run].state == "running"
    gone = await e.delete_session(sid, force=True)
    assert gone.session_id == sid and gone.events == 2 and gone.open_runs == [run]
    assert await e.deleted_sessions() == [sid]
    with pytest.raises(narad.NotFoundError):
        await e.state(sid)
    await e.close()


async def test_prune_by_idle_time_on_a_fixed_clock(url):
    clock = narad.ManualClock(T0)
    e = await narad.Engine.open(url, clock=clock)
    old = await e.create_session("old")
    await e.message(old, "long ago")
    busy = await e.create_session("busy")
    await e.start_run(busy)
    clock.advance(7200)
    fresh = await e.create_session("fresh")
    await e.message(fresh, "now")
    dry = await e.prune(max_idle=3600, dry_run=True)
    assert dry.deleted == [old] and [k for k, _ in dry.kept] == [busy]
    assert await e.list_sessions() == [busy, fresh, old]
    report = await e.prune(max_idle=3600)
    assert report.deleted == [old]
    assert await e.list_sessions() == [busy, fresh]
    # The retention policy on the timer driver's pass.
    clock.advance(7200)
    e.set_retention(max_idle=3600, force=True)
    await e.fire_due_timers()
    assert await e.list_sessions() == []
    await e.close()


async def test_state_at_fork_and_import(url, tmp_path):
    e = await narad.Engine.open(url)
    sid = await e.create_session()
    await e.message(sid, "one")
    run = await e.start_run(sid)
    await e.end_run(sid, run)
    past = await e.state_at(sid, 1)
    assert past.head == 1 and past.runs == {} and [m.content for m in past.transcript] == ["one"]
    at2 = await e.state_at(sid, 2)
    assert at2.runs[run].state == "running"
    with pytest.raises(narad.InvalidCommandError):
        await e.state_at(sid, 9)
    with pytest.raises(narad.InvalidCommandError):
        await e.state_at(sid, 0)  # before the first event: no state
    with pytest.raises(narad.NotFoundError) as unknown:
        await e.state_at("no-such-session", 1)
    assert unknown.value.message == "no session `no-such-session` in this store"
    forked = await e.fork(sid, 2)
    assert forked != sid
    st = await e.state(forked)
    assert st.head == 2 and st.runs[run].state == "running"
    await e.end_run(forked, run, status="cancelled")
    assert (await e.state(sid)).head == 3  # the source is untouched
    entry = (await e.sessions()).sessions
    assert {s.session_id: s.forked_from for s in entry}[forked] == (sid, 2)
    # Import the journal into another store: checked, appended once, redelivery recognized.
    raws = [ev.raw for ev in (await e.history(sid)).events]
    other = await narad.Engine.open(f"sqlite:{tmp_path / 'imported.sqlite'}")
    assert await other.import_records(raws) == (sid, 3)
    assert await other.import_records(raws) == (sid, 0)
    assert [ev.raw for ev in (await other.history(sid)).events] == raws
    gap = await narad.Engine.open(f"redb:{tmp_path / 'gap.redb'}")
    with pytest.raises(narad.ProtocolError) as garbage:
        await gap.import_records([raws[0], b"\xff not json"])
    assert garbage.value.code == "invalid_json" and "record 2" in garbage.value.message
    assert "invalid_json" not in garbage.value.message
    with pytest.raises(narad.NaradError):
        await gap.import_records([raws[0], raws[2]])  # a gap in the sequence
    assert await gap.list_sessions() == []
    await gap.close()
    head, recs = await e.hydrate_records(sid)
    assert head == 3 and recs[0]["type"] == "messages.snapshot"
    assert [m["content"] for m in recs[0]["messages"]] == ["one"]
    await other.close()
    await e.close()


async def test_config_and_index_check(url):
    e = await narad.Engine.open(url, config=narad.EngineConfig(history_limit=2, cached_sessions=1,
                                                               snapshot_every=2))
    sid = await e.create_session()
    for i in range(5):
        await e.message(sid, f"m{i}")
    page = await e.history(sid)
    assert [x.session_sequence for x in page.events] == [1, 2] and page.next == 2
    assert (await e.capabilities(sid))["historyLimit"] == 2
    other = await e.create_session()
    await e.message(other, "evicts the first session from the cache of one")
    assert [m.content for m in (await e.state(sid)).transcript][-1] == "m4"
    assert e.stats()["hydrations"] >= 1 and e.stats()["fromSnapshot"] >= 1
    assert e.stats()["snapshotsEarlier"] == 0 and e.stats()["snapshotsRejected"] == 0
    assert await e.check_index(sid) is None
    assert await e.reindex(sid) is False
    with pytest.raises(narad.InvalidCommandError):
        await narad.Engine.open(url, config=narad.EngineConfig(lease_ttl=-1))
    await e.close()


async def test_an_attached_ui_learns_that_its_session_was_deleted(url):
    e = await narad.Engine.open(url)
    sid = await e.create_session()
    await e.message(sid, "hello")
    sub = e.attach(sid)
    first = await sub.__anext__()
    assert first.type == "messages.snapshot"
    waiting = asyncio.create_task(sub.__anext__())
    await asyncio.sleep(0.02)
    assert not waiting.done()
    await e.delete_session(sid)
    with pytest.raises(narad.NotFoundError) as gone:
        await asyncio.wait_for(waiting, 30)  # a guard, not a speed claim
    assert gone.value.code == "session_deleted"
    await e.close()
