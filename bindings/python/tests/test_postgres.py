"""The same engine over PostgreSQL, when NARAD_TEST_POSTGRES_URL names one."""

import os
import uuid

import pytest

import narad

PG = os.environ.get("NARAD_TEST_POSTGRES_URL")


@pytest.mark.skipif(not PG, reason="NARAD_TEST_POSTGRES_URL is not set")
async def test_postgres_round_trip():
    sep = "&" if "?" in PG else "?"
    e = await narad.Engine.open(f"{PG}{sep}schema=py_{uuid.uuid4().hex[:12]}")
    sid = await e.create_session()
    run = await e.start_run(sid)
    async with e.stream_text(sid, run) as s:
        await s.delta("hi")
    await e.end_run(sid, run)
    st = await e.state(sid)
    assert st.runs[run].state == "finished" and st.transcript[0].content == "hi"
    await e.close()
