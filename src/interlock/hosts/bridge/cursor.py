"""Cursor: camelCase events, ``{"permission": "allow"|"deny"|"ask", ...}`` answers.

Cursor's exit codes are not documented, so every answer is JSON on exit 0.
Both message casings are written (v1.7 used ``userMessage``, 2.0
``user_message``). Sources: docs/dialects.md and docs/one-policy.md.
"""

from __future__ import annotations

from interlock.hosts.bridge._common import Reply, Result, as_args, dumps, tool_name, unapplied

# typing is not imported at run time: it costs the bridge ~3 ms at start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SYSTEM = "cursor"
HOST_TIMEOUT = 30.0
DEFAULT_DEADLINE = 20.0
PROJECT_ENV = "CURSOR_PROJECT_DIR"

# Host events where a failing bridge must have no effect: observe events, and
# those where "block" means "keep working" (docs/engine.md, Failures: what "fail closed"
# means). A test holds this equal to what the catalog says.
UNMAPPED_OBSERVE: frozenset[str] = frozenset()
UNMAPPED_GATE: frozenset[str] = frozenset()
NO_EFFECT = frozenset({
    'afterAgentResponse', 'sessionEnd', 'stop', 'subagentStop'})

_PERMISSION_EVENTS = frozenset({
    "preToolUse", "beforeShellExecution", "beforeMCPExecution", "beforeReadFile"})


def host_event(payload: dict[str, Any]) -> str:
    return str(payload.get("hook_event_name") or "")


def _cwd(p: dict[str, Any]) -> str:
    cwd = p.get("cwd")
    if isinstance(cwd, str) and cwd:
        return cwd
    roots = p.get("workspace_roots")
    return str(roots[0]) if isinstance(roots, list) and roots else ""


def to_event(payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    from interlock.hosts.bridge._events import catalog_name

    host = host_event(payload)
    name = catalog_name(SYSTEM, host)
    p = payload
    out: dict[str, Any] = {"platform": SYSTEM, "cwd": _cwd(p),
                           "session_id": str(p.get("conversation_id") or p.get("session_id") or ""),
                           "turn_id": p.get("generation_id")}
    if host in ("beforeShellExecution", "afterShellExecution"):
        out.update(tool_name="terminal", args={"command": str(p.get("command") or "")})
        out["result"] = p.get("output")
    elif host in ("beforeReadFile",):
        out.update(tool_name="read_file", args={"file_path": str(p.get("file_path") or "")})
    elif host == "afterFileEdit":
        out.update(tool_name="edit_file",
                   args={"file_path": str(p.get("file_path") or ""), "edits": p.get("edits")})
    elif "tool_name" in p:
        out.update(tool_name=tool_name(SYSTEM, p["tool_name"]), args=as_args(p.get("tool_input")))
        out["result"] = p.get("result_json") or p.get("tool_output")
    if name == "user_input":
        out["text"] = str(p.get("prompt") or "")
    elif name == "before_stop":
        out["block_count"] = int(p.get("loop_count") or 0)
        out["stop_hook_active"] = bool(p.get("loop_count"))
    elif name == "agent_end":
        out["final_text"] = p.get("text")
    if name != "after_tool_call":
        out.pop("result", None)
    return name, out


def _permission(value: str, text: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"permission": value}
    if text:
        out.update(user_message=text, agent_message=text, userMessage=text, agentMessage=text)
    return out


def deny(host: str, text: str) -> Reply:
    if host == "beforeSubmitPrompt":
        body: dict[str, Any] = {"continue": False, "user_message": text}
    elif host == "beforeReadFile":
        body = {"permission": "deny"}  # read hooks take no message fields
    else:
        body = _permission("deny", text)
    return Reply(dumps(body), text + "\n", 0)


def answer(host: str, payload: dict[str, Any], r: Result) -> Reply:
    if host == "stop":
        if r.decision == "block":
            return Reply(dumps({"followup_message": r.reason or r.block_text()}))
        return Reply("{}")
    if r.ends or r.decision == "respond" or (r.decision == "ask" and host == "beforeReadFile"):
        return deny(host, r.block_text())
    problem = unapplied(r, ())
    if problem:
        return deny(host, problem)
    if host in _PERMISSION_EVENTS:
        if r.decision == "ask":
            return Reply(dumps(_permission("ask", r.block_text())))
        if r.decision == "approve":
            return Reply(dumps(_permission("allow", r.reason)))
        return Reply("{}")
    if host == "beforeSubmitPrompt":
        return Reply(dumps({"continue": True}))
    return Reply("{}")
