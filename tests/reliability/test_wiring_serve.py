"""`interlock serve` as a real process: one long-lived host with the registry's
breaker book, the store's dead letters behind the admin endpoints, and a
status of counters, breaker states, revision and unresolved dead letters."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from helpers.http import request

pytestmark = pytest.mark.e2e

CRASH = textwrap.dedent("""\
    #!/bin/sh
    cat > /dev/null
    echo x >> "$COUNTER"
    echo "policy server down, password=hunter2hunter2" >&2
    exit 3
    """)

CONFIG = textwrap.dedent("""\
    [[hooks]]
    name = "crasher"
    events = ["before_tool_call"]
    command = "./crash.sh"
    on_error = "closed"
    timeout = 10
    env_passthrough = ["COUNTER"]
    """)




def test_serve_opens_the_breaker_across_requests_and_serves_dead_letters(
        tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".interlock").mkdir(parents=True)
    script = project / ".interlock" / "crash.sh"
    script.write_text(CRASH)
    script.chmod(0o755)
    (project / ".interlock" / "config.toml").write_text(CONFIG)
    counter = tmp_path / "count"
    env = {k: v for k, v in os.environ.items()
           if k not in ("INTERLOCK_STORE", "INTERLOCK_STATE_DIR")}
    env.update({"INTERLOCK_HOME": str(tmp_path / "home"),
                "INTERLOCK_MANAGED": str(tmp_path / "managed"),
                "INTERLOCK_ACCEPT_HOOKS": "1", "COUNTER": str(counter),
                "INTERLOCK_SOCKET": str(Path(tempfile.mkdtemp(prefix="il-", dir="/tmp"))
                                        / "s.sock")})
    cli = [sys.executable, "-m", "interlock"]
    made = subprocess.run([*cli, "serve", "token", "create", "ops", "--admin"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    state = tmp_path / "home" / "state"
    # The token store lives in Interlock's one (protected, private) state dir.
    assert (state / "server-tokens.json").exists()
    assert stat.S_IMODE(os.stat(state).st_mode) == 0o700

    proc = subprocess.Popen([*cli, "serve", "--project", str(project), "--port", "0"],
                            env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        while "listening on" not in line and line:
            line = proc.stderr.readline()
        assert "listening on http://127.0.0.1:" in line, line
        port = int(line.split("http://127.0.0.1:")[1].split()[0].rstrip(",/"))
        call = {"tool_name": "terminal", "args": {"command": "ls"}}
        for _ in range(4):
            code, out = request(port, "POST", "/v1/events/before_tool_call", call, token)
            assert code == 200, out
            assert out["decision"] == "block"  # fail closed, breaker open or not
        # Three crashes opened the breaker; the fourth request never ran the script.
        assert len(counter.read_text().split()) == 3

        code, status = request(port, "GET", "/v1/status", token=token)
        assert code == 200
        assert status["revision"] >= 1
        assert [(b["hook"], b["state"]) for b in status["breakers"]] == [
            ("project:crasher", "open")]
        assert status["hooks"] == 1  # active hooks; per-hook counters are in hook_stats
        hook = status["hook_stats"]["project:crasher"]
        assert hook["failures"] == 4
        assert hook["failures_by_mode"] == {"breaker_open": 1, "crash": 3}
        assert hook["breaker_opens"] == 1
        assert status["unresolved_dead_letters"] == 4
        assert status["dead_letters"] == {"unresolved": 4}

        assert request(port, "GET", "/v1/runtime/hooks/dead-letter")[0] == 401
        code, listed = request(port, "GET", "/v1/runtime/hooks/dead-letter?unresolved=true",
                                token=token)
        assert code == 200
        records = listed["records"]
        assert sorted(r["mode"] for r in records) == ["breaker_open", "crash", "crash", "crash"]
        assert all("hunter2hunter2" not in r["error"] for r in records)
        first = records[0]["id"]
        code, _ = request(port, "POST", f"/v1/runtime/hooks/dead-letter/{first}/resolve",
                           token=token)
        assert code == 200
        code, _ = request(port, "POST", "/v1/runtime/hooks/dead-letter/nope/resolve",
                           token=token)
        assert code == 404
        code, status = request(port, "GET", "/v1/status", token=token)
        assert status["unresolved_dead_letters"] == 3
        # The registry is the reloader: an operator reload keeps the (open) breaker.
        code, reloaded = request(port, "POST", "/v1/runtime/reload", token=token)
        assert code == 200, reloaded
        request(port, "POST", "/v1/events/before_tool_call", call, token)
        assert len(counter.read_text().split()) == 3
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        assert proc.stderr is not None
        proc.stderr.close()
    # The store was flushed on exit; the CLI reads the same default location.
    listed_cli = subprocess.run([*cli, "deadletter", "list", "--json"], env=env,
                                capture_output=True, text=True, timeout=60)
    letters = json.loads(listed_cli.stdout)
    assert len(letters) == 5
    assert sum(1 for d in letters if d["resolved_at"] is not None) == 1
