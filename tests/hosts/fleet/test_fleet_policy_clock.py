"""A signed policy switch shared through PostgreSQL is ordered by PostgreSQL's
clock, not by the replicas' own (docs/fleet.md, Policy distribution): a replica
whose clock runs fast must still follow a switch made after its own."""

from __future__ import annotations

import time
from typing import Any

import pytest

from helpers.pgserver import PgServer

pytestmark = pytest.mark.e2e

BINDIR = PgServer.find()
if BINDIR is None:
    pytest.skip("needs PostgreSQL's initdb (.ci/run installs it)", allow_module_level=True)


class FakeRepo:
    """A policy repository whose revisions are just names (the git part is tested
    in test_fleet_policy.py)."""

    repo = "file:///policy.git"
    base = None

    def __init__(self) -> None:
        self.commit = "c-main"

    def activate(self, ref: str, fetch: bool = True) -> tuple[str, bool]:
        changed = ref != self.commit
        self.commit = ref
        return ref, changed


class Reloads:
    class engine:  # the attribute the service reads
        revision = 1

    def reload(self, operator: bool = False) -> Any:
        class Result:
            ok = True
            error = None
        return Result()


def test_a_replica_with_a_fast_clock_follows_a_later_switch(
        pg: PgServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from interlock.hosts.fleet import policy
    from interlock.hosts.fleet.shared import Fleet

    fleets = [Fleet(pg.url, replica=name, listen=False) for name in ("A", "B")]
    try:
        start = policy.Kept("main", "main", "c-main", 0.0)
        a, b = (policy.PolicyService(FakeRepo(), "main", Reloads(), served=start, fleet=f)
                for f in fleets)
        real = time.time
        monkeypatch.setattr(policy.time, "time", lambda: real() + 60)  # A runs 60 s fast
        assert a.switch("c-bad")["ok"]
        monkeypatch.setattr(policy.time, "time", real)
        assert b.switch("c-good")["ok"]  # later, on B, with a right clock
        a.follow()  # the notification reaches A
        assert a.repo.commit == "c-good"
        b.follow()
        assert b.repo.commit == "c-good"
    finally:
        for f in fleets:
            f.close()
