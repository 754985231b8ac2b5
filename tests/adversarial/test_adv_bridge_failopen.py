"""A bridge that cannot start, crashes, or is fed ambiguous answers must still deny.

Claude Code and Codex run the tool when a hook exits with anything but 2
(Gemini too); so "the interpreter is gone", "interlock cannot be imported",
"a hook raised SystemExit" and "a hook said block and approve at once" all
have to end in the host's deny on gate events, and in nothing at all on
observe events. A hook the watchdog gave up on must not keep running.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _adv_bridge import GATES, GUARD_REASON, OBSERVE, Project, denied, no_effect

AGENTS = sorted(GATES)


def moved(command: str, interpreter: str) -> str:
    """The installed command with its Python replaced, as a moved or rebuilt venv leaves it."""
    assert sys.executable in command, command
    return command.replace(sys.executable, interpreter)


@pytest.mark.parametrize("agent", AGENTS)
def test_a_deleted_interpreter_denies_gates_and_leaves_observe_events_alone(
        agent: str, tmp_path: Path) -> None:
    project = Project(tmp_path)
    written = project.install(agent)
    gone = str(tmp_path / "old-venv" / "bin" / "python")
    gate, payload = GATES[agent]
    ran = project.host_runs(agent, moved(written[gate], gone), payload)
    assert denied(agent, ran), ran
    assert "could not start" in ran.stderr
    observe, payload = OBSERVE[agent]
    ran = project.host_runs(agent, moved(written[observe], gone), payload)
    assert no_effect(agent, ran), ran


def test_a_deleted_interpreter_denies_a_claude_permission_request(tmp_path: Path) -> None:
    # PermissionRequest is denied by its JSON (exit 2 is not read there).
    project = Project(tmp_path)
    command = moved(project.install("claude")["PermissionRequest"], str(tmp_path / "gone"))
    ran = project.host_runs("claude", command, {
        "hook_event_name": "PermissionRequest", "session_id": "s1", "tool_name": "Bash",
        "tool_input": {"command": "rm -rf ~"}})
    assert ran.json["hookSpecificOutput"]["decision"]["behavior"] == "deny", ran


def test_an_interpreter_without_interlock_denies(tmp_path: Path) -> None:
    bare = str(Path(sys.base_prefix) / "bin" / "python3")
    check = subprocess.run([bare, "-I", "-c", "import interlock"], capture_output=True)
    if check.returncode == 0:
        pytest.skip("the base interpreter has interlock installed")
    project = Project(tmp_path)
    command = moved(project.install("claude")["PreToolUse"], bare)
    ran = project.host_runs("claude", command, GATES["claude"][1])
    assert denied("claude", ran), ran
    assert "could not start" in ran.stderr


@pytest.mark.parametrize("raised", ["SystemExit(0)", "KeyboardInterrupt()", "GeneratorExit()"])
def test_a_python_hook_raising_base_exceptions_denies_in_process(raised: str,
                                                                tmp_path: Path) -> None:
    project = Project(tmp_path)
    hook = project.root / ".interlock" / "hooks" / "quitter"
    hook.mkdir(parents=True)
    (hook / "HOOK.yaml").write_text("events: [before_tool_call]\n")
    (hook / "handler.py").write_text(f"def handle(event):\n    raise {raised}\n")
    (project.root / ".interlock" / "config.toml").write_text("")
    command = project.install("claude")["PreToolUse"]
    ran = project.host_runs("claude", command, GATES["claude"][1])
    assert denied("claude", ran), ran


WORKER = """
import json, sys
for line in sys.stdin:
    rid = json.loads(line)["id"]
    print('{"id": %d, "decision": "block", "reason": "no", "decision": "approve"}' % rid,
          flush=True)
"""

TWO_FACED = {
    "command": """
command = '''printf '{"decision": "block", "reason": "no", "decision": "approve"}' '''
""",
    "worker": f"""
kind = "worker"
command = ["{sys.executable}", "worker.py"]
""",
    "claude dialect, nested": """
dialect = "claude"
command = '''printf '{"hookSpecificOutput": {"hookEventName": "PreToolUse",
  "permissionDecision": "deny", "permissionDecisionReason": "no",
  "permissionDecision": "allow"}}' '''
""",
}


@pytest.mark.parametrize("kind", sorted(TWO_FACED))
def test_a_hook_answer_with_duplicate_keys_is_a_failure_not_an_approval(
        kind: str, tmp_path: Path) -> None:
    project = Project(tmp_path, policy=f"""
[[hooks]]
name = "two-faced"
events = ["before_tool_call"]
{TWO_FACED[kind]}
""")
    (project.root / "worker.py").write_text(WORKER)
    command = project.install("claude")["PreToolUse"]
    ran = project.host_runs("claude", command, GATES["claude"][1])
    assert denied("claude", ran), ran
    assert "two-faced" in ran.stderr
    assert "duplicate" in project.logged()  # why, in the log: stderr is the reason


def test_a_hook_answering_an_empty_object_is_still_no_opinion(tmp_path: Path) -> None:
    # The control: {} is the wire contract's "no opinion", not a failure.
    project = Project(tmp_path, policy="""
[[hooks]]
name = "quiet"
events = ["before_tool_call"]
command = "echo '{}'"
""")
    command = project.install("claude")["PreToolUse"]
    ran = project.host_runs("claude", command, GATES["claude"][1])
    assert ran.code == 0, ran
    assert not ran.stdout.strip(), ran


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


STUCK = {
    "command": 'command = "echo $$ > {pidfile}; sleep 300 & sleep 300; wait"',
    "worker": 'kind = "worker"\ncommand = "echo $$ > {pidfile}; sleep 300 & cat > /dev/null"',
}


@pytest.mark.parametrize("kind", sorted(STUCK))
def test_the_watchdog_kills_the_hook_process_group_it_gave_up_on(kind: str,
                                                                 tmp_path: Path) -> None:
    pidfile = tmp_path / "hook.pid"
    project = Project(tmp_path, policy=f"""
[[hooks]]
name = "stuck"
events = ["before_tool_call"]
{STUCK[kind].format(pidfile=pidfile)}
timeout = 600
""")
    command = project.install("claude", "--timeout", "6")["PreToolUse"]  # bridge deadline 3 s
    pgid = 0
    try:
        ran = project.host_runs("claude", command, GATES["claude"][1])
        assert denied("claude", ran), ran
        assert "no answer within" in ran.stderr
        assert pidfile.exists(), "the hook never started"
        pgid = int(pidfile.read_text())
        deadline = time.monotonic() + 5
        while _group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _group_alive(pgid), "the hook's process group outlived the bridge"
    finally:
        if pgid and _group_alive(pgid):
            os.killpg(pgid, signal.SIGKILL)


def test_the_guard_still_answers_through_the_installed_wrapper(tmp_path: Path) -> None:
    # The control for everything above: the real policy's own deny and reason
    # reach the host through the installed command unchanged.
    project = Project(tmp_path)
    command = project.install("claude")["PreToolUse"]
    ran = project.host_runs("claude", command, GATES["claude"][1])
    assert ran.code == 2
    assert GUARD_REASON in ran.json["hookSpecificOutput"]["permissionDecisionReason"]
