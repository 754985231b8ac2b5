"""The fleet tests' private PostgreSQL (one per test module)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from helpers.pgserver import PgServer


@pytest.fixture(scope="module")
def pg() -> Iterator[PgServer]:
    bindir = PgServer.find()
    if bindir is None:
        pytest.skip("needs PostgreSQL's initdb (.ci/run installs it)")
    server = PgServer(bindir)
    server.start()
    try:
        yield server
    finally:
        server.close()
