"""Gemini CLI drops context on BeforeTool: the bridge gives it with the same call's
AfterTool answer (docs/one-policy.md, Caveats, per agent)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from interlock.hosts.bridge import gemini
from interlock.hosts.bridge._common import Result

pytestmark = pytest.mark.e2e


@pytest.fixture(autouse=True)
def _state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTERLOCK_STATE_DIR", str(tmp_path / "state"))


def call(host: str, command: str, session: str = "s1") -> dict[str, object]:
    return {"session_id": session, "hook_event_name": host, "tool_name": "run_shell_command",
            "tool_input": {"command": command}}


def context_of(stdout: str) -> str:
    data = json.loads(stdout) if stdout.strip() else {}
    return str(data.get("hookSpecificOutput", {}).get("additionalContext", ""))


def test_before_tool_context_arrives_with_the_same_calls_after_tool_answer() -> None:
    noted = Result("before_tool_call", "none", context=(("h", "mind the branch"),))
    before = gemini.answer("BeforeTool", call("BeforeTool", "ls"), noted)
    assert "mind the branch" not in before.stdout  # Gemini would drop it here
    other = gemini.answer("AfterTool", call("AfterTool", "pwd"),
                          Result("after_tool_call", "none"))
    assert "mind the branch" not in other.stdout  # another call's answer
    after = gemini.answer("AfterTool", call("AfterTool", "ls"),
                          Result("after_tool_call", "none", context=(("a", "ran fine"),)))
    assert "mind the branch" in context_of(after.stdout)
    assert "ran fine" in context_of(after.stdout)
    again = gemini.answer("AfterTool", call("AfterTool", "ls"),
                          Result("after_tool_call", "none"))
    assert "mind the branch" not in again.stdout  # given once


def test_a_rewritten_call_finds_its_context_under_the_arguments_gemini_runs() -> None:
    changed = Result("before_tool_call", "modify", changes={"args": {"command": "ls -a"}},
                     context=(("h", "listing all"),))
    gemini.answer("BeforeTool", call("BeforeTool", "ls"), changed)
    after = gemini.answer("AfterTool", call("AfterTool", "ls -a"),
                          Result("after_tool_call", "none"))
    assert "listing all" in context_of(after.stdout)
