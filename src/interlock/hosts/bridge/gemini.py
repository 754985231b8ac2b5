"""Gemini CLI: BeforeTool/AfterTool..., ``{"decision": "deny", "reason"}``, exit 2 blocks.

Gemini merges ``hookSpecificOutput.tool_input`` into the arguments, while an
Interlock ``modify`` replaces them whole; a rewrite that drops a key cannot
be expressed, so it is denied. Sources: docs/dialects.md and docs/one-policy.md.
"""

from __future__ import annotations

from interlock.hosts.bridge import claude
from interlock.hosts.bridge._common import Reply, Result, as_text, dumps, merge_covers, unapplied

# typing is not imported at run time: it costs the bridge ~3 ms at start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SYSTEM = "gemini"
HOST_TIMEOUT = 60.0
"""Gemini's default hook timeout (it is configured in milliseconds)."""
DEFAULT_DEADLINE = 20.0
PROJECT_ENV = "GEMINI_PROJECT_DIR"

# Host events where a failing bridge must have no effect: observe events, and
# those where "block" means "keep working" (docs/engine.md, Failures: what "fail closed"
# means). A test holds this equal to what the catalog says.
UNMAPPED_OBSERVE: frozenset[str] = frozenset()
UNMAPPED_GATE = frozenset({'BeforeToolSelection'})
NO_EFFECT = frozenset({
    'AfterAgent', 'Notification', 'SessionEnd'}) | UNMAPPED_OBSERVE

host_event = claude.host_event

# Events where Gemini ignores `decision` and `continue` (a rewrite it cannot
# apply there is refused at `bridge install`).
DENY_IGNORED = frozenset({"SessionStart", "PreCompress"})

# Events where Gemini shows hookSpecificOutput.additionalContext to the model.
CONTEXT_READ = frozenset({"AfterTool", "BeforeAgent", "SessionStart"})

# Events where Gemini reads `decision` and `continue` (elsewhere it ignores them).
_FLOW = frozenset({"BeforeTool", "AfterTool", "BeforeAgent", "AfterAgent", "BeforeModel",
                   "AfterModel", "BeforeToolSelection"})


def to_event(payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    from interlock.hosts.bridge._events import catalog_name

    name = catalog_name(SYSTEM, host_event(payload))
    fields = claude.fields_for(SYSTEM, name, payload)
    request = payload.get("llm_request")
    if isinstance(request, dict):
        fields["model"] = str(request.get("model") or "")
        # Gemini's roles are user / model / system; ours are OpenAI's.
        fields["messages"] = [
            {**m, "role": "assistant" if m.get("role") == "model" else m.get("role")}
            for m in request.get("messages") or [] if isinstance(m, dict)]
    response = payload.get("llm_response")
    if name == "after_llm_call" and isinstance(response, dict):
        fields["text"] = _response_text(response)
    return name, fields


def _response_text(response: dict[str, Any]) -> str:
    """An LLMResponse's text: its first candidate's parts, else ``text``."""
    candidates = response.get("candidates")
    if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):
        content = candidates[0].get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        if isinstance(parts, list):
            return "".join(p if isinstance(p, str) else "" for p in parts)
    return str(response.get("text") or "")


def deny(host: str, text: str) -> Reply:
    return Reply(dumps({"decision": "deny", "reason": text}), text + "\n", 2)


def answer(host: str, payload: dict[str, Any], r: Result) -> Reply:
    if r.decision == "stop" and host in _FLOW:
        # continue: false ends the agent's run (a deny on AfterAgent would
        # instead send the reason back as a new prompt: the opposite).
        text = r.block_text()
        return Reply(dumps({"continue": False, "stopReason": text}), text + "\n", 0)
    if r.ends or r.decision in ("respond", "ask"):
        # Gemini's "ask" is not documented everywhere; a person may not be there.
        if r.event == "before_stop" and r.decision == "block":
            return Reply(dumps({"decision": "deny", "reason": r.reason or r.block_text()}))
        return deny(host, r.block_text())
    fields = {"before_tool_call": ("args",), "after_tool_call": ("result",)}.get(r.event, ())
    problem = unapplied(r, fields)
    if problem:
        return deny(host, problem)
    ctx = r.context_text()
    if "result" in r.changes:
        # Gemini never reads a rewritten tool output; the reason of an AfterTool
        # deny is what the model gets instead of the result, so it carries it.
        text = as_text(r.changes["result"])
        return Reply(dumps({"decision": "deny", "reason": f"{text}\n\n{ctx}" if ctx else text}))
    specific: dict[str, Any] = {}
    if "args" in r.changes:
        if not merge_covers(payload.get("tool_input"), r.changes["args"]):
            return deny(host, "Interlock: policy removed tool arguments, which Gemini's "
                              "merge cannot express; denied rather than run unchanged")
        specific["tool_input"] = r.changes["args"]
    if ctx:
        specific["additionalContext"] = ctx
    out: dict[str, Any] = {}
    if r.decision == "approve":
        out["decision"] = "allow"
    if specific:
        out["hookSpecificOutput"] = {"hookEventName": host, **specific}
    return Reply(dumps(out) if out else "")
