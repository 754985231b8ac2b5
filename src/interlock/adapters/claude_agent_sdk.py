"""The project's Interlock policy on a Claude Agent SDK session, as SDK hook callbacks.

    from interlock.adapters.claude_agent_sdk import interlock_hooks
    options = ClaudeAgentOptions(hooks=interlock_hooks(), can_use_tool=ask_a_person)

The SDK runs Claude Code, whose hook events and answers are the Claude
dialect the bridge already speaks (docs/dialects.md). So each callback here
does what ``interlock bridge claude`` does for the CLI, in process: the hook
input becomes its catalog event (``PreToolUse`` -> ``before_tool_call``,
``SubagentStart`` -> ``subagent_start``, ...), the project's engine decides,
and the outcome is answered in Claude's terms:

- block: a ``deny`` with the reason, which Claude returns to the model;
- modify: ``updatedInput`` (with ``ask``: a rewrite is not an approval) and
  ``updatedToolOutput``;
- ask: ``permissionDecision: "ask"``, which the SDK routes to your
  ``can_use_tool`` (the human-in-the-loop step); without one, nobody can
  answer and the call is denied;
- approve: ``allow``; context: ``additionalContext``; stop: ``continue:
  false``; a decision Claude cannot apply at that event is a deny naming it.

The project's ``[[permissions]]`` rules then apply to a tool call as in every
bridge (docs/adapters.md): a ``deny`` rule denies it, even over a hook's
approve; an ``ask`` rule asks, unless a hook approved; an ``allow`` rule
approves nothing on its own.

Every matcher is registered with ``on_failure="block"``, so an exception in
a callback (the project's config cannot be loaded, say) blocks the action.
"""

from __future__ import annotations

import json
import os
from typing import Any

from claude_agent_sdk import HookContext, HookMatcher
from claude_agent_sdk.types import HookEvent, HookInput, HookJSONOutput

from interlock.adapters._core import GATEWAY_EVENTS, Policy
from interlock.engine.decisions import Verdict
from interlock.hosts.bridge import claude
from interlock.hosts.bridge._common import Result
from interlock.hosts.bridge._decide import decided
from interlock.hosts.bridge._events import build_event

__all__ = ["EVENTS", "FIRES", "interlock_hooks"]

FRAMEWORK = "claude-agent-sdk"

EVENTS: tuple[HookEvent, ...] = (
    "PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "Stop",
    "SubagentStart", "SubagentStop", "PreCompact", "Notification", "PermissionRequest")
"""The SDK's hook events; each maps to its catalog event as the bridge maps Claude Code's."""

FIRES = frozenset({"before_tool_call", "after_tool_call", "tool_error", "user_input",
                   "before_stop", "subagent_start", "subagent_stop", "before_compaction",
                   "notification", "permission_request"})
"""The catalog events of :data:`EVENTS` (docs/adapters.md, Events each adapter fires)."""


def interlock_hooks(*, project: str | os.PathLike[str] | None = None,
                    policy: Policy | None = None,
                    timeout: float | None = None) -> dict[HookEvent, list[HookMatcher]]:
    """``ClaudeAgentOptions(hooks=...)``: the project's policy on every SDK hook event.

    ``project``: the project root (default: found from the working folder up).
    ``policy``: a :class:`~interlock.adapters.Policy` to share. ``timeout``:
    seconds per callback (the SDK's default, 60, when None).
    """
    chosen = policy if policy is not None else Policy(FRAMEWORK, project=project)

    async def callback(payload: HookInput, tool_use_id: str | None,
                       context: HookContext) -> HookJSONOutput:
        return await answer(chosen, dict(payload))

    return {event: [HookMatcher(matcher=None, hooks=[callback], timeout=timeout,
                                on_failure="block")]
            for event in EVENTS}


async def answer(policy: Policy, payload: dict[str, Any]) -> HookJSONOutput:
    """The SDK hook answer to ``payload``: the Claude bridge's, decided in process."""
    # At the first callback (the session's first prompt), and again after an edit:
    # a hook on an event the SDK never sends is refused, and the refusal blocks.
    policy.check_fired(FIRES, absent=GATEWAY_EVENTS)
    event = build_event(claude.SYSTEM, payload).replace(platform=policy.framework)
    dispatched, rules = policy.dispatch(event)  # the hooks and rules of one revision
    outcome = await dispatched
    if (outcome.verdict is Verdict.NONE and not outcome.changes and not outcome.contexts
            and not rules):
        return {}  # no opinion: what claude.answer gives for it at every event
    # As the Claude bridge decides: the project's rules after the hooks.
    record = decided(outcome, event, rules, engine=policy.engine)
    reply = claude.answer(claude.host_event(payload), payload, Result.from_dict(record))
    body: dict[str, Any] = json.loads(reply.stdout) if reply.stdout else {}
    if reply.code == 2 and not body:  # exit 2 with no JSON: a block, in any version
        body = {"decision": "block", "reason": reply.stderr.strip()}
    if "continue" in body:  # the SDK spells Python keywords with a trailing _
        body["continue_"] = body.pop("continue")
    out: HookJSONOutput = body  # type: ignore[assignment]
    return out
