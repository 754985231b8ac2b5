"""Hermes Agent shell hooks: ``{"decision": "block", "reason"}`` on pre_tool_call.

Hermes runs the command without a shell and reads stdout JSON; the exit code
only logs. Its shell hooks can block ``pre_tool_call``, keep ``pre_verify``
going, and add ``context``; they cannot rewrite arguments, so a policy
rewrite is denied rather than dropped, and an ``ask`` is a block (a shell
hook has no person to ask). Checked against hermes-agent 0.19's
``agent/shell_hooks.py``.
"""

from __future__ import annotations

from interlock.hosts.bridge._common import Reply, Result, as_args, dumps, tool_name, unapplied

# typing is not imported at run time: it costs the bridge ~3 ms at start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SYSTEM = "hermes"
HOST_TIMEOUT = 60.0
DEFAULT_DEADLINE = 20.0
PROJECT_ENV = ""

# Host events where a failing bridge must have no effect: observe events, and
# those where "block" means "keep working" (docs/engine.md, Failures: what "fail closed"
# means). A test holds this equal to what the catalog says.
# Hermes's shell-hook events (hermes_cli/plugins.py VALID_HOOKS) with no
# Interlock event: a shell hook can only add context there.
UNMAPPED_OBSERVE = frozenset({
    'agent_loop_stopped', 'gateway_platform_event', 'kanban_task_blocked',
    'kanban_task_claimed', 'kanban_task_completed', 'on_interim_message',
    'on_kanban_dispatch_tick', 'on_kanban_task_updated', 'on_kanban_worker_exited',
    'on_kanban_worker_spawned', 'on_kanban_worker_stale_claim', 'on_room_member_activity',
    'on_skill_lifecycle', 'on_stream_delta', 'on_stream_end', 'on_stream_start',
    'post_api_request', 'pre_api_request', 'pre_transcription', 'transform_terminal_output'})
UNMAPPED_GATE: frozenset[str] = frozenset()
NO_EFFECT = frozenset({
    'api_request_error', 'on_session_end', 'on_session_finalize', 'on_session_reset',
    'post_approval_response', 'post_llm_call', 'pre_verify', 'subagent_stop'}) | UNMAPPED_OBSERVE

# Host events where Hermes reads nothing but `context` from a shell hook: a
# block or a rewrite the bridge answers there has no effect (a rewrite there
# is refused at `bridge install`).
DENY_IGNORED = frozenset({
    "post_tool_call", "transform_terminal_output", "transform_tool_result",
    "transform_llm_output", "pre_llm_call", "post_llm_call", "pre_api_request",
    "post_api_request", "api_request_error", "on_session_start", "on_session_end",
    "on_session_finalize", "on_session_reset", "subagent_start", "subagent_stop",
    "pre_gateway_dispatch", "pre_approval_request", "post_approval_response"})


def host_event(payload: dict[str, Any]) -> str:
    return str(payload.get("hook_event_name") or "")


def to_event(payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    from interlock.hosts.bridge._events import catalog_name

    name = catalog_name(SYSTEM, host_event(payload))
    p = payload
    extra = p.get("extra") if isinstance(p.get("extra"), dict) else {}
    assert isinstance(extra, dict)
    session = p.get("session_id") or extra.get("session_key") or ""
    out: dict[str, Any] = {"platform": str(extra.get("platform") or SYSTEM),
                           "session_id": str(session), "cwd": str(p.get("cwd") or ""),
                           "turn_id": extra.get("turn_id")}
    if isinstance(extra.get("parent_session_id"), str):
        out["parent_session_id"] = extra["parent_session_id"]
    if p.get("tool_name") is not None:
        out.update(tool_name=tool_name(SYSTEM, p["tool_name"]), args=as_args(p.get("tool_input")),
                   tool_call_id=str(extra.get("tool_call_id") or ""))
    if name in ("after_tool_call", "tool_result_persist"):
        out["result"] = extra.get("result")
        if name == "after_tool_call":
            out["status"] = str(extra.get("status") or "ok")
            out["duration_ms"] = float(extra.get("duration_ms") or 0.0)
    elif name == "user_input":
        out["text"] = str(extra.get("user_message") or "")
        if isinstance(extra.get("model"), str):
            out["model"] = extra["model"]
        if isinstance(extra.get("is_first_turn"), bool):
            out["first_turn"] = extra["is_first_turn"]
    elif name == "subagent_start":
        out["task"] = str(extra.get("child_goal") or extra.get("child_role") or "")
        out["child_session_id"] = str(extra.get("child_session_id") or "")
    elif name == "subagent_stop":
        out["child_session_id"] = str(extra.get("child_session_id") or "")
        out["result"] = extra.get("child_summary")
    elif name in ("permission_request", "permission_denied"):
        # Hermes's approval hooks are about a terminal command (tools/approval.py).
        out.update(tool_name="terminal", args={"command": str(extra.get("command") or "")},
                   reason=extra.get("description"))
    elif name == "llm_error":
        error = extra.get("error")
        if isinstance(error, dict):
            error = error.get("message") or error.get("type")
        out["error"] = str(error or extra.get("error_message") or "API request failed")
        out["model"] = str(extra.get("model") or "")
        out["status_code"] = extra.get("status_code")
    elif name == "message_received":
        # Hermes passes the gateway's MessageEvent, which reaches a shell hook as text.
        out["text"] = str(extra.get("text") or extra.get("event") or "")
    elif name == "command":
        out["command"] = str(extra.get("command") or "")
        out["arguments"] = str(extra.get("args_raw") or "")
    elif name == "after_llm_call":
        out["text"] = str(extra.get("response_text") or extra.get("text") or "")
        out["model"] = str(extra.get("model") or "")
    elif name in ("session_end", "session_reset", "session_finalize") and extra.get("reason"):
        out["reason"] = str(extra["reason"])
    return name, out


def deny(host: str, text: str) -> Reply:
    return Reply(dumps({"decision": "block", "reason": text}), text + "\n", 0)


def answer(host: str, payload: dict[str, Any], r: Result) -> Reply:
    if r.event == "before_stop":
        if r.decision == "block":
            return Reply(dumps({"decision": "block", "reason": r.reason or r.block_text()}))
        return Reply("")
    if r.ends or r.decision in ("ask", "respond"):
        if host != "pre_tool_call":
            # Only pre_tool_call can block through a shell hook: say so where
            # the model will read it, and in Hermes's log.
            text = f"{r.block_text()} (Hermes cannot block {host} from a shell hook)"
            return Reply(dumps({"context": text}), text + "\n", 0)
        return deny(host, r.block_text())
    problem = unapplied(r, ())
    if problem:
        if host != "pre_tool_call":
            # Hermes reads only `context` here, so nothing can stop the original
            # (a post_tool_call result, say) going on: `bridge install hermes`
            # refuses such a policy; this is the loud last resort.
            text = f"{problem} (Hermes cannot apply it on {host}; the original went on)"
            return Reply(dumps({"context": text}), text + "\n", 0)
        return deny(host, problem)
    ctx = r.context_text()
    return Reply(dumps({"context": ctx}) if ctx else "")
