"""The Hermes Agent shell-hook dialect.

Decode table (docs/dialects.md): stdout is one JSON object or nothing;
``{"decision": "block", "reason"}`` and ``{"action": "block", "message"}``
block; ``{"action": "approve"}`` sends the call to a person, so it is ask,
not approve; ``{"action": "modify", "args"}`` / ``{"decision": "modify",
"tool_input"}`` are merged over the tool's arguments; ``{"context"}`` adds
context; ``{"action": "continue", "message"}`` on pre_verify keeps the agent
working. Exit 2 on pre_tool_call blocks (reason: the block answer, else
stderr, else Hermes's fixed text). Any other non-zero exit still has its
stdout read, as Hermes does; with no valid answer there, it is a failure.
Commands are split with shlex and run without a shell.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from interlock.engine.decisions import Decision, ask, block
from interlock.engine.errors import HookCrash
from interlock.engine.strictjson import loads as strict_loads
from interlock.executors.command import exit_message
from interlock.executors.dialects._base import (
    BaseDialect,
    combine,
    contract,
    dump,
    extra_fields,
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

# Our field -> Hermes's kwarg, per event (the kwargs its call sites pass).
_RENAMES = {
    "user_input": {"text": "user_message"},
    "subagent_start": {"task": "child_goal"},
    "subagent_stop": {"result": "child_summary"},
    "command": {"arguments": "args_raw"},
    "llm_error": {"error": "error_message"},
}
_DEFAULT_BLOCK = "Blocked by shell hook."


class HermesDialect(BaseDialect):
    name = "hermes"
    system = "hermes"
    shell = False

    def encode(self, invocation: Invocation, *, project_dir: str) -> bytes:
        ev = invocation.event
        extra = extra_fields(invocation, _RENAMES.get(ev.name, {}),
                             frozenset({"tool_name", "args"}))
        if ev.turn_id is not None:
            extra["turn_id"] = ev.turn_id
        if ev.name == "user_input":  # pre_llm_call passes these (where they are known)
            extra["platform"] = ev.platform
            first = extra.pop("first_turn", None)
            if first is not None:
                extra["is_first_turn"] = first
            if extra.get("model") is None:
                extra.pop("model", None)
        tool = getattr(ev, "tool_name", None)
        event = self.host_event(invocation)
        body = {
            "hook_event_name": event,
            "tool_name": self.tool_name(tool) if tool is not None else None,
            "tool_input": self.host_args(invocation) if tool is not None else None,
            "session_id": session_id(invocation),
            "cwd": ev.cwd or project_dir,
            "profile": "default",
            "extra": extra,
        }
        return dump(body)

    def decode(self, invocation: Invocation, result: Completed) -> Decision | None:
        text = result.stdout.strip()
        code = result.exit_code
        answer: Any = None
        if text:
            if code == 0:
                answer = parse_json(invocation, self.name, text)
            else:
                try:
                    answer = strict_loads(text)
                except ValueError:  # a repeated key too: never read half an answer
                    answer = None
        if code == 2 and invocation.event.name == "before_tool_call":
            reason = None
            if isinstance(answer, dict):
                reason = answer.get("message") or answer.get("reason")
            reason = reason if isinstance(reason, str) and reason else None
            return block(reason or result.stderr_text(400) or _DEFAULT_BLOCK)
        if code != 0 and not isinstance(answer, dict):
            raise HookCrash(exit_message(label(invocation), result))
        if answer is None:
            return None
        return self._answer(invocation, need_object(invocation, self.name, answer,
                                                    "the answer"))

    def _answer(self, invocation: Invocation, answer: dict[str, Any]) -> Decision | None:
        name = self.name
        event = invocation.event.name
        ctx = need_str(invocation, name, answer.get("context"), "context")
        decisions: list[Decision] = []
        changes: dict[str, Any] = {}
        action = answer.get("action")
        verdict = answer.get("decision")
        if action is not None and verdict is not None:
            raise contract(invocation, name, "answered both action and decision; give one")
        if action is not None:
            message = need_str(invocation, name, answer.get("message"), "message")
            if action == "block":
                decisions.append(block(self._reason(invocation, message, "message")))
            elif action == "approve":
                # Hermes's approve escalates to a person: that is ask, never approve.
                decisions.append(ask(message))
            elif action == "modify":
                self._modify(invocation, answer.get("args"), "args", changes)
            elif action == "continue" and event == "before_stop":
                decisions.append(block(self._reason(invocation, message, "message")))
            else:
                raise contract(invocation, name, f"answered action {action!r}, which Hermes "
                               f"does not define for {self.host_event(invocation)}")
        elif verdict is not None:
            reason = need_str(invocation, name, answer.get("reason"), "reason")
            if verdict == "block":
                decisions.append(block(self._reason(invocation, reason, "reason")))
            elif verdict == "modify":
                self._modify(invocation, answer.get("tool_input"), "tool_input", changes)
            else:
                raise contract(invocation, name, f"answered decision {verdict!r}; Hermes "
                               'accepts "block" and "modify" (and action "approve" to ask)')
        return combine(invocation, name, decisions, changes, ctx)

    def _reason(self, invocation: Invocation, text: str | None, key: str) -> str:
        if not text:
            # Hermes ignores a block with an empty message; we refuse to guess.
            raise contract(invocation, self.name, f"answered block with an empty {key} "
                           f"(fix: say why in {key!r})")
        return text

    def _modify(self, invocation: Invocation, new: Any, key: str,
                changes: dict[str, Any]) -> None:
        if invocation.event.name != "before_tool_call":
            raise contract(invocation, self.name, "answered modify, which Hermes shell hooks "
                           "may only do on pre_tool_call")
        require_modifies(invocation, self.name, f"modify ({key})")
        new = need_object(invocation, self.name, new, key)
        # Hermes merges a modify over the arguments, key by key.
        changes["args"] = {**getattr(invocation.event, "args", {}),
                           **self.our_args(invocation, new)}


HERMES = HermesDialect()
