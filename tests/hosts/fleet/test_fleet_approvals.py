"""Hook approvals shared by replicas through PostgreSQL (fleet_approvals): an
approval or a revocation made on one replica's registry counts on another's
within 2 s, the machine's own approvals file does not count, and PostgreSQL
going away never reads as approved (docs/fleet.md, Consistency)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.pgserver import PgServer
from helpers.serve import wait_for
from interlock import Engine
from interlock.config.registry import Registry
from interlock.events import BeforeToolCall

pytestmark = pytest.mark.e2e

BINDIR = PgServer.find()
if BINDIR is None:
    pytest.skip("needs PostgreSQL's initdb (.ci/run installs it)", allow_module_level=True)

CONFIG = """
[[hooks]]
name = "no-rm"
events = ["before_tool_call"]
matcher = "terminal"
command = "if grep -q 'rm -rf'; then echo 'no rm' >&2; exit 2; fi"
on_error = "closed"
"""


class Replica:
    """One replica's registry on the shared project, its own state dir."""

    def __init__(self, root: Path, state: Path, url: str, *, accept: bool = False) -> None:
        from interlock.hosts.fleet.approvals import share_approvals
        from interlock.hosts.fleet.shared import Fleet

        self.engine = Engine()
        self.registry = Registry(self.engine, project_root=root, accept_hooks=accept)
        self.registry.state_dir = state
        self.registry.trust = type(self.registry.trust)(state)
        self.registry.load()
        self.fleet = Fleet(url)
        self.trust = share_approvals(self.fleet, self.registry)

    def state(self) -> str:
        return self.registry.entry("no-rm").state

    def decides(self, command: str) -> str:
        out = self.engine.emit_sync(BeforeToolCall(tool_name="terminal",
                                                   args={"command": command}, session_id="s"))
        return out.verdict.value

    def close(self) -> None:
        self.fleet.close()
        self.engine.close()


@pytest.fixture
def replicas(pg: PgServer, tmp_path: Path) -> Iterator[tuple[Replica, Replica]]:
    import psycopg

    with psycopg.connect(pg.url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS fleet_approvals")
    # One project at one path (as replicas of one image hold it), two state dirs.
    root = tmp_path / "project"
    (root / ".interlock").mkdir(parents=True)
    (root / ".interlock" / "config.toml").write_text(CONFIG)
    a = Replica(root, tmp_path / "a" / "state", pg.url)
    b = Replica(root, tmp_path / "b" / "state", pg.url)
    try:
        yield a, b
    finally:
        a.close()
        b.close()


def test_an_approval_and_a_revocation_on_one_replica_count_on_the_other(replicas):
    a, b = replicas
    assert b.state() != "active"
    assert b.decides("ls") == "block"  # fail-closed and unapproved: its refusal blocks
    assert a.registry.approve(["no-rm"]) == ["project:no-rm"]
    wait_for(lambda: b.state() == "active", timeout=10, what="B to see the approval")
    assert b.decides("ls") == "none"
    assert b.decides("rm -rf /") == "block"
    a.registry.revoke("no-rm")
    since = time.monotonic()
    wait_for(lambda: b.state() != "active", timeout=10, what="B to see the revocation")
    assert time.monotonic() - since < 2.0
    assert b.decides("ls") == "block"


def test_the_machines_own_approvals_file_does_not_count(replicas):
    from interlock.config.trust import TrustStore

    _a, b = replicas
    entry = b.registry.entry("no-rm")
    TrustStore(b.registry.state_dir).approve([(entry.key, entry.digest, entry.qualified_name)])
    assert b.registry.reload(operator=True, release=False).ok
    assert b.state() != "active"


def test_postgresql_down_never_reads_as_approved(replicas, pg):
    a, b = replicas
    a.registry.approve(["no-rm"])
    wait_for(lambda: b.state() == "active", timeout=10, what="B to see the approval")
    pg.stop()
    try:
        wait_for(lambda: not b.fleet.fresh(), timeout=10, what="B's listener to notice")
        fresh = Engine()
        try:
            lone = Registry(fresh, project_root=b.registry.project_root)
            lone.state_dir = b.registry.state_dir
            lone.trust = b.trust  # the fleet's approvals, unreachable
            with pytest.raises(Exception, match="fleet's approvals"):
                lone.load()  # a replica starting now refuses to start
        finally:
            fresh.close()
        result = b.registry.reload(operator=True, release=False)
        assert result.error is not None  # the last good revision keeps answering
        assert b.state() == "active"
        assert b.decides("rm -rf /") == "block"
    finally:
        pg.start()
    wait_for(lambda: b.fleet.fresh(), timeout=30, what="B's listener to reconnect")
    assert b.registry.reload(operator=True, release=False).error is None


def cli(pg: PgServer, project: Path, state: Path,
        *args: str) -> subprocess.CompletedProcess[str]:
    """`interlock hooks ARGS --fleet` as an operator runs it (no --accept-hooks)."""
    env = {k: v for k, v in os.environ.items() if k != "INTERLOCK_ACCEPT_HOOKS"}
    env["INTERLOCK_STATE_DIR"] = str(state)
    return subprocess.run(
        [sys.executable, "-c", "from interlock.hosts.cli import main; main()", "hooks",
         *args, "--project", str(project), "--fleet", "--store", pg.url],
        capture_output=True, text=True, env=env, timeout=60, check=False)


def test_hooks_approve_and_revoke_fleet_from_the_cli(replicas, pg, tmp_path):
    _a, b = replicas

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return globals()["cli"](pg, b.registry.project_root, tmp_path / "operator", *args)

    done = cli("approve", "no-rm")
    assert done.returncode == 0, done.stderr
    assert "approved: project:no-rm" in done.stdout
    wait_for(lambda: b.state() == "active", timeout=10, what="B to see the CLI's approval")
    done = cli("revoke", "no-rm")
    assert done.returncode == 0, done.stderr
    wait_for(lambda: b.state() != "active", timeout=10, what="B to see the CLI's revocation")
    assert not (tmp_path / "operator" / "approvals.json").exists()


def test_a_fleet_revocation_wins_over_accept_hooks(pg, tmp_path):
    """A replica run with --accept-hooks (or --policy) approves what no one decided,
    never what an operator revoked: the revocation counts within 2 s and stays
    through reloads; new content is approved again (docs/fleet.md, Consistency)."""
    import psycopg

    with psycopg.connect(pg.url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS fleet_approvals")
    root = tmp_path / "project"
    (root / ".interlock").mkdir(parents=True)
    (root / ".interlock" / "config.toml").write_text(CONFIG)
    a = Replica(root, tmp_path / "a" / "state", pg.url, accept=True)
    try:
        assert a.state() == "active"  # approved by --accept-hooks
        assert a.decides("ls") == "none"
        done = cli(pg, root, tmp_path / "operator", "revoke", "no-rm")
        assert done.returncode == 0, done.stderr
        assert "revoked: project:no-rm" in done.stdout
        since = time.monotonic()
        wait_for(lambda: a.state() != "active", timeout=10, what="the revocation to count")
        assert time.monotonic() - since < 2.0
        assert a.decides("ls") == "block"  # fail-closed and revoked: its refusal blocks
        assert a.registry.reload(operator=True, release=False).error is None
        assert a.state() != "active"
        assert a.decides("ls") == "block"
        # The operator's approval brings it back; so does new content --accept-hooks sees.
        done = cli(pg, root, tmp_path / "operator", "approve", "no-rm")
        assert done.returncode == 0, done.stderr
        wait_for(lambda: a.state() == "active", timeout=10, what="the approval to count")
        done = cli(pg, root, tmp_path / "operator", "revoke", "no-rm")
        assert done.returncode == 0, done.stderr
        wait_for(lambda: a.state() != "active", timeout=10, what="the revocation to count")
        (root / ".interlock" / "config.toml").write_text(CONFIG.replace("no rm", "not rm"))
        assert a.registry.reload(operator=True, release=False).error is None
        assert a.state() == "active"
    finally:
        a.close()
