"""Each agent's current events: mapped ones build, unmapped ones fail the right
way, and flow-control answers mean what the agent reads them as."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from interlock.hosts.bridge import host
from interlock.hosts.bridge._common import Result
from interlock.hosts.bridge._events import build_event

pytestmark = pytest.mark.e2e


def bridge(agent: str, payload: dict[str, Any], root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "INTERLOCK_SOCKET": str(root / "none.sock")}
    env.pop("INTERLOCK_PROJECT", None)
    return subprocess.run([sys.executable, "-m", "interlock", "bridge", agent, "--project",
                           str(root)], input=json.dumps(payload), capture_output=True,
                          text=True, env=env, timeout=60)


def _payload(agent: str, event: str) -> dict[str, Any]:
    key = "event" if agent == "moltis" else "hook_event_name"
    return {key: event, "session_id": "s"}


@pytest.mark.parametrize(("agent", "event"), [
    ("claude", "Setup"), ("claude", "PostToolBatch"), ("claude", "Elicitation"),
    ("claude", "InstructionsLoaded"), ("claude", "TeammateIdle"), ("codex", "Interrupt"),
    ("hermes", "transform_terminal_output"), ("hermes", "kanban_task_completed")])
def test_unmapped_observe_events_get_no_effect(agent: str, event: str, tmp_path: Path) -> None:
    proc = bridge(agent, _payload(agent, event), tmp_path)
    assert (proc.returncode, proc.stdout) == (0, "")
    assert f"no effect on {event}" in proc.stderr


@pytest.mark.parametrize(("agent", "event", "code"), [
    ("claude", "WorktreeCreate", 2), ("gemini", "BeforeToolSelection", 2),
    ("claude", "NoSuchEvent", 2)])
def test_unmapped_gate_events_still_fail_closed(agent: str, event: str, code: int,
                                                tmp_path: Path) -> None:
    proc = bridge(agent, _payload(agent, event), tmp_path)
    assert proc.returncode == code
    assert "has no Interlock event" in proc.stdout


def _hermes(hook: str, **extra: Any) -> dict[str, Any]:
    # Hermes's shell-hook wire: kwargs other than tool_name/args/session ids go to extra.
    return {"hook_event_name": hook, "tool_name": None, "tool_input": None,
            "session_id": "parent", "cwd": "/p", "profile": "default", "extra": extra}


def test_hermes_events_that_failed_to_build_now_build() -> None:
    child = build_event("hermes", _hermes(
        "subagent_start", parent_turn_id="t", child_session_id="child", child_role="leaf",
        child_goal="review the diff"))
    assert child.task == "review the diff"  # type: ignore[attr-defined]
    assert child.child_session_id == "child"  # type: ignore[attr-defined]
    approval = build_event("hermes", _hermes(
        "pre_approval_request", command="rm -rf build", description="recursive delete",
        pattern_key="rm", session_key="sk", surface="cli"))
    assert approval.tool_name == "terminal"  # type: ignore[attr-defined]
    assert approval.args == {"command": "rm -rf build"}  # type: ignore[attr-defined]
    assert approval.reason == "recursive delete"  # type: ignore[attr-defined]
    error = build_event("hermes", _hermes(
        "api_request_error", model="m", status_code=504,
        error={"type": "APITimeoutError", "message": "timed out"}))
    assert (error.error, error.status_code) == ("timed out", 504)  # type: ignore[attr-defined]
    message = build_event("hermes", _hermes("pre_gateway_dispatch",
                                            event="MessageEvent(text='hi')", gateway="g"))
    assert "hi" in message.text  # type: ignore[attr-defined]
    command = build_event("hermes", _hermes("pre_command", command="model", args_raw="x",
                                            surface="cli"))
    assert (command.command, command.arguments) == ("model", "x")  # type: ignore[attr-defined]


def test_hermes_gateway_only_names_are_not_shell_events() -> None:
    from interlock.engine.catalog import SPECS, names_in

    names = {n for spec in SPECS for n in names_in("hermes", spec)}
    assert not {n for n in names if ":" in n}


def test_gemini_after_agent_stop_ends_the_run() -> None:
    reply = host("gemini").answer("AfterAgent", {}, Result("before_stop", "stop", reason="done"))
    body = json.loads(reply.stdout)
    assert body["continue"] is False
    assert "done" in body["stopReason"]
    assert "decision" not in body  # a deny would mean "retry with this as the prompt"
    assert reply.code == 0


def test_gemini_after_agent_block_keeps_working() -> None:
    reply = host("gemini").answer("AfterAgent", {}, Result("before_stop", "block",
                                                            reason="run the tests"))
    assert json.loads(reply.stdout) == {"decision": "deny", "reason": "run the tests"}


@pytest.mark.parametrize(("host_event", "event"), [
    ("PreCompact", "before_compaction"), ("SessionStart", "session_start"),
    ("SubagentStart", "subagent_start")])
def test_codex_blocks_compaction_and_starts_with_continue_false(host_event: str,
                                                                event: str) -> None:
    reply = host("codex").answer(host_event, {}, Result(event, "block", reason="not now"))
    body = json.loads(reply.stdout)
    assert body["continue"] is False
    assert "not now" in body["stopReason"]
    assert "decision" not in body  # not in these schemas: Codex would fail open


def test_codex_stop_uses_continue_except_on_tool_and_permission_events() -> None:
    stopped = json.loads(host("codex").answer("UserPromptSubmit", {}, Result(
        "user_input", "stop", reason="halt")).stdout)
    assert stopped["continue"] is False
    tool = json.loads(host("codex").answer("PreToolUse", {}, Result(
        "before_tool_call", "stop", reason="halt")).stdout)
    assert "continue" not in tool


def test_gemini_llm_payloads_reach_interlocks_shape() -> None:
    request = {"model": "gemini-x", "messages": [{"role": "user", "content": "hi"},
                                                 {"role": "model", "content": "hello"}]}
    before = build_event("gemini", {"hook_event_name": "BeforeModel", "session_id": "s",
                                    "llm_request": request})
    assert before.messages[1]["role"] == "assistant"  # type: ignore[attr-defined]
    after = build_event("gemini", {"hook_event_name": "AfterModel", "session_id": "s",
                                   "llm_request": request, "llm_response": {"candidates": [
                                       {"content": {"role": "model", "parts": ["a", "b"]}}]}})
    assert after.text == "ab"  # type: ignore[attr-defined]
