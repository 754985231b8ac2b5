"""Moltis: events tagged by ``event``, exit 1 blocks (stderr is the reason).

Exit 2 is only an error in Moltis, the opposite of Claude Code, and
``{"action": "modify", "data": ...}`` replaces the mutable part. Sources:
docs/dialects.md and docs/one-policy.md (crates/plugins/src/shell_hook.rs).
"""

from __future__ import annotations

from interlock.hosts.bridge._common import Reply, Result, as_args, dumps, tool_name, unapplied

# typing is not imported at run time: it costs the bridge ~3 ms at start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SYSTEM = "moltis"
HOST_TIMEOUT = 10.0
DEFAULT_DEADLINE = 8.0
PROJECT_ENV = ""

# Host events where a failing bridge must have no effect: observe events, and
# those where "block" means "keep working" (docs/engine.md, Failures: what "fail closed"
# means). A test holds this equal to what the catalog says.
UNMAPPED_OBSERVE: frozenset[str] = frozenset()
UNMAPPED_GATE: frozenset[str] = frozenset()
NO_EFFECT = frozenset({
    'AfterCompaction', 'AgentEnd', 'GatewayStart', 'GatewayStop', 'MessageSent',
    'SessionEnd'})

# Events Moltis runs read-only: it ignores exit 1 and `modify` there, so a
# rewrite the bridge answers is lost (refused at `bridge install`). A tool
# result is rewritten on ToolResultPersist, never on AfterToolCall.
DENY_IGNORED = frozenset({
    "AfterToolCall", "SessionStart", "SessionEnd", "AgentEnd", "AfterCompaction",
    "MessageSent", "Command", "GatewayStart", "GatewayStop"})


def host_event(payload: dict[str, Any]) -> str:
    return str(payload.get("event") or "")


def to_event(payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    from interlock.hosts.bridge._events import catalog_name

    name = catalog_name(SYSTEM, host_event(payload))
    p = payload
    channel = p.get("channel")
    out: dict[str, Any] = {"session_id": str(p.get("session_key") or ""),
                           "platform": SYSTEM}
    if isinstance(channel, dict):
        out["platform"] = str(channel.get("surface") or SYSTEM)
    if "tool_name" in p:
        out.update(tool_name=tool_name(SYSTEM, p["tool_name"]), args=as_args(p.get("arguments")),
                   tool_call_id=str(p.get("tool_call_id") or ""))
    if name in ("after_tool_call", "tool_result_persist"):
        out["result"] = p.get("result")
        if name == "after_tool_call":
            out["status"] = "ok" if p.get("success", True) else "error"
    elif name in ("message_received", "before_message_send", "message_sent"):
        key = "text" if name == "message_received" else "content"
        out[key] = str(p.get("content") or "")
        out["channel"] = channel if isinstance(channel, str) else ""
        binding = p.get("channel_binding")
        if isinstance(binding, dict):  # MessageReceived's provenance
            out["platform"] = str(binding.get("surface") or SYSTEM)
            out["sender_id"] = str(binding.get("sender_id") or "")
            out["channel"] = out["channel"] or str(binding.get("chat_id") or "")
    elif name in ("before_llm_call", "after_llm_call", "before_agent_start"):
        out["model"] = str(p.get("model") or "")
        if name == "before_llm_call":
            out["messages"] = p.get("messages") or []
        if name == "after_llm_call":
            out["text"] = str(p.get("text") or "")
            out["tool_calls"] = p.get("tool_calls") or []
    elif name == "before_compaction":
        out["message_count"] = int(p.get("message_count") or 0)
    elif name == "command":
        out["command"] = str(p.get("action") or "")
    elif name == "gateway_start":
        out["address"] = str(p.get("address") or "")
    elif name == "agent_end":
        out["final_text"] = p.get("text")
    return name, out


def deny(host: str, text: str) -> Reply:
    return Reply("", text + "\n", 1)


_DATA = {"before_tool_call": "args", "message_received": "text",
         "before_message_send": "content", "tool_result_persist": "result"}


def answer(host: str, payload: dict[str, Any], r: Result) -> Reply:
    if r.ends or r.decision in ("ask", "respond"):
        return deny(host, r.block_text())
    field = _DATA.get(r.event)
    problem = unapplied(r, (field,) if field else ())
    if problem:
        return deny(host, problem)
    if field and field in r.changes:
        value = r.changes[field]
        # BeforeToolCall and ToolResultPersist take the new value itself as
        # `data`; the message events take {"content": ...}.
        data = value if field in ("args", "result") else {"content": value}
        return Reply(dumps({"action": "modify", "data": data}))
    return Reply("")
