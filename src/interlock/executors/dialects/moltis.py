"""The Moltis shell-hook dialect.

Decode table (docs/dialects.md): exit 0 with empty stdout is no opinion;
exit 0 with ``{"action": "modify", "data": ...}`` modifies; exit 1 blocks
with stderr as the reason (on the events Moltis lets hooks block); any
other exit, 2 included, is a failure.

What ``data`` means. Moltis documents it as the event's mutable part (for
BeforeToolCall, the new ``arguments`` object), but real scripts built with
``jq '.arguments.command = ...'`` often print the whole payload back. Both
are accepted and told apart by shape: an object whose ``event`` and
``session_key`` equal the ones we sent is a whole payload, from which only
the mutable fields are taken (a changed read-only field is a contract
error, and an unchanged echo is no opinion). Anything else is the mutable
part: the new value itself for BeforeToolCall (arguments) and
ToolResultPersist (result), or an object of mutable fields by their Moltis
names (``{"content": ...}`` for MessageReceived / MessageSending).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from interlock.engine.decisions import Decision, block, modify
from interlock.engine.errors import HookCrash
from interlock.executors.command import exit_message
from interlock.executors.dialects._base import (
    BaseDialect,
    contract,
    dump,
    label,
    need_object,
    parse_json,
    require_modifies,
    session_id,
)

if TYPE_CHECKING:
    from interlock.engine.hooks import Invocation
    from interlock.executors._process import Completed

# Events Moltis runs as "modifying" (sequential; may block or modify), with
# their mutable fields: Moltis name -> our field. A str value marks an event
# whose mutable part is one value (data is that value itself).
_MUTABLE: dict[str, dict[str, str] | tuple[str, str]] = {
    "before_tool_call": ("arguments", "args"),
    "tool_result_persist": ("result", "result"),
    "message_received": {"content": "text"},
    "before_message_send": {"content": "content"},
    "before_llm_call": {"messages": "messages", "params": "params"},
    "after_llm_call": {"text": "text", "tool_calls": "tool_calls"},
    "before_agent_start": {"system_prompt": "system_prompt"},
    "before_compaction": {"instructions": "instructions", "summary": "summary"},
}


class MoltisDialect(BaseDialect):
    name = "moltis"
    system = "moltis"

    def body(self, invocation: Invocation) -> dict[str, Any]:
        """The tagged HookPayload Moltis would send for this event (crates/common
        hooks.rs: no tool_call_id, params or system_prompt; counters Interlock
        does not keep are 0)."""
        ev = invocation.event
        d = ev.to_dict()
        name = ev.name
        out: dict[str, Any] = {"event": self.host_event(invocation)}
        if name not in ("gateway_start", "gateway_stop"):
            out["session_key"] = session_id(invocation)
        channel = {"surface": ev.platform}
        if name in ("before_tool_call", "after_tool_call", "tool_result_persist"):
            out["tool_name"] = self.tool_name(d["tool_name"])
        if name == "before_tool_call":
            out["arguments"] = self.host_args(invocation)
            out["channel"] = channel
        elif name == "after_tool_call":
            out["success"] = d["status"] == "ok"
            out["result"] = d["result"]
            out["channel"] = channel
        elif name == "tool_result_persist":
            out["result"] = d["result"]
            out["channel"] = channel
        elif name == "before_agent_start":
            out["model"] = ""
        elif name == "agent_end":
            out.update(text=d["final_text"] or "", iterations=0, tool_calls=0)
        elif name == "before_llm_call":
            out.update(provider="", model=d["model"], messages=d["messages"], tool_count=0,
                       iteration=0)
        elif name == "after_llm_call":
            out.update(provider="", model=d["model"], text=d["text"], tool_calls=d["tool_calls"],
                       input_tokens=0, output_tokens=0, iteration=0)
        elif name == "before_compaction":
            out["message_count"] = d["message_count"]
        elif name == "after_compaction":
            out["summary_len"] = len(d["summary"])
        elif name == "message_received":
            out.update(content=d["text"], channel=d["channel"] or None,
                       channel_binding={**channel, "sender_id": d["sender_id"]})
        elif name in ("before_message_send", "message_sent"):
            out["content"] = d["content"]
        elif name == "session_start":
            out["channel"] = channel
        elif name == "command":
            out.update(action=d["command"], sender_id=None)
        elif name == "gateway_start":
            out["address"] = d["address"]
        return out

    def encode(self, invocation: Invocation, *, project_dir: str) -> bytes:
        return dump(self.body(invocation))

    def decode(self, invocation: Invocation, result: Completed) -> Decision | None:
        code = result.exit_code
        event = invocation.event.name
        if code == 1:
            if event not in _MUTABLE:
                return None  # a read-only event in Moltis: it cannot block
            return block(result.stderr_text() or
                         f"hook {invocation.hook.name!r} blocked the action")
        if code != 0:
            raise HookCrash(exit_message(label(invocation), result) +
                            " (moltis hooks block with exit 1; other codes are errors)")
        text = result.stdout.strip()
        if not text:
            return None
        answer = need_object(invocation, self.name, parse_json(invocation, self.name, text),
                             "the answer")
        action = answer.get("action")
        if not answer or action == "continue":
            return None
        if action != "modify":
            raise contract(invocation, self.name, f"answered action {action!r}; Moltis "
                           'answers are {"action": "modify", "data": ...} or nothing')
        if "data" not in answer:
            raise contract(invocation, self.name, 'answered modify without "data"')
        return self._modify(invocation, answer["data"])

    def _modify(self, invocation: Invocation, data: Any) -> Decision | None:
        event = invocation.event.name
        mutable = _MUTABLE.get(event)
        if mutable is None:
            raise contract(invocation, self.name, f"answered modify on "
                           f"{self.host_event(invocation)}, which Moltis runs read-only")
        sent = self.body(invocation)
        names = dict([mutable]) if isinstance(mutable, tuple) else mutable
        if (isinstance(data, dict) and data.get("event") == sent["event"]
                and data.get("session_key") == sent.get("session_key")):
            changes = {}
            for key, value in data.items():
                if key in names:
                    if value != sent.get(key):
                        changes[names[key]] = value
                elif key in sent and value != sent[key]:
                    raise contract(invocation, self.name, f"changed {key!r}, which a Moltis "
                                   f"hook may not change (it may change: {', '.join(names)})")
            if not changes:
                return None  # the payload echoed back unchanged
            if isinstance(changes.get("args"), dict):
                changes["args"] = self.our_args(invocation, changes["args"])
        elif isinstance(mutable, tuple):
            if mutable[1] == "args":
                data = self.our_args(invocation, need_object(
                    invocation, self.name, data, "data (the new arguments)"))
            changes = {mutable[1]: data}
        else:
            data = need_object(invocation, self.name, data, "data")
            unknown = set(data) - set(names)
            if unknown:
                raise contract(invocation, self.name, f"answered data with {sorted(unknown)}; "
                               f"on {sent['event']} it may change: {', '.join(names)}")
            changes = {names[k]: v for k, v in data.items()}
            if not changes:
                return None
        require_modifies(invocation, self.name, "modify")
        return modify(**changes)


MOLTIS = MoltisDialect()
