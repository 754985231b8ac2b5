"""The in-process bridge is strict about its audit record, like its server: a
decision whose record the store will not take is the host's deny, whatever the
deadline (docs/one-policy.md, The server the bridge starts)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # waits out the store's 5 s

BREAK = ("CREATE TRIGGER injected BEFORE INSERT ON interlock_audit "
         "BEGIN SELECT RAISE(ABORT, 'injected fault: interlock_audit is unwritable'); END")


def _quiet_project(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A project with one quiet hook, its store, and the bridge's environment
    (no server: the bridge decides in process)."""
    root = tmp_path / "p"
    (root / ".interlock").mkdir(parents=True)
    (root / ".interlock" / "guard.py").write_text("def handle(e):\n    return None\n")
    (root / ".interlock" / "config.toml").write_text(
        '[[hooks]]\nname = "guard"\nevents = ["before_tool_call"]\nhandler = "guard.py"\n')
    store = tmp_path / "il.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERLOCK_")}
    env.update(INTERLOCK_HOME=str(tmp_path / "home"), INTERLOCK_ACCEPT_HOOKS="1",
               INTERLOCK_STORE=str(store), INTERLOCK_BRIDGE_AUTOSTART="0")
    return root, store, env


def test_an_unrecorded_in_process_decision_is_a_deny(tmp_path: Path) -> None:
    root, store, env = _quiet_project(tmp_path)
    payload = json.dumps({"session_id": "s", "cwd": str(root), "hook_event_name": "PreToolUse",
                          "tool_name": "Bash", "tool_input": {"command": "ls"},
                          "tool_use_id": "t1"})

    def call() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-I", "-m", "interlock.bridge", "claude", "--project", str(root),
             "--deadline", "120"], input=payload, capture_output=True, text=True, env=env,
            timeout=150)

    assert call().returncode == 0  # allowed, recorded
    conn = sqlite3.connect(store, isolation_level=None)
    conn.execute(BREAK)
    conn.close()
    refused = call()
    assert refused.returncode == 2, refused
    assert '"deny"' in refused.stdout
    assert "not recorded" in refused.stdout


def _damaged_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, int]:
    """A project with a guard, and a store with a damaged middle: (root, store, size)."""
    from interlock.store import open_store

    root = tmp_path / "p"
    (root / ".interlock").mkdir(parents=True)
    (root / ".interlock" / "guard.py").write_text(
        "from interlock import block\n\ndef handle(e):\n"
        "    return block('no rm') if 'rm' in e.args.get('command', '') else None\n")
    (root / ".interlock" / "config.toml").write_text(
        '[[hooks]]\nname = "guard"\nevents = ["before_tool_call"]\nhandler = "guard.py"\n')
    store = tmp_path / "il.db"
    for key in [k for k in os.environ if k.startswith("INTERLOCK_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("INTERLOCK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("INTERLOCK_ACCEPT_HOOKS", "1")
    monkeypatch.setenv("INTERLOCK_STORE", str(store))
    filled = open_store(str(store))
    now = time.time()  # recent: the opening prune must not drop the damaged pages
    filled.backend.write([(now, f"d-{i}", "s", "before_tool_call", "terminal", "x", "none",
                           "applied", "r" * 200, 0.1, 1, "none", None, None)
                          for i in range(5000)], [], [])
    filled.close()
    conn = sqlite3.connect(store)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    size = store.stat().st_size
    with open(store, "r+b") as fh:
        fh.seek(size // 3)
        fh.write(os.urandom(size // 4))
    return root, store, size


PAYLOAD = {"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash",
           "tool_input": {"command": "rm x"}, "tool_use_id": "t1"}


def test_an_in_process_call_reads_a_large_store_whole_only_when_damage_is_known(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading the hooks in process is every session's first call: when it starts
    the project's server it does not read a large store whole (the server does),
    but it refuses one a whole-file check found damaged."""
    from interlock.engine.errors import ConfigError
    from interlock.hosts.bridge import _core
    from interlock.store import open_store

    root, store, size = _damaged_store(tmp_path, monkeypatch)
    payload = {**PAYLOAD, "cwd": str(root)}
    out = _core.evaluate_local("claude", payload, str(root), check_up_to=size // 8)
    assert out["decision"] == "block"  # the policy answered
    assert out["reason"] == "no rm"
    with pytest.raises(ConfigError, match="damaged"):
        open_store(str(store)).close()  # what the server it starts does first
    with pytest.raises(ConfigError, match="damaged"):
        _core.evaluate_local("claude", payload, str(root), check_up_to=size // 8)


def test_a_call_that_starts_no_server_reads_the_store_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """With no server to follow (INTERLOCK_BRIDGE_AUTOSTART=0, a remote server's
    fallback), nobody else would ever read the store whole."""
    from interlock.hosts.bridge import _core

    root, _store, size = _damaged_store(tmp_path, monkeypatch)
    monkeypatch.setattr(_core, "IN_PROCESS_CHECK_BYTES", size // 8)
    raw = json.dumps({**PAYLOAD, "cwd": str(root)}).encode()
    code = _core.main(["claude", "--project", str(root), "--local"], raw=raw, start=None)
    out = capsys.readouterr().out
    assert code == 2, out
    assert '"deny"' in out
    assert "damaged" in out


def test_the_installed_line_denies_by_its_deadline_while_sqlite_holds_the_bridge(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Another process holds the store in exclusive locking mode: the bridge's open
    # waits inside SQLite (30 s busy timeout), where the SIGALRM watchdog's Python
    # handler cannot run. The agent would time the hook out and, Claude Code,
    # allow the call; the line must end with a deny well before then.
    from interlock.hosts.bridge.install import command_for

    root, store, env = _quiet_project(tmp_path)
    monkeypatch.setenv("INTERLOCK_HOME", env["INTERLOCK_HOME"])
    monkeypatch.delenv("INTERLOCK_STATE_DIR", raising=False)
    line = command_for("claude", root, 2, "PreToolUse")
    payload = json.dumps({"session_id": "s", "cwd": str(root), "hook_event_name": "PreToolUse",
                          "tool_name": "Bash", "tool_input": {"command": "ls"},
                          "tool_use_id": "t1"})

    def call() -> subprocess.CompletedProcess[str]:
        return subprocess.run(["/bin/sh", "-c", line], input=payload, capture_output=True,
                              text=True, env=env, timeout=20)

    assert call().returncode == 0, "allowed, recorded: the store exists"
    conn = sqlite3.connect(store, isolation_level=None)
    try:
        conn.execute("PRAGMA locking_mode=EXCLUSIVE")
        conn.execute("BEGIN EXCLUSIVE")
        conn.execute("CREATE TABLE held (x)")
        conn.execute("COMMIT")  # the exclusive lock stays until the connection closes
        refused = call()  # before: ~30 s, past this timeout (and the agent's)
    finally:
        conn.close()
    assert refused.returncode == 2, refused
    assert '"deny"' in refused.stdout
