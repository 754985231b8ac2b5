"""Payloads and messages as the hosts have them: an approved rewrite stays an
approval, the person's explanation reaches the reason, and Interlock's own log
lines never become one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fixtures.helpers import invocation
from interlock import Engine, Hook, Verdict
from interlock.events import BeforeToolCall
from interlock.executors import CommandExecutor
from interlock.executors._process import Completed
from interlock.executors.dialects import DIALECTS
from interlock.hosts.bridge import host
from interlock.hosts.bridge._common import Result

APPROVE_REWRITE = json.dumps({"hookSpecificOutput": {
    "hookEventName": "PreToolUse", "permissionDecision": "allow",
    "permissionDecisionReason": "vetted", "updatedInput": {"command": "ls --color=never"}}})


def test_an_allow_with_updated_input_approves_and_rewrites_end_to_end() -> None:
    engine = Engine()
    engine.register(Hook(name="vet", events=("before_tool_call",), kind="command",
                         modifies=True, executor=CommandExecutor(
                             ["sh", "-c", f"printf '%s' '{APPROVE_REWRITE}'"], hook_name="vet",
                             dialect="claude", timeout=10, cwd=Path.cwd())))
    event = BeforeToolCall(tool_name="terminal", args={"command": "ls"})
    try:
        outcome = engine.emit_sync(event)
        assert outcome.verdict is Verdict.APPROVE
        assert outcome.final(event).args == {"command": "ls --color=never"}
        result = Result.from_dict(outcome.to_dict(event))
    finally:
        engine.close()
    out = json.loads(host("claude").answer("PreToolUse", {}, result).stdout)
    assert out["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert out["hookSpecificOutput"]["updatedInput"] == {"command": "ls --color=never"}


def decode(dialect: str, out: object, event: str = "before_tool_call"):  # type: ignore[no-untyped-def]
    inv = invocation(event)
    return DIALECTS[dialect].decode(inv, Completed(0, json.dumps(out).encode(), b""))


def test_a_hookify_style_deny_is_explained_by_its_system_message() -> None:
    # hookify denies with no permissionDecisionReason; the rule's text is the systemMessage.
    decision = decode("claude", {
        "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny"},
        "systemMessage": "**[no-rm]**\nuse trash instead"})
    assert decision.verdict is Verdict.BLOCK
    assert decision.reason == "**[no-rm]**\nuse trash instead"
    stop = decode("claude", {"continue": False, "systemMessage": "quota reached"})
    assert stop.reason == "quota reached"
    gemini = decode("gemini", {"decision": "deny", "systemMessage": "not here"})
    assert gemini.reason == "not here"


def test_a_reason_beats_the_system_message() -> None:
    decision = decode("claude", {
        "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                               "permissionDecisionReason": "for the model"},
        "systemMessage": "for the person"})
    assert decision.reason == "for the model"


def test_interlocks_log_lines_never_become_the_block_reason(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / ".interlock").mkdir(parents=True)
    (root / ".interlock" / "config.toml").write_text(
        '[[hooks]]\nname = "guard"\nevents = ["before_tool_call"]\n'
        "command = \"sh -c 'echo no rm >&2; exit 2'\"\ndialect = \"claude\"\n")
    state = tmp_path / "state"
    env = {**os.environ, "INTERLOCK_ACCEPT_HOOKS": "1", "INTERLOCK_STATE_DIR": str(state),
           "INTERLOCK_HOME": str(tmp_path / "home"),
           "INTERLOCK_SOCKET": str(tmp_path / "none.sock")}
    env.pop("INTERLOCK_PROJECT", None)
    payload = {"hook_event_name": "PreToolUse", "tool_name": "Bash",
               "tool_input": {"command": "rm -rf /"}, "session_id": "s"}
    proc = subprocess.run([sys.executable, "-m", "interlock.bridge", "claude", "--project",
                           str(root)], input=json.dumps(payload), capture_output=True,
                          text=True, env=env, timeout=60)
    assert proc.returncode == 2  # Claude takes all of stderr as the reason here
    assert proc.stderr == "Interlock [project:guard]: no rm\n"
    # The warning still exists; it went to the log, not to the model.
    assert "approving 1 hook(s)" in (state / "bridge.log").read_text()


RULE = {"type": "addRules", "behavior": "allow", "destination": "session",
        "rules": [{"toolName": "Bash", "ruleContent": "npm test"}]}


def test_permission_suggestions_in_claudes_shape_both_ways() -> None:
    inv = invocation("permission_request", modifies=True, tool_name="terminal",
                     args={"command": "npm test"},
                     permission_updates=[{"tool": "terminal", "pattern": "npm test",
                                          "action": "allow"}])
    body = json.loads(DIALECTS["claude"].encode(inv, project_dir="/p"))
    assert body["permission_suggestions"] == [RULE]
    out = json.dumps({"hookSpecificOutput": {
        "hookEventName": "PermissionRequest",
        "decision": {"behavior": "allow", "updatedPermissions": [RULE]}}})
    decision = DIALECTS["claude"].decode(inv, Completed(0, out.encode(), b""))
    assert decision.verdict is Verdict.APPROVE
    assert decision.changes == {"permission_updates": [
        {"tool": "terminal", "pattern": "npm test", "action": "allow"}]}


def test_the_claude_bridge_carries_permission_rules_both_ways() -> None:
    from interlock.hosts.bridge._events import build_event

    event = build_event("claude", {"hook_event_name": "PermissionRequest", "session_id": "s",
                                   "tool_name": "Bash", "tool_input": {"command": "npm test"},
                                   "permission_suggestions": [RULE]})
    updates = [{"tool": "terminal", "pattern": "npm test", "action": "allow"}]
    assert event.permission_updates == updates  # type: ignore[attr-defined]
    reply = host("claude").answer("PermissionRequest", {}, Result(
        "permission_request", "approve", changes={"permission_updates": updates}))
    decision = json.loads(reply.stdout)["hookSpecificOutput"]["decision"]
    assert decision == {"behavior": "allow", "updatedPermissions": [RULE]}
    # Codex takes no rule changes: denied, not dropped.
    codex = host("codex").answer("PermissionRequest", {}, Result(
        "permission_request", "approve", changes={"permission_updates": updates}))
    assert json.loads(codex.stdout)["hookSpecificOutput"]["decision"]["behavior"] == "deny"


def test_claude_subagent_and_common_fields() -> None:
    inv = invocation("subagent_start", task="Explore", child_session_id="a1", turn_id="p1",
                     depth=1, session_id="child")
    body = json.loads(DIALECTS["claude"].encode(inv, project_dir="/p"))
    assert (body["agent_type"], body["agent_id"], body["prompt_id"]) == ("Explore", "a1", "p1")
    top = json.loads(DIALECTS["claude"].encode(invocation("user_input", text="hi"),
                                               project_dir="/p"))
    assert "agent_id" not in top  # only inside a subagent


def test_claude_answers_interlock_cannot_apply_are_failures_not_dropped() -> None:
    import pytest

    from interlock.engine.errors import ContractError

    def answer(event: str, out: object, **fields: object):  # type: ignore[no-untyped-def]
        inv = invocation(event, **fields)
        return DIALECTS["claude"].decode(inv, Completed(0, json.dumps(out).encode(), b""))

    denied = {"tool_name": "terminal", "args": {"command": "rm -rf /"}}
    with pytest.raises(ContractError, match="retry"):
        answer("permission_denied", {"hookSpecificOutput": {
            "hookEventName": "PermissionDenied", "retry": True}}, **denied)
    with pytest.raises(ContractError, match="watchPaths"):
        answer("cwd_changed", {"hookSpecificOutput": {
            "hookEventName": "CwdChanged", "watchPaths": ["/p/a"]}})
    with pytest.raises(ContractError, match="watchPaths"):
        answer("file_changed", {"hookSpecificOutput": {
            "hookEventName": "FileChanged", "watchPaths": ["/p/a"]}}, path="/p/a")
    # retry: false asks for nothing: no opinion.
    assert answer("permission_denied", {"hookSpecificOutput": {
        "hookEventName": "PermissionDenied", "retry": False}}, **denied) is None


def test_gemini_after_agent_prompt_both_ways() -> None:
    from interlock.hosts.bridge._events import build_event

    inv = invocation("before_stop", prompt="fix the tests", last_message="done")
    body = json.loads(DIALECTS["gemini"].encode(inv, project_dir="/p"))
    assert (body["prompt"], body["prompt_response"]) == ("fix the tests", "done")
    event = build_event("gemini", {
        "hook_event_name": "AfterAgent", "session_id": "s", "cwd": "/p",
        "prompt": "fix the tests", "prompt_response": "done", "stop_hook_active": False})
    assert (event.name, event.prompt, event.last_message) == (
        "before_stop", "fix the tests", "done")


def test_hermes_extra_reaches_hosted_scripts_and_is_read_from_the_bridge() -> None:
    from interlock.hosts.bridge import hermes

    inv = invocation("user_input", text="hi", model="gpt-x", first_turn=True, platform="cli")
    extra = json.loads(DIALECTS["hermes"].encode(inv, project_dir="/p"))["extra"]
    assert (extra["user_message"], extra["model"], extra["is_first_turn"], extra["platform"]) \
        == ("hi", "gpt-x", True, "cli")
    name, fields = hermes.to_event({"hook_event_name": "pre_llm_call", "session_id": "s",
                                    "extra": {"user_message": "hi", "model": "gpt-x",
                                              "is_first_turn": False, "platform": "telegram"}})
    assert (name, fields["model"], fields["first_turn"], fields["platform"]) == (
        "user_input", "gpt-x", False, "telegram")
