"""Claude Code: PascalCase events, ``hookSpecificOutput`` answers, exit 2 blocks.

Also the base of :mod:`interlock.hosts.bridge.codex`, which speaks the same wire
with stricter answers. Sources: docs/dialects.md and docs/one-policy.md (the hooks
reference, code.claude.com/docs/en/hooks).
"""

from __future__ import annotations

from interlock.executors.toolnames import to_suggestions, to_updates
from interlock.hosts.bridge._common import (
    Reply,
    Result,
    as_args,
    as_text,
    common_fields,
    dumps,
    tool_name,
    unapplied,
)

# typing is not imported at run time: it costs the bridge ~3 ms at start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SYSTEM = "claude"
HOST_TIMEOUT = 600.0
"""Claude's default command-hook timeout, in seconds."""
DEFAULT_DEADLINE = 20.0
PROJECT_ENV = "CLAUDE_PROJECT_DIR"

# Host events where a failing bridge must have no effect: observe events, and
# those where "block" means "keep working" (docs/engine.md, Failures: what "fail closed"
# means). A test holds this equal to what the catalog says.
# Claude's events with no Interlock event: those it reads no verdict from (or
# where a block means "keep working") get no effect; the rest fail closed.
UNMAPPED_OBSERVE = frozenset({
    'Elicitation', 'ElicitationResult', 'InstructionsLoaded', 'MessageDisplay',
    'PostToolBatch', 'Setup', 'TeammateIdle', 'WorktreeRemove'})
UNMAPPED_GATE = frozenset({'WorktreeCreate'})
NO_EFFECT = frozenset({
    'CwdChanged', 'FileChanged', 'Notification', 'PermissionDenied', 'PostCompact',
    'PostToolUseFailure', 'SessionEnd', 'Stop', 'StopFailure', 'SubagentStop'}) | UNMAPPED_OBSERVE

# Events where Claude honours no block (it shows exit 2's stderr to the user
# only); a rewrite it cannot apply there is refused at `bridge install`.
DENY_IGNORED = frozenset({"SessionStart", "SubagentStart"})

# Events where Claude reads a top-level {"decision": "block", "reason"}.
TOP_LEVEL_BLOCK = frozenset({
    "UserPromptSubmit", "UserPromptExpansion", "PostToolUse", "PostToolUseFailure",
    "PostToolBatch", "Stop", "SubagentStop", "ConfigChange", "PreCompact", "TaskCreated",
    "TaskCompleted"})


def host_event(payload: dict[str, Any]) -> str:
    return str(payload.get("hook_event_name") or "")


def fields_for(system: str, event: str, p: dict[str, Any]) -> dict[str, Any]:
    """Catalog fields of ``event`` from a Claude-style payload (Claude, Codex, Gemini)."""
    out = common_fields(p, system)
    if "prompt_id" in p and "turn_id" not in p:
        out["turn_id"] = p.get("prompt_id")
    if "tool_name" in p:
        out["tool_name"] = tool_name(system, p["tool_name"])
        if system == "gemini" and "mcp_context" in p:  # mcp_<server>_<tool> is ambiguous
            from interlock.executors.toolnames import gemini_mcp_name

            out["tool_name"] = gemini_mcp_name(out["tool_name"], p["mcp_context"])
        out["args"] = as_args(p.get("tool_input"))
        out["tool_call_id"] = p.get("tool_use_id") or p.get("tool_call_id") or ""
    if event == "after_tool_call":
        out["result"] = p.get("tool_response")
    elif event == "tool_error":
        out["error"] = str(p.get("error") or "")
    elif event == "permission_denied":
        out["reason"] = p.get("reason")
    elif event == "permission_request":
        out["permission_updates"] = to_updates(system, p.get("permission_suggestions"))
    elif event == "user_input":
        out["text"] = str(p.get("prompt") or "")
    elif event in ("before_stop", "subagent_stop"):
        out["stop_hook_active"] = bool(p.get("stop_hook_active"))
        last = p.get("last_assistant_message") or p.get("prompt_response")
        out["last_message" if event == "before_stop" else "result"] = last
        if event == "before_stop" and isinstance(p.get("prompt"), str):  # Gemini's AfterAgent
            out["prompt"] = p["prompt"]
    elif event == "session_start":
        out["source"] = str(p.get("source") or "startup")
    elif event == "session_end":
        out["reason"] = str(p.get("reason") or "exit")
    elif event == "before_compaction":
        out["trigger"] = str(p.get("trigger") or "auto")
        out["instructions"] = p.get("custom_instructions")
    elif event == "notification":
        out["message"] = str(p.get("message") or "")
        kind = str(p.get("notification_type") or "info")
        out["kind"] = "permission_prompt" if kind == "ToolPermission" else kind  # Gemini's
    elif event == "subagent_start":
        out["task"] = str(p.get("prompt") or p.get("agent_type") or "")
        out["child_session_id"] = str(p.get("agent_id") or "")
    elif event in ("task_created", "task_completed"):
        out["task_id"] = str(p.get("task_id") or "")
        out["title"] = str(p.get("task_subject") or p.get("title") or "")
    elif event == "config_change":
        out["source"] = str(p.get("source") or "project")
        out["path"] = str(p.get("file_path") or "")
    elif event == "file_changed":
        out["path"] = str(p.get("file_path") or p.get("path") or "")
    elif event == "cwd_changed":
        out["old_cwd"] = str(p.get("old_cwd") or "")
        out["new_cwd"] = str(p.get("new_cwd") or p.get("cwd") or "")
    elif event == "model_select":
        out["model"] = str(p.get("model") or p.get("new_model") or "")
    elif event == "llm_error":
        out["error"] = str(p.get("error") or p.get("error_type") or "")
    elif event == "command":
        out["command"] = str(p.get("command_name") or p.get("command") or "")
        out["arguments"] = str(p.get("command_args") or p.get("arguments") or "")
    return out


def to_event(payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    from interlock.hosts.bridge._events import catalog_name

    name = catalog_name(SYSTEM, host_event(payload))
    return name, fields_for(SYSTEM, name, payload)


def _specific(host: str, **fields: Any) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": host, **fields}}


def deny(host: str, text: str) -> Reply:
    """An explicit deny: JSON for newer versions, exit 2 and stderr for every version."""
    if host == "PreToolUse":
        body = _specific(host, permissionDecision="deny", permissionDecisionReason=text)
    elif host == "PermissionRequest":
        # Exit 2 is not honoured here; only the JSON decision denies.
        body = _specific(host, decision={"behavior": "deny", "message": text})
        return Reply(dumps(body), text + "\n", 0)
    else:
        body = {"decision": "block", "reason": text}
    return Reply(dumps(body), text + "\n", 2)


def _denies(r: Result, strict: bool) -> bool:
    """Whether ``r`` is answered with a deny.

    ``ask`` reaches a person only through PreToolUse's "ask" (not in Codex) or
    by leaving a PermissionRequest undecided; anywhere else nobody can answer,
    so it is a block (docs/agent.md, What each decision does here).
    """
    if r.decision in ("block", "stop", "skip", "respond"):
        return True
    if r.decision == "ask":
        return r.event != "permission_request" and (strict or r.event != "before_tool_call")
    return False


def answer(host: str, payload: dict[str, Any], r: Result, *, strict: bool = False) -> Reply:
    """Claude's answer to ``r``; ``strict`` is Codex (no ask, no bare allow)."""
    event = r.event
    ctx = r.context_text()
    if _denies(r, strict):
        if event in ("before_stop", "subagent_stop") and r.decision == "block":
            # Block means "keep working"; the reason is the next instruction.
            return Reply(dumps({"decision": "block", "reason": r.reason or r.block_text()}))
        reply = _deny(host, r.block_text(), strict)
        if r.decision == "stop" and not (strict and host in _CODEX_NO_CONTINUE):
            import json

            # Exit 0: the host reads JSON (and so `continue`) only then.
            body = {**json.loads(reply.stdout), "continue": False, "stopReason": r.block_text()}
            return Reply(dumps(body), reply.stderr, 0)
        return reply
    if event == "before_tool_call":
        return _tool_answer(host, r, ctx, strict)
    if event == "permission_request":
        # Claude applies updatedPermissions with an allow; Codex takes neither.
        problem = unapplied(r, () if strict else ("permission_updates",))
        if problem:
            return deny(host, problem)
        if r.decision == "approve":
            decision: dict[str, Any] = {"behavior": "allow"}
            if "permission_updates" in r.changes:
                decision["updatedPermissions"] = to_suggestions(
                    SYSTEM, r.changes["permission_updates"])
            return Reply(dumps(_specific(host, decision=decision)))
        if r.changes:
            # A rule change with nobody approving the call: Claude applies
            # updatedPermissions only together with an allow.
            return deny(host, "Interlock: policy changed the permission rules without "
                              "approving the call; denied rather than dropped")
        return Reply()
    return _other_answer(host, r, ctx, strict)


# Codex rejects `continue` / `stopReason` only here; elsewhere they stop the run.
_CODEX_NO_CONTINUE = frozenset({"PreToolUse", "PermissionRequest"})
# Codex events whose only way to refuse is `continue: false`.
_CODEX_STOP_BLOCKS = frozenset({"PreCompact", "SessionStart", "SubagentStart"})

_REWRITE_ASK = "Interlock: policy changed this call's arguments; confirm the changed call"
_REWRITE_DENY = ("Interlock: policy changed this call's arguments and nothing approved the "
                 "changed call; Codex applies changed arguments only with an approval, so it "
                 "is denied rather than approved unseen or run unchanged")


def _tool_answer(host: str, r: Result, ctx: str, strict: bool) -> Reply:
    problem = unapplied(r, ("args",))
    if problem:
        return deny(host, problem)
    rewritten = "args" in r.changes
    out: dict[str, Any] = {}
    if r.decision == "ask":  # Codex never gets here: ask is a deny there
        out.update(permissionDecision="ask", permissionDecisionReason=r.block_text())
    elif r.decision == "approve" and (rewritten or not strict):
        out["permissionDecision"] = "allow"  # Codex takes allow only with updatedInput
    elif rewritten:
        # A rewrite is not an approval (as in Interlock's own agent): "allow"
        # would skip the host's permission prompt, and Interlock's
        # permission_request hooks with it. Claude applies updatedInput with
        # allow or ask; Codex only with allow (it rejects ask), so there it is
        # a deny.
        if strict:
            return deny(host, _REWRITE_DENY)
        out.update(permissionDecision="ask", permissionDecisionReason=_REWRITE_ASK)
    if rewritten:
        out["updatedInput"] = r.changes["args"]
    if r.reason and out.get("permissionDecision") == "allow" and not strict:
        out["permissionDecisionReason"] = r.reason
    if ctx:
        out["additionalContext"] = ctx
    return Reply(dumps(_specific(host, **out)) if out else "")


def _deny(host: str, text: str, strict: bool) -> Reply:
    if strict and host in _CODEX_STOP_BLOCKS:
        # Codex's schemas for these have no `decision`, and it fails open on
        # one; `continue: false` is what stops them.
        return Reply(dumps({"continue": False, "stopReason": text}), text + "\n", 0)
    return deny(host, text)


def _other_answer(host: str, r: Result, ctx: str, strict: bool) -> Reply:
    event = r.event
    out: dict[str, Any] = {}
    if strict and event == "after_tool_call" and "result" in r.changes:
        # Codex has no updatedToolOutput (its PostToolUse schema rejects it and
        # then lets the original output through); a block's reason is what the
        # model sees in place of the output, so the rewritten result goes there.
        body: dict[str, Any] = {"decision": "block", "reason": as_text(r.changes["result"])}
        if ctx:
            body.update(_specific(host, additionalContext=ctx))
        problem = unapplied(r, ("result",))
        return deny(host, problem) if problem else Reply(dumps(body))
    mapping = {"after_tool_call": {"result": "updatedToolOutput"},
               "session_start": {"initial_message": "initialUserMessage",
                                 "watch_paths": "watchPaths"}}.get(event, {})
    if strict:
        mapping = {}  # Codex's schemas take neither (and it fails open on them)
    problem = unapplied(r, tuple(mapping))
    if problem:
        return _deny(host, problem, strict)
    for ours, theirs in mapping.items():
        if ours in r.changes:
            out[theirs] = r.changes[ours]
    if ctx:
        out["additionalContext"] = ctx
    return Reply(dumps(_specific(host, **out)) if out else "")

