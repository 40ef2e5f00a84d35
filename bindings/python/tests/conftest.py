"""Every test runs on a real redb file and a real SQLite file."""

import pytest


@pytest.fixture(params=["redb", "sqlite"])
def url(request, tmp_path):
    return f"{request.param}:{tmp_path / ('store.' + request.param)}"
