"""What a host injects: principals, a declarative authorizer and the
conversion of JSON values across the bridge."""

import pytest

import narad
from narad import _native


async def test_rules_allow_only_what_they_name(url):
    auth = narad.Authorizer([
        narad.Rule(principals=["host"]),
        narad.Rule(principals=["viewer"], actions=["read"]),
        narad.Rule(principals=["agent"], actions=["write", "read"], sessions=["s-1"],
                   event_types=["message.*", "run.*"]),
    ])
    host = await narad.Engine.open(url, principal="host", authorizer=auth)
    assert host.principal == "host"
    sid = await host.create_session("s-1")
    other = await host.create_session("s-2")
    agent, viewer = host.as_principal("agent"), host.as_principal("viewer")
    await agent.message(sid, "hello")
    run = await agent.start_run(sid)
    for call in (lambda: agent.message(other, "no"),            # another session
                 lambda: agent.start_tool_call(sid, run, "t"),  # a type no rule names
                 lambda: agent.create_session(),
                 lambda: viewer.message(sid, "no")):
        with pytest.raises(narad.NotAuthorizedError) as ex:
            await call()
        assert ex.value.code == "not_authorized"
    assert (await viewer.state(sid)).head == 2  # refusals appended nothing
    assert [s.session_id for s in (await agent.sessions()).sessions] == [sid]
    with pytest.raises(narad.NotAuthorizedError):
        await host.append(sid, "debug.log", {"level": "info", "message": "x"})  # debug needs may_debug
    with pytest.raises(ValueError):
        narad.Authorizer([narad.Rule(actions=["delete"])])
    await host.close()



def test_json_values_cross_the_bridge_unchanged():
    v = {"s": "é", "i": -3, "big": 2**63, "f": 1.5, "b": True, "n": None, "l": [1, [2, {"k": "v"}]], "t": (1, 2)}
    out = _native.NativeEngine._echo_json(v)
    assert out == {**v, "t": [1, 2]}
    assert type(out["b"]) is bool and type(out["i"]) is int
    with pytest.raises(TypeError, match="set"):
        _native.NativeEngine._echo_json({"x": {1, 2}})
    with pytest.raises(TypeError):
        _native.NativeEngine._echo_json({1: "non-str key"})
    with pytest.raises(TypeError):
        _native.NativeEngine._echo_json(float("nan"))
    # Past 64 bits an int would come back as a float: refused, not altered.
    assert _native.NativeEngine._echo_json([2**64 - 1, -(2**63)]) == [2**64 - 1, -(2**63)]
    for big in (2**64, -(2**63) - 1, 10**30):
        with pytest.raises(TypeError, match="64-bit range"):
            _native.NativeEngine._echo_json({"x": [big]})


async def test_a_closed_engine_refuses(url):
    e = await narad.Engine.open(url)
    await e.create_session()
    await e.close()
    with pytest.raises(narad.InvalidCommandError) as ex:
        await e.create_session()
    assert ex.value.code == "invalid_command"
    await e.close()  # idempotent
