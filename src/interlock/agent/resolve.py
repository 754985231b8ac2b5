"""Phase 4, resolve: the model stopped calling tools; may the agent stop?

A before_stop block means "keep working": its reason becomes the next
instruction (as hook context, not as the user's words). The engine caps how
many times in a row that can happen (docs/engine.md, Stop loops).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from interlock.agent.options import RunResult, RunStatus
from interlock.models.tooling import ModelResponse

if TYPE_CHECKING:
    from interlock.agent.loop import Agent


async def resolve(agent: Agent, reply: ModelResponse) -> RunResult | None:
    """The run's result, or None to keep working."""
    gate = await agent.gate("before_stop", last_message=reply.text, prompt=agent.prompt)
    if gate.blocked:
        hook = gate.outcome.hook.qualified_name if gate.outcome.hook else "before_stop"
        agent.step("keep_working", hook=hook, reason=gate.outcome.reason)
        agent.add_hook_message(gate.outcome.reason or "Keep working: the task is not done.",
                               hook)
        return None
    if gate.outcome.contexts:
        # Context on an allowed stop is for the next prompt of this session.
        agent.pending_context.append(gate.context(agent.options.context_cap))
    return RunResult(RunStatus.COMPLETED, text=reply.text)
