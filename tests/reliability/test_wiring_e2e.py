"""A real run records what docs/reliability.md promises (What the hosts
record), through real processes.

`interlock run` with a scripted model, against a project whose command hooks
crash (fail-closed), block, or fail twice before answering (`retries = 2`).
Then the operator's commands read the one default store, with no `--store`:
`deadletter list/resolve`, `audit --verdict block`, `status`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

SECRET = "ghp_" + "Zq8xR2mN4vB7kL1pW9sT3yU6cE5aD0fH2jG8"

CRASH = textwrap.dedent(f"""\
    #!/bin/sh
    cat > /dev/null
    echo "cannot reach the policy server with token={SECRET}" >&2
    exit 3
    """)

BLOCK = textwrap.dedent("""\
    #!/bin/sh
    cat > /dev/null
    echo '{"decision":"block","reason":"no writes in this project"}'
    """)

FLAKY = textwrap.dedent("""\
    #!/bin/sh
    # Fails twice, then answers: the count lives next to the project.
    cat > /dev/null
    n=$(cat "$COUNTER" 2>/dev/null || echo 0)
    n=$((n + 1))
    echo "$n" > "$COUNTER"
    if [ "$n" -le 2 ]; then echo "flaky failure $n" >&2; exit 1; fi
    exit 0
    """)

CONFIG = textwrap.dedent("""\
    [[hooks]]
    name = "crasher"
    events = ["before_tool_call"]
    matcher = "terminal"
    command = "./crash.sh"
    on_error = "closed"
    timeout = 10

    [[hooks]]
    name = "no-writes"
    events = ["before_tool_call"]
    matcher = "write_file"
    command = "./block.sh"
    on_error = "closed"
    timeout = 10
    """)

SCRIPT = textwrap.dedent("""\
    - tool_calls:
        - {name: terminal, args: {command: "echo ran > ran.txt"}}
    - match: "tool call blocked"
      tool_calls:
        - {name: write_file, args: {path: notes.txt, content: "x"}}
    - match: "no writes in this project"
      text: gave up
    """)

FLAKY_CONFIG = textwrap.dedent("""\
    [[hooks]]
    name = "flaky"
    events = ["before_tool_call"]
    matcher = "terminal"
    command = "./flaky.sh"
    on_error = "closed"
    timeout = 10
    retries = 2
    env_passthrough = ["COUNTER"]
    """)

FLAKY_SCRIPT = textwrap.dedent("""\
    - tool_calls:
        - {name: terminal, args: {command: "echo ran > ran.txt"}}
    - match: "exit_code"
      text: done
    """)


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("INTERLOCK_STORE", "INTERLOCK_STATE_DIR", "INTERLOCK_MODEL",
                        "OPENAI_BASE_URL", "OPENAI_API_KEY")}
    env.update({"INTERLOCK_HOME": str(tmp_path / "home"),
                "INTERLOCK_MANAGED": str(tmp_path / "managed"), **extra})
    return env


def interlock(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "interlock", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def _project(tmp_path: Path, config: str, scripts: dict[str, str], model: str) -> Path:
    project = tmp_path / "project"
    (project / ".interlock").mkdir(parents=True)
    for name, text in scripts.items():
        path = project / ".interlock" / name
        path.write_text(text)
        path.chmod(0o755)
    (project / ".interlock" / "config.toml").write_text(config)
    (tmp_path / "script.yaml").write_text(model)
    return project


def _json(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_run_is_audited_and_dead_lettered_in_the_default_store(tmp_path: Path) -> None:
    project = _project(tmp_path, CONFIG, {"crash.sh": CRASH, "block.sh": BLOCK}, SCRIPT)
    env = _env(tmp_path)
    run = interlock("run", "--accept-hooks", "-m", f"scripted:{tmp_path / 'script.yaml'}",
                    "tidy up", cwd=project, env=env)
    assert run.returncode == 0, run.stderr
    assert not (project / "ran.txt").exists()  # the crash blocked the terminal call
    assert not (project / "notes.txt").exists()
    # One default location, in the (protected) state dir, read with no --store.
    assert (tmp_path / "home" / "state" / "interlock.db").exists()

    letters = _json(interlock("deadletter", "list", "--json", cwd=tmp_path, env=env))
    crashes = [d for d in letters if d["hook"] == "project:crasher"]
    assert len(crashes) == 1, letters
    crash = crashes[0]
    assert crash["mode"] == "crash"
    assert crash["event"] == "before_tool_call"
    assert crash["fail_closed"] is True
    assert crash["resolved_at"] is None
    assert "cannot reach the policy server" in crash["error"]
    assert SECRET not in crash["error"]
    assert SECRET not in (tmp_path / "home" / "state" / "interlock.db").read_bytes().decode(
        "latin-1")

    blocks = _json(interlock("audit", "--verdict", "block", "--json", cwd=tmp_path, env=env))
    by_hook = {b["hook"]: b for b in blocks}
    assert by_hook["project:no-writes"]["reason"] == "no writes in this project"
    assert by_hook["project:no-writes"]["subject"] == "write_file"
    assert "project:crasher" in by_hook  # a fail-closed failure reads as a block

    status = _json(interlock("status", "--json", cwd=tmp_path, env=env))
    assert status["counts"]["dead_letters"] == 1
    assert status["counts"]["unresolved"] == 1
    assert status["hooks"]["project:no-writes"]["verdicts"]["block"] == 1
    assert status["hooks"]["project:crasher"]["executions"] == 1

    resolved = interlock("deadletter", "resolve", str(crash["id"]), cwd=tmp_path, env=env)
    assert resolved.returncode == 0, resolved.stderr
    kept = _json(interlock("deadletter", "list", "--json", cwd=tmp_path, env=env))
    assert [d["id"] for d in kept] == [crash["id"]]  # resolving keeps the record
    assert kept[0]["resolved_at"] is not None
    assert _json(interlock("deadletter", "list", "--unresolved", "--json", cwd=tmp_path,
                           env=env)) == []
    after = _json(interlock("status", "--json", cwd=tmp_path, env=env))
    assert after["counts"] == {**status["counts"], "unresolved": 0}


def test_a_hook_with_retries_is_retried_and_the_run_proceeds(tmp_path: Path) -> None:
    project = _project(tmp_path, FLAKY_CONFIG, {"flaky.sh": FLAKY}, FLAKY_SCRIPT)
    counter = tmp_path / "count"
    env = _env(tmp_path, COUNTER=str(counter))
    run = interlock("run", "--accept-hooks", "-m", f"scripted:{tmp_path / 'script.yaml'}",
                    "go", cwd=project, env=env)
    assert run.returncode == 0, run.stderr
    assert counter.read_text().strip() == "3"  # two failures, then the answer
    assert (project / "ran.txt").read_text() == "ran\n"
    # A failure that a retry recovered is not a dead letter.
    assert _json(interlock("deadletter", "list", "--json", cwd=tmp_path, env=env)) == []
    audit = _json(interlock("audit", "--json", cwd=tmp_path, env=env))
    flaky = [a for a in audit if a["hook"] == "project:flaky"]
    assert [a["verdict"] for a in flaky] == ["none"]


@pytest.mark.parametrize(("field", "value", "needle"), [
    ("retries", "-1", "retries"),
    ("retries", "11", "at most 10"),
    ("retry_budget", "0", "retry_budget"),
    ("breaker_threshold", "-2", "breaker_threshold"),
    ("breaker_cooldown", "-5", "breaker_cooldown"),
])
def test_bad_reliability_settings_name_the_file_line_and_field(
        tmp_path: Path, field: str, value: str, needle: str) -> None:
    config = FLAKY_CONFIG.replace("retries = 2", f"{field} = {value}")
    project = _project(tmp_path, config, {"flaky.sh": FLAKY}, FLAKY_SCRIPT)
    proc = interlock("hooks", "validate", cwd=project, env=_env(tmp_path))
    assert proc.returncode == 2
    assert needle in proc.stderr
    assert "config.toml" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_hooks_test_is_a_dry_run_that_records_nothing(tmp_path: Path) -> None:
    project = _project(tmp_path, CONFIG, {"crash.sh": CRASH, "block.sh": BLOCK}, SCRIPT)
    env = _env(tmp_path)
    approved = interlock("hooks", "approve", "--all", cwd=project, env=env)
    assert approved.returncode == 0, approved.stderr
    tested = interlock("hooks", "test", "before_tool_call", "--tool", "terminal", "--json",
                       cwd=project, env=env)
    outcome = json.loads(tested.stdout)
    assert outcome["decision"] == "block"  # the crash, fail-closed
    assert not (tmp_path / "home" / "state" / "interlock.db").exists()
    assert _json(interlock("deadletter", "list", "--json", cwd=tmp_path, env=env)) == []


def test_a_bridge_in_process_records_into_the_default_store(tmp_path: Path) -> None:
    project = _project(tmp_path, CONFIG, {"crash.sh": CRASH, "block.sh": BLOCK}, SCRIPT)
    env = _env(tmp_path, INTERLOCK_SOCKET=str(tmp_path / "no-server.sock"),
               INTERLOCK_ACCEPT_HOOKS="1")
    payload = {"session_id": "s-bridge", "cwd": str(project), "hook_event_name": "PreToolUse",
               "tool_name": "Write", "tool_input": {"file_path": "x.txt", "content": "x"},
               "tool_use_id": "t1"}
    bridged = subprocess.run([sys.executable, "-m", "interlock.bridge", "claude", "--project",
                              str(project)], input=json.dumps(payload), env=env,
                             capture_output=True, text=True, timeout=60)
    assert bridged.returncode == 2, bridged.stderr
    assert "no writes in this project" in bridged.stdout
    rows = _json(interlock("audit", "--session", "s-bridge", "--json", cwd=tmp_path, env=env))
    assert [(r["hook"], r["verdict"]) for r in rows] == [("project:no-writes", "block")]


def test_a_bad_store_url_stops_a_host_with_one_clear_line(tmp_path: Path) -> None:
    project = _project(tmp_path, CONFIG, {"crash.sh": CRASH, "block.sh": BLOCK}, SCRIPT)
    env = _env(tmp_path, INTERLOCK_STORE="mysql://u@db/x")
    run = interlock("run", "--accept-hooks", "-m", f"scripted:{tmp_path / 'script.yaml'}",
                    "tidy up", cwd=project, env=env)
    assert run.returncode == 2
    assert "unknown store scheme 'mysql'" in run.stderr
    assert "Traceback" not in run.stderr
    assert not (project / "ran.txt").exists()
