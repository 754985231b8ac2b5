"""The Gemini CLI dialect.

Decode table (docs/dialects.md): exit 0 reads stdout, which must be empty
or one JSON object ("silence is mandatory": anything else is a failure);
exit 2 blocks with stderr as the reason where Gemini blocks (BeforeTool,
AfterTool, BeforeAgent, AfterAgent, BeforeModel, AfterModel) and has no
effect where it ignores flow control; any other exit is a failure.
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING, Any

from interlock.engine.decisions import Decision, ask, block, respond, stop
from interlock.engine.errors import HookCrash
from interlock.executors.command import exit_message
from interlock.executors.dialects._base import (
    BaseDialect,
    check_continue,
    combine,
    contract,
    dump,
    label,
    need_object,
    need_str,
    parse_json,
    require_modifies,
    session_id,
)

if TYPE_CHECKING:
    from interlock.engine.hooks import Invocation
    from interlock.executors._process import Completed

_FLOW = frozenset({"before_tool_call", "after_tool_call", "user_input", "before_stop",
                   "before_llm_call", "after_llm_call"})
"""Events where Gemini honours exit 2 and decision/continue; elsewhere they are ignored."""


class GeminiDialect(BaseDialect):
    name = "gemini"
    system = "gemini"

    def env(self, invocation: Invocation, *, project_dir: str,
            plugin_root: str | None) -> dict[str, str]:
        # As Gemini's hook runner sets them (CLAUDE_PROJECT_DIR for Claude scripts).
        return {"GEMINI_PROJECT_DIR": project_dir, "GEMINI_CWD": project_dir,
                "GEMINI_SESSION_ID": session_id(invocation), "CLAUDE_PROJECT_DIR": project_dir}

    def encode(self, invocation: Invocation, *, project_dir: str) -> bytes:
        ev = invocation.event
        data = ev.to_dict()
        body: dict[str, Any] = {
            "session_id": session_id(invocation),
            "transcript_path": ev.transcript_path,
            "cwd": ev.cwd or project_dir,
            "hook_event_name": self.host_event(invocation),
            "timestamp": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        name = ev.name
        if "tool_name" in data:
            body["tool_name"] = self.tool_name(data["tool_name"])
            body["tool_input"] = self.host_args(invocation)
            server, sep, tool = data["tool_name"].removeprefix("mcp__").partition("__")
            if data["tool_name"].startswith("mcp__") and sep:
                # Gemini names MCP tools mcp_<server>_<tool> and says which is which.
                body["tool_name"] = f"mcp_{server}_{tool}"
                body["mcp_context"] = {"server_name": server, "tool_name": tool}
        if name == "after_tool_call":
            result = data["result"]
            body["tool_response"] = {
                "llmContent": result,
                "returnDisplay": result if isinstance(result, str) else str(result)}
            if data["status"] == "error":
                body["tool_response"]["error"] = result
        elif name == "user_input":
            body["prompt"] = data["text"]
        elif name == "before_stop":
            body["prompt"] = data.get("prompt") or ""
            body["prompt_response"] = data["last_message"]
            body["stop_hook_active"] = data["stop_hook_active"]
        elif name == "before_llm_call":
            body["llm_request"] = {"model": data["model"],
                                   "messages": to_gemini_messages(data["messages"]),
                                   "config": data["params"]}
        elif name == "after_llm_call":
            body["llm_request"] = {"model": data["model"], "messages": []}
            body["llm_response"] = gemini_response(data["text"], data["finish_reason"])
        elif name in ("session_start", "before_compaction"):
            key = "source" if name == "session_start" else "trigger"
            body[key] = data[key]
        elif name == "session_end":
            body["reason"] = data["reason"]
        elif name == "notification":
            body["message"] = data["message"]
            # Gemini's only type is ToolPermission; details carry the call, if any.
            body["notification_type"] = ("ToolPermission" if data["kind"] == "permission_prompt"
                                         else data["kind"])
            body["details"] = {}
        return dump(body)

    def decode(self, invocation: Invocation, result: Completed) -> Decision | None:
        event = invocation.event.name
        if result.exit_code == 2:
            if event not in _FLOW:
                return None  # Gemini ignores flow control on lifecycle events
            return block(result.stderr_text() or f"blocked by hook {label(invocation)} (exit 2)")
        if result.exit_code != 0:
            raise HookCrash(exit_message(label(invocation), result) +
                            " (gemini hooks block with exit 2 or a deny answer)")
        text = result.stdout.strip()
        if not text:
            return None
        answer = need_object(invocation, self.name, parse_json(invocation, self.name, text),
                             "the answer")
        return self._answer(invocation, answer)

    def _answer(self, invocation: Invocation, answer: dict[str, Any]) -> Decision | None:
        name = self.name
        event = invocation.event.name
        flow = event in _FLOW
        check_continue(invocation, name, answer)
        shown = need_str(invocation, name, answer.get("systemMessage"), "systemMessage")
        if flow and answer.get("continue") is False:
            why = need_str(invocation, name, answer.get("stopReason"), "stopReason")
            return stop(why or shown or f"stopped by hook {label(invocation)}")
        decisions: list[Decision] = []
        changes: dict[str, Any] = {}
        reason = need_str(invocation, name, answer.get("reason"), "reason")
        verdict = answer.get("decision")
        if verdict is not None and flow:
            if verdict in ("deny", "block"):
                decisions.append(block(reason or shown or f"denied by hook {label(invocation)}"))
            elif verdict in ("allow", "approve"):
                pass  # Gemini's pass-through: no opinion, never an approval
            elif verdict == "ask" and event == "before_tool_call":
                decisions.append(ask(reason))
            else:
                raise contract(invocation, name, f"answered decision {verdict!r}; use "
                               '"allow" or "deny"')
        ctx = None
        hso = answer.get("hookSpecificOutput")
        if hso is not None:
            hso = need_object(invocation, name, hso, "hookSpecificOutput")
            ctx = need_str(invocation, name, hso.get("additionalContext"), "additionalContext")
            value = self._specific(invocation, hso, changes)
            if value is not None:
                decisions.append(value)
        return combine(invocation, name, decisions, changes, ctx)

    def _specific(self, invocation: Invocation, hso: dict[str, Any],
                  changes: dict[str, Any]) -> Decision | None:
        name = self.name
        ev = invocation.event
        if ev.name == "before_tool_call" and "tool_input" in hso:
            require_modifies(invocation, name, "hookSpecificOutput.tool_input")
            new = need_object(invocation, name, hso["tool_input"], "tool_input")
            # Gemini merges these keys over the model's arguments.
            changes["args"] = {**getattr(ev, "args", {}), **self.our_args(invocation, new)}
        elif ev.name == "after_tool_call" and "tool_output" in hso:
            require_modifies(invocation, name, "hookSpecificOutput.tool_output")
            changes["result"] = hso["tool_output"]
        elif ev.name == "before_llm_call":
            if "llm_request" in hso:
                require_modifies(invocation, name, "hookSpecificOutput.llm_request")
                req = need_object(invocation, name, hso["llm_request"], "llm_request")
                if "messages" in req:
                    changes["messages"] = from_gemini_messages(req["messages"])
                if "config" in req:
                    changes["params"] = req["config"]
            if "llm_response" in hso:
                resp = need_object(invocation, name, hso["llm_response"], "llm_response")
                text = response_text(resp)
                if text is None:
                    raise contract(invocation, name, "answered llm_response without text or "
                                   "candidates[].content.parts")
                return respond({"text": text, "tool_calls": []})
        elif ev.name == "after_llm_call" and "llm_response" in hso:
            require_modifies(invocation, name, "hookSpecificOutput.llm_response")
            resp = need_object(invocation, name, hso["llm_response"], "llm_response")
            text = response_text(resp)
            if text is not None:
                changes["text"] = text
        return None


# Gemini's hook LLM shapes (its hookTranslator's decoupled LLMRequest and
# LLMResponse): roles user / model / system, reply text in
# candidates[].content.parts. Interlock's messages are in OpenAI's shape.
_TO_GEMINI_ROLE = {"assistant": "model", "tool": "user", "developer": "system"}


def to_gemini_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"role": _TO_GEMINI_ROLE.get(str(m.get("role")), m.get("role") or "user"),
             "content": m.get("content") if m.get("content") is not None else ""}
            for m in messages]


def from_gemini_messages(messages: Any) -> Any:
    if not isinstance(messages, list):
        return messages  # the engine's schema check reports it
    return [{**m, "role": "assistant" if m.get("role") == "model" else m.get("role")}
            if isinstance(m, dict) else m for m in messages]


def gemini_response(text: str, finish_reason: str | None) -> dict[str, Any]:
    finish = {"stop": "STOP", "length": "MAX_TOKENS", "content_filter": "SAFETY"}
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": [text]}, "index": 0}
    if finish_reason:
        candidate["finishReason"] = finish.get(finish_reason, "OTHER")
    return {"text": text, "candidates": [candidate]}


def response_text(resp: dict[str, Any]) -> str | None:
    """The reply text of an LLMResponse: its candidates' parts, else its text."""
    candidates = resp.get("candidates")
    if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):
        parts = (candidates[0].get("content") or {}).get("parts")
        if isinstance(parts, list):
            return "".join(p if isinstance(p, str) else str(p.get("text", ""))
                           if isinstance(p, dict) else "" for p in parts)
    text = resp.get("text")
    return text if isinstance(text, str) else None


GEMINI = GeminiDialect()
