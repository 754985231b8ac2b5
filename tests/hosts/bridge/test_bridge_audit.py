"""The in-process bridge is strict about its audit record, like its server: a
decision whose record the store will not take is the host's deny, whatever the
deadline (docs/one-policy.md, The server the bridge starts)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # waits out the store's 5 s

BREAK = ("CREATE TRIGGER injected BEFORE INSERT ON interlock_audit "
         "BEGIN SELECT RAISE(ABORT, 'injected fault: interlock_audit is unwritable'); END")


def test_an_unrecorded_in_process_decision_is_a_deny(tmp_path: Path) -> None:
    root = tmp_path / "p"
    (root / ".interlock").mkdir(parents=True)
    (root / ".interlock" / "guard.py").write_text("def handle(e):\n    return None\n")
    (root / ".interlock" / "config.toml").write_text(
        '[[hooks]]\nname = "guard"\nevents = ["before_tool_call"]\nhandler = "guard.py"\n')
    store = tmp_path / "il.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERLOCK_")}
    env.update(INTERLOCK_HOME=str(tmp_path / "home"), INTERLOCK_ACCEPT_HOOKS="1",
               INTERLOCK_STORE=str(store), INTERLOCK_BRIDGE_AUTOSTART="0")
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
