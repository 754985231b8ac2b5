"""One tool-name table: every agent's tools reach Interlock's names (so one rule
covers them), and hosted scripts see their host's tool and argument names."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fixtures.helpers import invocation
from interlock import Engine, Verdict, block
from interlock.executors._process import Completed
from interlock.executors.dialects import DIALECTS
from interlock.executors.toolnames import args_to_host, args_to_ours, to_ours
from interlock.hosts.bridge._events import build_event

# The names each agent's current source uses, and Interlock's name for each.
EXPECTED = {
    "claude": {"Bash": "terminal", "PowerShell": "terminal", "Read": "read_file",
               "Write": "write_file", "Edit": "edit_file", "MultiEdit": "edit_file",
               "NotebookEdit": "edit_file", "Grep": "grep", "Glob": "glob",
               "TodoWrite": "todo", "Agent": "delegate", "Task": "delegate"},
    "codex": {"Bash": "terminal", "apply_patch": "edit_file"},
    "gemini": {"run_shell_command": "terminal", "grep_search": "grep", "glob": "glob",
               "list_directory": "list_dir", "read_many_files": "read_file",
               "google_web_search": "web_search", "write_todos": "todo",
               "invoke_agent": "delegate", "replace": "edit_file"},
    "hermes": {"terminal": "terminal", "execute_code": "terminal", "patch": "edit_file",
               "search_files": "grep", "delegate_task": "delegate"},
    "moltis": {"exec": "terminal"},
}


@pytest.mark.parametrize("system", sorted(EXPECTED))
def test_every_host_tool_reaches_interlocks_name(system: str) -> None:
    for theirs, ours in EXPECTED[system].items():
        assert to_ours(system, theirs) == ours, (system, theirs)
    assert to_ours(system, "mcp__github__create_issue") == "mcp__github__create_issue"


def _pre(system: str, tool: str, tool_input: dict[str, Any], **extra: Any) -> dict[str, Any]:
    if system == "hermes":
        return {"hook_event_name": "pre_tool_call", "tool_name": tool, "tool_input": tool_input,
                "session_id": "s", "extra": {}}
    if system == "moltis":
        return {"event": "BeforeToolCall", "session_key": "s", "tool_name": tool,
                "arguments": tool_input}
    event = "BeforeTool" if system == "gemini" else "PreToolUse"
    return {"hook_event_name": event, "session_id": "s", "tool_name": tool,
            "tool_input": tool_input, **extra}


@pytest.mark.parametrize(("system", "tool"), [
    ("claude", "PowerShell"), ("hermes", "execute_code"), ("claude", "Bash"),
    ("gemini", "run_shell_command"), ("codex", "Bash")])
def test_a_terminal_rule_fires_on_every_agents_shell(system: str, tool: str) -> None:
    engine = Engine()
    engine.on("before_tool_call", lambda e: block("no shells"), matcher="terminal", name="t")
    try:
        event = build_event(system, _pre(system, tool, {"command": "Remove-Item -Recurse C:\\"}))
        assert engine.emit_sync(event).blocked
    finally:
        engine.close()


def test_codex_apply_patch_fires_edit_rules() -> None:
    event = build_event("codex", _pre("codex", "apply_patch", {"command": "*** Begin Patch"}))
    assert event.tool_name == "edit_file"  # type: ignore[attr-defined]


def test_gemini_mcp_tools_get_interlocks_mcp_name() -> None:
    payload = _pre("gemini", "mcp_my_server_create_issue", {"title": "x"},
                   mcp_context={"server_name": "my_server", "tool_name": "create_issue"})
    assert build_event("gemini", payload).tool_name == (  # type: ignore[attr-defined]
        "mcp__my_server__create_issue")


def test_gemini_mcp_names_are_normalised_as_claude_and_codex_name_them() -> None:
    # A server "my.docs" with a tool "notes.delete" is mcp__my_docs__notes_delete for
    # Claude Code, Codex and the MCP proxy: one policy for all (docs/mcp.md).
    payload = _pre("gemini", "mcp_my.docs_notes.delete", {"name": "x"},
                   mcp_context={"server_name": "my.docs", "tool_name": "notes.delete"})
    assert build_event("gemini", payload).tool_name == (  # type: ignore[attr-defined]
        "mcp__my_docs__notes_delete")


def test_claude_and_codex_mcp_names_are_already_interlocks() -> None:
    for system in ("claude", "codex"):
        event = build_event(system, _pre(system, "mcp__github__create_issue", {}))
        assert event.tool_name == "mcp__github__create_issue"  # type: ignore[attr-defined]


# -- hosted scripts: their host's tool and argument names ---------------------------

def encode(dialect: str, **fields: Any) -> dict[str, Any]:
    raw = DIALECTS[dialect].encode(invocation("before_tool_call", **fields), project_dir="/p")
    return json.loads(raw)  # type: ignore[no-any-return]


EDIT = {"path": "/p/a.py", "old": "x = 1", "new": "x = 2"}


def test_claude_scripts_see_file_path_old_string_new_string() -> None:
    body = encode("claude", tool_name="edit_file", args=EDIT)
    assert body["tool_name"] == "Edit"
    assert body["tool_input"] == {"file_path": "/p/a.py", "old_string": "x = 1",
                                  "new_string": "x = 2"}
    body = encode("claude", tool_name="write_file", args={"path": "/p/b", "content": "c"})
    assert body["tool_input"] == {"file_path": "/p/b", "content": "c"}
    body = encode("claude", tool_name="read_file", args={"path": "/p/b"})
    assert body["tool_input"] == {"file_path": "/p/b"}


def test_gemini_scripts_see_gemini_names() -> None:
    body = encode("gemini", tool_name="edit_file", args=EDIT)
    assert body["tool_name"] == "replace"
    assert body["tool_input"]["file_path"] == "/p/a.py"
    body = encode("gemini", tool_name="mcp__gh__create_issue", args={"title": "t"})
    assert body["tool_name"] == "mcp_gh_create_issue"
    assert body["mcp_context"] == {"server_name": "gh", "tool_name": "create_issue"}


def test_a_call_that_came_through_a_bridge_keeps_its_own_argument_names() -> None:
    # A Claude call arrives as edit_file with Claude's own argument names.
    claude_args = {"file_path": "/p/a", "old_string": "a", "new_string": "b"}
    assert args_to_host("claude", "edit_file", claude_args) == claude_args
    answer = {"file_path": "/p/a", "old_string": "a", "new_string": "c"}
    assert args_to_ours("claude", "edit_file", claude_args, answer) == answer


def test_a_claude_scripts_rewrite_comes_back_in_interlocks_names() -> None:
    inv = invocation("before_tool_call", modifies=True, tool_name="edit_file", args=EDIT)
    out = json.dumps({"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "allow",
        "updatedInput": {"file_path": "/p/a.py", "old_string": "x = 1",
                         "new_string": "x = 3"}}})
    decision = DIALECTS["claude"].decode(inv, Completed(0, out.encode(), b""))
    assert decision is not None
    assert decision.verdict is Verdict.APPROVE
    assert decision.changes["args"] == {"path": "/p/a.py", "old": "x = 1", "new": "x = 3"}


def test_a_gemini_scripts_merge_comes_back_in_interlocks_names() -> None:
    inv = invocation("before_tool_call", modifies=True, tool_name="write_file",
                     args={"path": "/p/b", "content": "secret"})
    out = json.dumps({"hookSpecificOutput": {"tool_input": {"content": "[redacted]"}}})
    decision = DIALECTS["gemini"].decode(inv, Completed(0, out.encode(), b""))
    assert decision is not None
    assert decision.changes["args"] == {"path": "/p/b", "content": "[redacted]"}
