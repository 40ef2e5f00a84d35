"""Refusals raise one class per family with the stable code and section,
and append nothing."""

import sqlite3

import pytest

import narad


async def head(e, sid):
    return (await e.capabilities(sid))["sessionSequence"]


async def test_refusals_carry_code_section_and_append_nothing(url):
    e = await narad.Engine.open(url)
    sid = await e.create_session("s")
    run = await e.start_run(sid)
    tool = await e.start_tool_call(sid, run, "t")
    before = await head(e, sid)

    with pytest.raises(narad.SessionBusyError) as busy:
        await e.start_run(sid)
    assert busy.value.code == "session_slot_busy" and busy.value.section == "3.1"
    assert isinstance(busy.value, narad.ProtocolError) and isinstance(busy.value, narad.NaradError)

    with pytest.raises(narad.ProtocolError) as open_work:
        await e.end_run(sid, run)
    assert open_work.value.code == "open_work" and open_work.value.section

    with pytest.raises(narad.NotFoundError) as unknown:
        await e.message("no-such-session", "x")
    assert unknown.value.code == "unknown_session"
    assert unknown.value.message == "no session `no-such-session` in this store"

    with pytest.raises(narad.NotFoundError) as no_interrupt:
        await e.resolve_interrupt("interrupt-none", "approve")
    assert no_interrupt.value.code == "unknown_interrupt"
    assert no_interrupt.value.message == "no open interrupt `interrupt-none` in this store"

    with pytest.raises(narad.ConflictError) as exists:
        await e.create_session("s")
    assert exists.value.code == "session_exists"

    with pytest.raises(narad.InvalidCommandError) as bad:
        await e.finish_tool_call(sid, tool, None, outcome="maybe")
    assert bad.value.code == "invalid_command" and "invalid_command" not in bad.value.message

    with pytest.raises(narad.NotFoundError) as no_tool:
        await e.finish_tool_call(sid, "tool-none", None)
    assert no_tool.value.code == "unknown_tool_call"

    assert await head(e, sid) == before
    await e.finish_tool_call(sid, tool, None)
    with pytest.raises(narad.ProtocolError) as twice:
        await e.finish_tool_call(sid, tool, None)
    assert twice.value.code and twice.value.section
    iid, _ = await e.request_interrupt(sid, run, actions=["approve"])
    with pytest.raises(narad.ProtocolError) as not_offered:
        await e.resolve_interrupt(iid, "deny")
    assert not_offered.value.code
    with pytest.raises(narad.ConflictError) as stale:
        await e.resolve_interrupt(iid, "approve", expected_revision=1)
    assert stale.value.code == "revision_conflict" and stale.value.section == "2.2"
    await e.close()


async def test_hostile_values_are_refused_without_crashing(url):
    """Values a JSON record cannot hold are refused on the caller's side of
    the bridge, naming the type, never the value; nesting past what a
    record parses (a list that holds itself included) is
    ``nesting_too_deep``, as the engine says for nesting past 64, where
    converting it once overflowed the stack and killed the process."""
    e = await narad.Engine.open(url)
    sid = await e.create_session()
    run = await e.start_run(sid)
    before = await head(e, sid)

    def nested(n, make):
        top = cur = make()
        for _ in range(n):
            inner = make()
            if isinstance(cur, list):
                cur.append(inner)
            else:
                cur["k"] = inner
            cur = inner
        return top

    cycle = []
    cycle.append(cycle)
    for deep in (nested(100, list), nested(200_000, list), nested(200_000, dict), cycle):
        with pytest.raises(narad.ProtocolError) as too_deep:
            await e.start_tool_call(sid, run, "t", {"a": deep})
        assert too_deep.value.code == "nesting_too_deep" and too_deep.value.section == "5"
    for bad, kind in ((float("nan"), TypeError), (b"secret-bytes", TypeError), ({1: 2}, TypeError),
                      (object(), TypeError), (10**40, TypeError)):
        with pytest.raises(kind) as refused:
            await e.start_tool_call(sid, run, "t", {"a": bad})
        assert "secret-bytes" not in str(refused.value)
    assert await head(e, sid) == before
    await e.close()


async def test_a_closed_engine_refuses(url):
    e = await narad.Engine.open(url)
    await e.close()
    with pytest.raises(narad.InvalidCommandError):
        await e.create_session()


async def test_bad_store_url_is_a_store_error(tmp_path):
    with pytest.raises(narad.StoreError) as err:
        await narad.Engine.open("mysql://h/db")
    assert err.value.code == "invalid_url"
    # A store that cannot be opened says why, by code: a redb file has one
    # owner; a file that is not a store is not a damaged store.
    e = await narad.Engine.open(f"redb:{tmp_path / 'one.redb'}")
    with pytest.raises(narad.StoreError) as locked:
        await narad.Engine.open(f"redb:{tmp_path / 'one.redb'}")
    assert locked.value.code == "locked" and "already open" in locked.value.message
    await e.close()
    (tmp_path / "text.sqlite").write_text("not a database, only text\n" * 100)
    with pytest.raises(narad.StoreError) as not_a_store:
        await narad.Engine.open(f"sqlite:{tmp_path / 'text.sqlite'}")
    assert not_a_store.value.code == "not_a_store"
    # Nor is another application's database, which is left as it was.
    crm = tmp_path / "crm.db"
    c = sqlite3.connect(crm)
    c.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    c.commit()
    c.close()
    before = crm.read_bytes()
    with pytest.raises(narad.StoreError) as foreign:
        await narad.Engine.open(f"sqlite:{crm}")
    assert foreign.value.code == "not_a_store" and "crm.db" in foreign.value.message
    assert crm.read_bytes() == before


async def test_counts_out_of_range_are_typed_refusals(url):
    """A negative count, or one past 2**64 - 1, is an InvalidCommandError
    with the engine's code (``invalid_limit`` for a page limit), not the
    OverflowError of the conversion to a native integer; a wrong type is
    still a TypeError. So are the counts among ``Engine.open``'s options."""
    e = await narad.Engine.open(url)
    sid = await e.create_session("s")
    calls = {
        "invalid_limit": [
            lambda: e.history(sid, limit=-1),
            lambda: e.history(sid, limit=2**64),
            lambda: e.sessions(limit=-1),
            lambda: e.list_sessions(limit=-5),
            lambda: e.open_interrupts(limit=-1),
        ],
        "invalid_command": [
            lambda: e.history(sid, after=-1),
            lambda: e.state_at(sid, 2**70),
            lambda: e.fork(sid, -3),
            lambda: e.workspace_watch("w", after=-1),
        ],
    }
    for code, makes in calls.items():
        for make in makes:
            with pytest.raises(narad.InvalidCommandError) as refused:
                await make()
            assert refused.value.code == code
            assert "2**64" in refused.value.message or "negative" in refused.value.message
    with pytest.raises(TypeError):
        await e.history(sid, limit="3")
    assert (await e.history(sid, limit=2**64 - 1)).events == []
    await e.close()
    # The numbers among open's options too, each named.
    for name, opts in (("redb_cache_bytes", {"redb_cache_bytes": -1}),
                       ("cached_sessions", {"config": narad.EngineConfig(cached_sessions=-1)}),
                       ("snapshot_every", {"config": narad.EngineConfig(snapshot_every=2**64)}),
                       ("lease_ttl", {"config": narad.EngineConfig(lease_ttl=-1.0)})):
        with pytest.raises(narad.InvalidCommandError) as refused:
            await narad.Engine.open(url, **opts)
        assert refused.value.code == "invalid_command"
        assert name in refused.value.message, refused.value.message
