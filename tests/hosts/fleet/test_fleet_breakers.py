"""Breaker state shared by `serve --fleet` replicas through PostgreSQL
(fleet_breakers + NOTIFY; docs/fleet.md, Consistency): a breaker one replica
opened is honoured by the others, whose projects sit at other paths, also by
one that never ran the hook and by one that starts afterwards; a fail-closed
gate behind an open breaker still blocks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from helpers.pgserver import PgServer
from helpers.serve import Serve, wait_for

pytestmark = pytest.mark.e2e

BINDIR = PgServer.find()
if BINDIR is None:
    pytest.skip("needs PostgreSQL's initdb (.ci/run installs it)", allow_module_level=True)

# Fails every time it runs, and leaves a line in its project's ran.log when it does.
FLAKY = """
[[hooks]]
name = "flaky"
events = ["before_tool_call"]
matcher = "terminal"
command = "cat >/dev/null; echo ran >> ran.log; exit 1"
on_error = "closed"
breaker_threshold = 2
breaker_cooldown = 600
retries = 0
"""


def replica(tmp: Path, pg: PgServer) -> Serve:
    serve = Serve(tmp, FLAKY, store=pg.url, extra=["--fleet", "--no-socket"])
    made = serve.cli("serve", "token", "create", f"ops-{tmp.name}", "--admin", "--fleet")
    assert made.returncode == 0, made.stderr
    serve.token = made.stdout.strip()
    return serve.start()


def decide(serve: Serve) -> str:
    out = serve.event({"tool_name": "terminal", "args": {"command": "ls"}})
    return str(out["decision"])


def breaker(serve: Serve) -> dict[str, Any] | None:
    code, status = serve.request("GET", "/v1/status")
    assert code == 200, status
    found = [b for b in status["breakers"] if b["hook"] == "project:flaky"]
    return found[0] if found else None


def ran(serve: Serve) -> int:
    log = serve.project / "ran.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_an_open_breaker_is_honoured_by_every_replica_at_any_path(
        pg: PgServer, tmp_path: Path) -> None:
    a = replica(tmp_path / "a", pg)
    b = replica(tmp_path / "b", pg)
    c: Serve | None = None
    try:
        for _ in range(2):
            assert decide(a) == "block"  # fail-closed: a failure blocks
        assert ran(a) == 2
        assert (breaker(a) or {}).get("state") == "open"
        # B never ran the hook: its breaker comes from A's notification.
        wait_for(lambda: (breaker(b) or {}).get("state") == "open", timeout=10,
                 what="B to show A's open breaker")
        assert decide(b) == "block"  # the open breaker blocks the fail-closed gate
        assert ran(b) == 0
        # A replica started now reads the open breaker from fleet_breakers.
        c = replica(tmp_path / "c", pg)
        assert (breaker(c) or {}).get("state") == "open"
        assert decide(c) == "block"
        assert ran(c) == 0
    finally:
        for serve in (a, b, c):
            if serve is not None:
                serve.stop()
