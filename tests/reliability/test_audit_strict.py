"""Strict audit: every decision `interlock serve` answered is in the audit log,
even when the server is killed with SIGKILL right after answering."""

from __future__ import annotations

import http.client
import re
import signal
import sqlite3
import threading
from pathlib import Path

import pytest

from helpers.serve import GUARD_CONFIG, NO_RM, Serve, wait_for

pytestmark = pytest.mark.e2e

CONFIG = GUARD_CONFIG
GUARD = NO_RM


def _answered_then_killed(serve: Serve, clients: int = 4, kill_after: int = 150) -> set[str]:
    """Sessions whose decision came back before serve was SIGKILLed mid-traffic."""
    answered: set[str] = set()
    lock = threading.Lock()
    enough = threading.Event()

    def client(n: int) -> None:
        i = 0
        while True:
            session = f"c{n}-{i}"
            i += 1
            try:
                code, out = serve.request("POST", "/v1/events/before_tool_call", {
                    "tool_name": "terminal", "args": {"command": "rm x" if i % 2 else "ls"},
                    "session_id": session}, timeout=10)
            except (OSError, http.client.HTTPException):
                return  # killed, maybe half-way through an answer (never counted)
            if code != 200:
                return
            assert (out["decision"] == "block") == bool(i % 2), out
            with lock:
                answered.add(session)
                if len(answered) >= kill_after:
                    enough.set()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    assert enough.wait(60), "the clients got too few answers"
    serve.kill()  # at once, with requests in flight and answers just sent
    for t in threads:
        t.join(30)
    with lock:
        return set(answered)


def test_strict_audit_loses_no_answered_decision_to_sigkill(tmp_path: Path) -> None:
    serve = Serve(tmp_path, CONFIG, files={"guard.py": GUARD}).start()
    answered = _answered_then_killed(serve)
    conn = sqlite3.connect(serve.store)
    audited = {row[0] for row in conn.execute("SELECT session_id FROM interlock_audit")}
    conn.close()
    missing = answered - audited
    assert not missing, f"{len(missing)} of {len(answered)} answered decisions not audited"


def test_strict_audit_refuses_to_answer_what_it_cannot_record(tmp_path: Path) -> None:
    serve = Serve(tmp_path, CONFIG, files={"guard.py": GUARD}).start()
    try:
        assert serve.event({"tool_name": "terminal", "args": {"command": "ls"}})
        other = sqlite3.connect(serve.store, timeout=30, isolation_level=None)
        other.execute("CREATE TRIGGER injected BEFORE INSERT ON interlock_audit "
                      "BEGIN SELECT RAISE(ABORT, 'injected fault'); END")
        code, body = serve.request("POST", "/v1/events/before_tool_call",
                                   {"tool_name": "terminal", "args": {"command": "ls"}})
        assert code == 503
        assert "not recorded" in body["error"]
        other.execute("DROP TRIGGER injected")
        other.close()
        assert serve.event({"tool_name": "terminal", "args": {"command": "ls"}})
    finally:
        serve.stop()


def test_a_store_deleted_under_serve_is_refused_and_named(tmp_path: Path) -> None:
    serve = Serve(tmp_path, CONFIG, files={"guard.py": GUARD}).start()
    try:
        assert serve.event({"tool_name": "terminal", "args": {"command": "ls"}})
        repair = serve.cli("store", "repair", "--force")
        assert repair.returncode != 0
        assert "in use" in repair.stderr + repair.stdout
        for suffix in ("", "-wal", "-shm"):
            Path(serve.store + suffix).unlink(missing_ok=True)
        # Before: answered and "recorded" into the deleted file; status said ok.
        code, body = serve.request("POST", "/v1/events/before_tool_call",
                                   {"tool_name": "terminal", "args": {"command": "ls"}})
        assert code == 503
        assert serve.store in body["error"]
        assert "deleted" in body["error"]
        code, status = serve.request("GET", "/v1/status")
        assert not status["store"]["ok"]
    finally:
        serve.kill()  # its store cannot write: a clean stop would wait for it


def test_fast_audit_says_what_a_stop_could_not_write(tmp_path: Path) -> None:
    serve = Serve(tmp_path, CONFIG, files={"guard.py": GUARD}, extra=["--audit", "fast"])
    serve.start()
    try:
        assert serve.event({"tool_name": "terminal", "args": {"command": "ls"}})
        other = sqlite3.connect(serve.store, timeout=30, isolation_level=None)
        other.execute("CREATE TRIGGER injected BEFORE INSERT ON interlock_audit "
                      "BEGIN SELECT RAISE(ABORT, 'injected fault'); END")
        other.close()
        for _ in range(3):  # answered at once; their records cannot be written
            assert serve.event({"tool_name": "terminal", "args": {"command": "ls"}})
        assert serve.proc is not None
        serve.proc.send_signal(signal.SIGTERM)
        code = serve.proc.wait(90)  # the store's close waits 30 s for the writer
    finally:
        serve.kill()
    # Before: exit 0, and "will retry" was the last word on the records left behind.
    assert code != 0
    wait_for(lambda: "exiting 1" in "".join(serve.log), what="serve's last words")
    # 3 or 4: the first record may not have committed before the fault came
    assert re.search(r"\b[34] records not written to " + re.escape(serve.store),
                     "".join(serve.log))
