"""The Claude Code dialect (Codex reads the same shapes more strictly: codex.py).

Decode table (docs/dialects.md has it in full):

- exit 0: empty stdout is no opinion; stdout that starts with ``{`` is the
  answer (invalid JSON is a failure); plain text is context on
  UserPromptSubmit / SessionStart / UserPromptExpansion and ignored
  elsewhere (Claude writes it to its debug log).
- exit 2: block with stderr as the reason on events where the host blocks
  (PermissionRequest included: it denies the permission); feedback (context)
  on PostToolUseFailure; no effect where the host ignores it (observe events).
- any other exit (Claude's exit 1 included): a failure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from interlock.engine.decisions import (
    Decision,
    approve,
    ask,
    block,
    context,
    stop,
)
from interlock.engine.errors import HookCrash
from interlock.executors.command import exit_message
from interlock.executors.dialects._base import (
    BaseDialect,
    check_continue,
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

# Our field name -> Claude's, per event; fields not listed keep our name.
_RENAMES: dict[str, dict[str, str]] = {
    "before_tool_call": {"args": "tool_input", "tool_call_id": "tool_use_id"},
    "after_tool_call": {"args": "tool_input", "tool_call_id": "tool_use_id",
                        "result": "tool_response"},
    "tool_error": {"args": "tool_input", "tool_call_id": "tool_use_id"},
    "permission_request": {"args": "tool_input", "tool_call_id": "tool_use_id",
                           "permission_updates": "permission_suggestions"},
    "permission_denied": {"args": "tool_input", "tool_call_id": "tool_use_id"},
    "user_input": {"text": "prompt"},
    "before_stop": {"last_message": "last_assistant_message"},
    "subagent_stop": {"result": "last_assistant_message", "child_session_id": "agent_id"},
    "subagent_start": {"task": "agent_type", "child_session_id": "agent_id"},
    "before_compaction": {"instructions": "custom_instructions"},
    "after_compaction": {"summary": "compact_summary"},
    "notification": {"kind": "notification_type"},
    "config_change": {"path": "file_path"},
    "file_changed": {"path": "file_path"},
    "task_created": {"title": "task_subject"},
    "task_completed": {"title": "task_subject"},
    "command": {"command": "command_name", "arguments": "command_args"},
}
_SKIP = frozenset({"block_count", "duration_ms", "status"})

_PLAIN_TEXT_IS_CONTEXT = frozenset({"user_input", "session_start", "command"})

_CLAUDE_EXIT2_BLOCKS = frozenset({
    "before_tool_call", "permission_request", "user_input", "before_stop", "subagent_stop",
    "task_created", "task_completed", "config_change", "before_compaction", "after_tool_call",
    "command", "model_select"})
_CLAUDE_EXIT2_FEEDBACK = frozenset({"tool_error"})

# Codex rejects continue: false / stopReason here (elsewhere they stop the run),
# and has no `decision` in these events' schemas.
_CODEX_NO_STOP = frozenset({"before_tool_call", "permission_request"})
_CODEX_NO_DECISION = frozenset({"before_compaction", "session_start", "subagent_start"})

_BOM = "\ufeff".encode()

_TOP_KEYS = frozenset({"continue", "stopReason", "suppressOutput", "systemMessage",
                       "terminalSequence", "decision", "reason", "hookSpecificOutput"})


class ClaudeDialect(BaseDialect):
    """Claude Code's hook protocol. ``strict`` is Codex's stricter reading of it."""

    name = "claude"
    system = "claude"
    strict = False
    json_starts: tuple[bytes, ...] = (b"{",)
    """How stdout opens when the host reads it as a JSON answer (Claude: ``{``, whatever
    follows; Codex: ``{`` or ``[``). Such output that does not parse is a failure, never
    plain text: a deny followed by a log line must not pass as no opinion."""

    # -- what the script sees --------------------------------------------------
    def env(self, invocation: Invocation, *, project_dir: str,
            plugin_root: str | None) -> dict[str, str]:
        out = {"CLAUDE_PROJECT_DIR": project_dir}
        if plugin_root is not None:
            out["CLAUDE_PLUGIN_ROOT"] = plugin_root
        return out

    def encode(self, invocation: Invocation, *, project_dir: str) -> bytes:
        ev = invocation.event
        body: dict[str, Any] = {
            "session_id": session_id(invocation),
            "transcript_path": ev.transcript_path,
            "cwd": ev.cwd or project_dir,
            "hook_event_name": self.host_event(invocation),
        }
        if "tool_name" in type(ev).__struct_fields__:
            body["permission_mode"] = "default"
        if ev.turn_id is not None:
            body["prompt_id"] = ev.turn_id
        if ev.depth > 0:  # inside a subagent, Claude names it on every event
            body["agent_id"] = ev.session_id
        body.update(extra_fields(invocation, _RENAMES.get(ev.name, {}), _SKIP))
        if "permission_suggestions" in body:
            from interlock.executors.toolnames import to_suggestions

            body["permission_suggestions"] = to_suggestions(self.system,
                                                            body["permission_suggestions"])
        if "tool_name" in body:
            body["tool_name"] = self.tool_name(body["tool_name"])
            if isinstance(body.get("tool_input"), dict):
                body["tool_input"] = self.host_args(invocation)
        self.adapt(invocation, body)
        return dump(body)

    def adapt(self, invocation: Invocation, body: dict[str, Any]) -> None:
        """Host-specific touches to the stdin payload (Codex: turn_id, apply_patch)."""

    def check_rewrite(self, invocation: Invocation) -> None:
        """Raise if this host's rewrite of the tool input cannot be applied."""

    # -- what its answer means -------------------------------------------------
    def decode(self, invocation: Invocation, result: Completed) -> Decision | None:
        code = result.exit_code
        if code == 2:
            return self._exit2(invocation, result)
        if code != 0:
            raise HookCrash(exit_message(label(invocation), result) +
                            f" ({self.name} hooks block only with exit 2 or a deny answer)")
        # A byte order mark is whitespace to Claude's trim() (JavaScript's), so the
        # JSON after it is still the answer.
        text = result.stdout.strip().removeprefix(_BOM).lstrip()
        if not text:
            return None
        if not text.startswith(self.json_starts):
            if invocation.event.name in _PLAIN_TEXT_IS_CONTEXT:
                return context(text.decode("utf-8", "replace"))
            return None  # the host only logs plain text on other events
        return self._answer(invocation, parse_json(invocation, self.name, text))

    def _exit2(self, invocation: Invocation, result: Completed) -> Decision | None:
        event = invocation.event.name
        reason = result.stderr_text()
        if event in _CLAUDE_EXIT2_BLOCKS:
            return block(reason or f"blocked by hook {label(invocation)} (exit 2)")
        if event in _CLAUDE_EXIT2_FEEDBACK and reason:
            return context(reason)
        return None  # Claude shows stderr to the user and carries on

    def _answer(self, invocation: Invocation, answer: Any) -> Decision | None:
        name = self.name
        answer = need_object(invocation, name, answer, "the answer")
        event = invocation.event.name
        check_continue(invocation, name, answer)
        unknown = set(answer) - _TOP_KEYS
        if unknown and self.strict:
            raise contract(invocation, name, f"answered unknown field(s) {sorted(unknown)}")
        # What the person is shown; a deny with no reason of its own (hookify's
        # shape) is explained by it.
        shown = need_str(invocation, name, answer.get("systemMessage"), "systemMessage")
        why = shown or f"denied by hook {label(invocation)}"
        if self.strict:
            if answer.get("suppressOutput") is True:
                raise contract(invocation, name, "answered suppressOutput: true, which codex "
                               "does not support")
            if event in _CODEX_NO_STOP and (answer.get("continue") is False
                                            or "stopReason" in answer):
                raise contract(invocation, name, "answered continue: false or stopReason, "
                               f"which codex rejects on {self.host_event(invocation)}")
        if answer.get("continue") is False:
            stop_why = need_str(invocation, name, answer.get("stopReason"), "stopReason")
            return stop(stop_why or shown or f"stopped by hook {label(invocation)}")

        decisions: list[Decision] = []
        changes: dict[str, Any] = {}
        ctx: str | None = None
        hso = answer.get("hookSpecificOutput")
        if hso is not None:
            hso = need_object(invocation, name, hso, "hookSpecificOutput")
            expected = self.host_event(invocation)
            if hso.get("hookEventName") != expected:
                raise contract(invocation, name,
                               f"answered hookSpecificOutput.hookEventName "
                               f"{hso.get('hookEventName')!r}; this event is {expected!r}")
            ctx = need_str(invocation, name, hso.get("additionalContext"),
                           "additionalContext")
            self._specific(invocation, hso, decisions, changes, why)

        top = answer.get("decision")
        reason = need_str(invocation, name, answer.get("reason"), "reason")
        if top is not None:
            if top == "block" and self.strict and event in _CODEX_NO_DECISION:
                raise contract(invocation, name, "answered decision \"block\", which is not "
                               f"in codex's {self.host_event(invocation)} schema (codex fails "
                               "open on it; block with continue: false)")
            if top == "block":
                if self.strict and not reason:
                    raise contract(invocation, name, 'answered decision "block" with no '
                                   "reason; codex treats that as a failure")
                decisions.append(block(reason or why))
            elif top == "approve" and not self.strict and event == "before_tool_call":
                decisions.append(approve(reason))  # the legacy PreToolUse shape
            else:
                raise contract(invocation, name, f"answered decision {top!r}, which "
                               f"{name} does not accept on {self.host_event(invocation)}")
        elif reason is not None and self.strict:
            raise contract(invocation, name, "answered a reason without a decision")
        return combine(invocation, name, decisions, changes, ctx)

    def _specific(self, invocation: Invocation, hso: dict[str, Any],
                  decisions: list[Decision], changes: dict[str, Any], why: str) -> None:
        name = self.name
        event = invocation.event.name
        if event == "before_tool_call":
            self._pre_tool(invocation, hso, decisions, changes, why)
        elif event == "permission_request":
            raw = hso.get("decision")
            if raw is None:
                return
            dec = need_object(invocation, name, raw, "hookSpecificOutput.decision")
            if "updatedPermissions" in dec and not self.strict:
                require_modifies(invocation, name, "decision.updatedPermissions")
                from interlock.executors.toolnames import to_updates

                changes["permission_updates"] = to_updates(self.system,
                                                           dec["updatedPermissions"])
            for reserved in ("updatedInput", "interrupt") + (
                    ("updatedPermissions",) if self.strict else ()):
                if reserved in dec:
                    raise contract(invocation, name, f"answered decision.{reserved}; "
                                   "Interlock's permission_request cannot take it (fix: "
                                   "rewrite tool input in a PreToolUse modifier)")
            message = need_str(invocation, name, dec.get("message"), "decision.message")
            behavior = dec.get("behavior")
            if behavior == "allow":
                decisions.append(approve(message))
            elif behavior == "deny":
                decisions.append(block(message or why))
            else:
                raise contract(invocation, name, f"answered decision.behavior {behavior!r}; "
                               'use "allow" or "deny"')
        elif event == "after_tool_call":
            for key in ("updatedToolOutput", "updatedMCPToolOutput"):
                if key in hso:
                    require_modifies(invocation, name, key)
                    changes["result"] = hso[key]
        elif event == "permission_denied" and hso.get("retry"):
            raise contract(invocation, name, "answered retry: true; Interlock's "
                           "permission_denied is an observe event, and nothing here can tell "
                           "the model it may retry (fix: leave retry out, or decide in a "
                           "PreToolUse or PermissionRequest hook)")
        elif event in ("cwd_changed", "file_changed") and "watchPaths" in hso:
            raise contract(invocation, name, f"answered watchPaths on {event}; Interlock's "
                           "watch list is set by SessionStart only (fix: answer watchPaths "
                           "from a SessionStart hook)")
        elif event == "session_start" and not self.strict:
            if "initialUserMessage" in hso:
                require_modifies(invocation, name, "initialUserMessage")
                changes["initial_message"] = need_str(
                    invocation, name, hso["initialUserMessage"], "initialUserMessage")
            if "watchPaths" in hso:
                require_modifies(invocation, name, "watchPaths")
                changes["watch_paths"] = hso["watchPaths"]

    def _pre_tool(self, invocation: Invocation, hso: dict[str, Any],
                  decisions: list[Decision], changes: dict[str, Any], why: str) -> None:
        name = self.name
        verdict = hso.get("permissionDecision")
        reason = need_str(invocation, name, hso.get("permissionDecisionReason"),
                          "permissionDecisionReason")
        updated = hso.get("updatedInput")
        if updated is not None:
            updated = need_object(invocation, name, updated, "updatedInput")
        if self.strict:
            if verdict in ("ask", "defer") or (verdict == "allow" and updated is None):
                raise contract(invocation, name, f"answered permissionDecision {verdict!r}"
                               + (" without updatedInput" if verdict == "allow" else "")
                               + "; codex rejects that answer")
            if updated is not None and verdict != "allow":
                raise contract(invocation, name, "answered updatedInput without "
                               'permissionDecision "allow"; codex rejects that answer')
            if verdict == "deny" and not reason:
                raise contract(invocation, name, 'answered permissionDecision "deny" with '
                               "no permissionDecisionReason; codex treats that as a failure")
            if verdict is None and reason is not None:
                raise contract(invocation, name, "answered a reason without a decision")
        if updated is not None:
            require_modifies(invocation, name, "updatedInput")
            self.check_rewrite(invocation)
            changes["args"] = self.our_args(invocation, updated)
        if verdict is None or verdict == "defer":
            return
        if verdict == "deny":
            decisions.append(block(reason or why))
        elif verdict == "ask":
            decisions.append(ask(reason))
        elif verdict == "allow":
            decisions.append(approve(reason))
        else:
            raise contract(invocation, name, f"answered permissionDecision {verdict!r}; use "
                           "allow, deny, ask or defer")


CLAUDE = ClaudeDialect()
