"""Two `interlock serve --fleet` replicas on one PostgreSQL behind a real haproxy,
all on loopback, with real bridge processes (docs/fleet.md).

What each failure does to decisions is the table in docs/fleet.md, Failure
modes; these tests hold the fleet to it: a replica killed mid-load, a
revocation made through one replica's store seen by the other, one rate
limit across both, and PostgreSQL restarted mid-load.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers.pgserver import PgServer, free_port
from helpers.serve import Serve, wait_for

pytestmark = pytest.mark.e2e

BINDIR = PgServer.find()
if BINDIR is None or shutil.which("haproxy") is None:
    pytest.skip("needs PostgreSQL's initdb and haproxy (.ci/run installs both)",
                allow_module_level=True)

POLICY = """
[[hooks]]
name = "no-rm"
events = ["before_tool_call"]
matcher = "terminal"
command = "if grep -q 'rm -rf'; then echo 'fleet policy says no rm' >&2; exit 2; fi"

[[hooks]]
name = "rate-limit"
enabled = true
options = { rate = 0.001, burst = 3 }
"""

HAPROXY = """
global
    maxconn 256
defaults
    mode http
    timeout connect 1s
    timeout client 30s
    timeout server 30s
    retries 2
    option redispatch
frontend policy
    bind 127.0.0.1:{port}
    default_backend replicas
backend replicas
    balance roundrobin
    option httpchk
    http-check send meth GET uri /v1/ready ver HTTP/1.1 hdr Host 127.0.0.1
    server a 127.0.0.1:{a} check inter 300 fall 1 rise 1
    server b 127.0.0.1:{b} check inter 300 fall 1 rise 1
"""


def call(command: str, session: str) -> bytes:
    return json.dumps({"hook_event_name": "PreToolUse", "session_id": session, "cwd": "/",
                       "tool_name": "Bash", "tool_input": {"command": command},
                       "tool_use_id": "t1"}).encode()


class Fleet:
    def __init__(self, tmp: Path) -> None:
        assert BINDIR is not None
        self.tmp = tmp
        self.pg = PgServer(BINDIR)
        self.haproxy: subprocess.Popen[bytes] | None = None
        self.a: Serve = None  # type: ignore[assignment]  # set by start()
        self.b: Serve = None  # type: ignore[assignment]

    def start(self) -> None:
        tmp = self.tmp
        self.pg.start()
        script = tmp / "chat.yaml"
        script.write_text("- text: ok\n" * 20)
        extra = ["--fleet", "--no-socket", "--chat-model", f"scripted:{script}"]
        self.a = self._replica("a", extra)
        self.b = self._replica("b", extra)
        self.port = free_port()
        self.cfg = tmp / "haproxy.cfg"
        self.cfg.write_text(HAPROXY.format(port=self.port, a=self.a.port, b=self.b.port))
        self.haproxy = subprocess.Popen(["haproxy", "-db", "-f", str(self.cfg)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.token = self.token_file("machine1")
        wait_for(lambda: self.bridge("ls", "warm").returncode == 0, what="haproxy to pass calls")

    def _replica(self, name: str, extra: list[str]) -> Serve:
        """A started replica on a fixed port (the last --port wins), so that it
        restarts where haproxy looks. A port found free can be taken by another
        test's connection before serve binds it; then another one is tried."""
        for attempt in range(5):
            replica = Serve(self.tmp / name, POLICY, store=self.pg.url,
                            extra=[*extra, "--port", str(free_port())])
            try:
                return replica.start()
            except AssertionError as exc:
                if "already in use" not in str(exc) or attempt == 4:
                    raise
        raise AssertionError("unreachable")

    def token_file(self, name: str, *extra: str) -> Path:
        made = self.a.cli("serve", "token", "create", name, "--fleet", *extra)
        assert made.returncode == 0, made.stderr
        path = self.tmp / f"{name}.token"
        path.write_text(made.stdout.strip())
        path.chmod(0o600)
        return path

    def bridge(self, command: str, session: str, *, port: int | None = None,
               token: Path | None = None) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("INTERLOCK_SERVER")}
        return subprocess.run(
            [sys.executable, "-I", "-m", "interlock.bridge", "claude", "--deadline", "20",
             "--server", f"http://127.0.0.1:{port or self.port}", "--token-file",
             str(token or self.token)], input=call(command, session).decode(),
            capture_output=True, text=True, env=env, timeout=60, check=False)

    def audited_sessions(self) -> set[str]:
        import psycopg

        with psycopg.connect(self.pg.url) as conn:
            return {str(r[0]) for r in conn.execute(
                "SELECT session_id FROM interlock_audit").fetchall()}

    def close(self) -> None:
        if self.haproxy is not None:
            self.haproxy.terminate()
            self.haproxy.wait(30)
        for replica in (self.a, self.b):
            if replica is not None:
                replica.kill()
        self.pg.close()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    made = Fleet(tmp_path_factory.mktemp("replicas"))
    try:
        made.start()
        yield made
    finally:
        made.close()


class Load:
    """Bridge processes from ``workers`` threads until stopped: every answer kept."""

    def __init__(self, fleet: Fleet, workers: int = 3) -> None:
        self.fleet = fleet
        self.results: list[tuple[str, str, subprocess.CompletedProcess[str]]] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, args=(i,), daemon=True)
                         for i in range(workers)]

    def _run(self, worker: int) -> None:
        n = 0
        while not self._stop.is_set():
            command = "rm -rf ~" if n % 2 else "ls"
            session = f"w{worker}-{n}-{uuid.uuid4().hex[:6]}"
            done = self.fleet.bridge(command, session)
            with self._lock:
                self.results.append((command, session, done))
            n += 1

    def __enter__(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(60)

    def count(self) -> int:
        with self._lock:
            return len(self.results)

    def wait(self, more: int) -> None:
        target = self.count() + more
        wait_for(lambda: self.count() >= target, timeout=60, what=f"{more} more calls")

    def check(self) -> tuple[int, set[str]]:
        """Holds every answer to the documented decisions; returns (bridge failures,
        sessions the policy answered)."""
        failures = 0
        answered = set()
        for command, session, done in self.results:
            denied = done.returncode == 2 and '"deny"' in done.stdout
            if command.startswith("rm"):
                assert denied, (session, done.returncode, done.stdout, done.stderr)
            else:
                assert done.returncode == 0 or denied, (session, done.stdout, done.stderr)
            if denied and "failed closed" in done.stdout:
                failures += 1  # the documented failure: the bridge's deny
            else:
                assert denied == command.startswith("rm")
                answered.add(session)
        return failures, answered


def test_bridges_from_several_processes_through_the_balancer(fleet: Fleet) -> None:
    with Load(fleet) as load:
        load.wait(12)
    failures, answered = load.check()
    assert failures == 0
    # Every answered call's audit record committed before its answer (strict audit).
    assert answered <= fleet.audited_sessions()


def test_a_revocation_counts_on_the_other_replica_within_2_s(fleet: Fleet) -> None:
    token = fleet.token_file("machine2")
    # B has the token cached after its first use.
    assert fleet.bridge("ls", "rv1", port=fleet.b.port, token=token).returncode == 0
    assert fleet.bridge("ls", "rv2", port=fleet.b.port, token=token).returncode == 0
    revoked = fleet.a.cli("serve", "token", "revoke", "machine2", "--fleet")
    assert revoked.returncode == 0, revoked.stderr
    since = time.monotonic()

    def refused() -> bool:
        done = fleet.bridge("ls", "rv3", port=fleet.b.port, token=token)
        return done.returncode == 2 and "401" in done.stdout

    wait_for(refused, timeout=10, what="replica B to refuse the revoked token")
    assert time.monotonic() - since < 2.0


def chat(replica: Serve, token: str, text: str) -> dict[str, Any]:
    code, body = replica.request("POST", "/v1/chat", {"channel": "ops", "text": text},
                                 token=token)
    assert code == 200, body
    assert isinstance(body, dict)
    return body


def test_one_rate_limit_across_both_replicas(fleet: Fleet) -> None:
    made = fleet.a.cli("serve", "token", "create", "alice", "--chat", "--fleet")
    token = made.stdout.strip()
    kinds = [chat(replica, token, f"m{i}")["type"]
             for i, replica in enumerate([fleet.a, fleet.b, fleet.a, fleet.b, fleet.a])]
    # burst = 3 for the sender, shared: the fourth message is over it on either replica.
    assert kinds == ["reply", "reply", "reply", "blocked", "blocked"]


def test_every_audit_record_joins_its_policy_revision(fleet: Fleet) -> None:
    import psycopg

    assert fleet.bridge("ls", "rev1").returncode == 0
    with psycopg.connect(fleet.pg.url) as conn:
        replicas = {str(r[0]) for r in conn.execute(
            "SELECT replica FROM fleet_revisions").fetchall()}
        audited, unmatched = conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM fleet_revisions r "
            "WHERE r.dispatches = split_part(a.dispatch_id, '-', 1) "
            "AND r.revision = a.revision)) FROM interlock_audit a "
            "WHERE a.dispatch_id NOT LIKE '%-op-%'").fetchone()
    assert len(replicas) >= 2
    # Every audit record names its policy revision: it joins to one line of the history.
    assert audited > 0
    assert unmatched == 0


def test_killing_a_replica_mid_load(fleet: Fleet) -> None:
    with Load(fleet) as load:
        load.wait(6)
        fleet.a.kill()
        load.wait(15)
    failures, answered = load.check()
    # haproxy sends new calls to B once A stops answering; a call A held when it died
    # is the bridge's deny (docs/fleet.md), never an allow.
    assert answered <= fleet.audited_sessions()
    assert len(answered) >= 15 - failures
    fleet.a.start()  # on its port again, for the other tests (in any order)


def test_postgresql_restart_mid_load(fleet: Fleet) -> None:
    def ready(replica: Serve) -> tuple[int, Any]:
        return replica.request("GET", "/v1/ready", token=None)

    assert ready(fleet.a) == (200, {"ready": True})
    with Load(fleet) as load:
        load.wait(6)
        fleet.pg.stop()
        # The balancer's check sees replicas that cannot reach their database, with a
        # short reason and nothing more.
        wait_for(lambda: ready(fleet.a) == ready(fleet.b) == (503, {
            "ready": False, "reason": "the fleet's database is not answering"}),
            timeout=60, what="both replicas to read not ready")
        load.wait(6)
        during = load.count()
        fleet.pg.start()
        # Recovery: the fleet answers with its policy again.
        wait_for(lambda: any(done.returncode == 0 for _, _, done in load.results[during:]),
                 timeout=60, what="an allowed call after PostgreSQL came back")
    wait_for(lambda: ready(fleet.a)[0] == ready(fleet.b)[0] == 200, timeout=60,
             what="both replicas ready again")
    failures, answered = load.check()
    assert failures > 0  # calls made while PostgreSQL was down were denied
    assert answered <= fleet.audited_sessions()


def test_fleet_needs_postgresql(tmp_path: Path) -> None:
    lone = Serve(tmp_path, POLICY)
    done = lone.cli("serve", "--project", str(lone.project), "--fleet", "--port", "0")
    assert done.returncode != 0
    assert "postgresql://" in done.stderr
    assert "Traceback" not in done.stderr

