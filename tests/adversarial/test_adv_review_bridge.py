"""A second look at the installed bridge line: exits nobody chose, odd project paths.

An approved Python hook runs inside the bridge when no server is up. If it
ends the process itself (``os._exit(0)``), the bridge exits 0 having written
nothing, which Claude Code, Codex and Gemini CLI read as "no objection" and
Cursor and Hermes as "allow". The guard line must tell that exit from a real
answer. The project path is written into a shell line: quotes, ``$()``,
backticks and newlines in it must reach the bridge as one argument.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _adv_bridge import GATES, GUARD_REASON, Project, denied


def quitting_project(tmp_path: Path, body: str) -> Project:
    project = Project(tmp_path)
    hook = project.root / ".interlock" / "hooks" / "quitter"
    hook.mkdir(parents=True)
    (hook / "HOOK.yaml").write_text("events: [before_tool_call]\n")
    (hook / "handler.py").write_text(f"import os\n\ndef handle(event):\n    {body}\n")
    (project.root / ".interlock" / "config.toml").write_text("")
    return project


@pytest.mark.parametrize("agent", ["claude", "cursor", "hermes"])
@pytest.mark.parametrize("code", [0, 2])
def test_a_hook_that_ends_the_bridge_with_os_exit_is_a_deny(agent: str, code: int,
                                                           tmp_path: Path) -> None:
    project = quitting_project(tmp_path, f"os._exit({code})")
    gate, payload = GATES[agent]
    ran = project.host_runs(agent, project.install(agent)[gate], payload)
    assert denied(agent, ran), ran
    assert "could not start or crashed" in ran.stderr, ran


@pytest.mark.parametrize("name", ["a b", "it's", 'q"q', "$(touch PWNED)", "`touch PWNED`",
                                  "nl\nx", "-x", "a\\b;c|d&e"])
def test_odd_project_paths_reach_the_bridge_as_one_argument(name: str,
                                                            tmp_path: Path) -> None:
    project = Project(tmp_path / name)
    for agent in ("claude", "hermes"):
        gate, payload = GATES[agent]
        ran = project.host_runs(agent, project.install(agent)[gate], payload)
        assert denied(agent, ran), (agent, ran)
        assert GUARD_REASON in ran.stderr + ran.stdout, (agent, ran)
    assert not list(tmp_path.rglob("PWNED")), "the shell ran part of the project path"


def test_a_thread_a_hook_leaves_running_does_not_hold_the_answer_past_the_timeout(
        tmp_path: Path) -> None:
    # The bridge answers, then Python waits for non-daemon threads at exit: the
    # agent times the hook out and runs the tool.
    project = quitting_project(
        tmp_path, "import threading, time\n    threading.Thread(target=time.sleep, "
                  "args=(3600,)).start()\n    return {'decision': 'block', 'reason': 'no'}")
    command = project.install("claude", "--timeout", "8")["PreToolUse"]
    ran = project.host_runs("claude", command, GATES["claude"][1], timeout=30)
    assert denied("claude", ran), ran
