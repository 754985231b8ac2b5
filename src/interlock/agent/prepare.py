"""Phase 1, prepare: start the session, gate the user's input, build the user message.

Context from session_start, user_input and before_agent_start goes into the
current user message under ``hook_context`` (never the system prompt, never
as if the user wrote it); it is merged into the content when a request is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from interlock.agent.options import RunResult, RunStatus
from interlock.engine.decisions import Verdict

if TYPE_CHECKING:
    from interlock.agent.loop import Agent


async def start_session(agent: Agent, source: str) -> RunResult | None:
    cap = agent.options.context_cap
    gate = await agent.gate("session_start", source=source,
                            watch_paths=list(agent.session.watch_paths))
    if gate.blocked:
        return RunResult(RunStatus.BLOCKED, text=agent.reason_for_model(gate),
                         reason=gate.outcome.reason)
    payload = gate.payload
    agent.session.watch_paths = list(payload.watch_paths)
    if payload.initial_message:
        hook = gate.outcome.hook.qualified_name if gate.outcome.hook else "session_start"
        agent.pending_context.append(
            f'<hook-context hook="{hook}">\n{payload.initial_message[:cap]}\n</hook-context>')
    if gate.outcome.contexts:
        agent.pending_context.append(gate.context(cap))
    await select_model(agent, agent.session.model, requested=None)
    if agent.parent is None:
        from interlock.agent.mcp import connect

        for warning in await connect(agent):
            agent.step("warning", text=warning)
    agent.started = True
    return None


async def select_model(agent: Agent, model: str, requested: str | None) -> str:
    gate = await agent.gate("model_select", model=model, requested=requested)
    agent.session.model = gate.payload.model
    return str(agent.session.model)


async def prepare(agent: Agent, prompt: str) -> RunResult | None:
    """Gate the prompt; None when the agent should work, else the run's result."""
    cap = agent.options.context_cap
    if not agent.started:
        blocked = await agent.start()
        if blocked is not None:
            return blocked
    first = not any(m.get("role") == "user" for m in agent.session.messages)
    gate = await agent.gate("user_input", text=prompt, model=agent.session.model or None,
                            first_turn=first)
    if gate.blocked:
        agent.step("blocked", event="user_input", reason=gate.outcome.reason)
        return RunResult(RunStatus.BLOCKED, text=agent.reason_for_model(gate),
                         reason=gate.outcome.reason)
    if gate.verdict is Verdict.RESPOND:
        # Handled by a hook: no model call. Both sides are kept, marked as such.
        reply = str(gate.outcome.value)
        agent.session.messages.append({"role": "user", "content": prompt})
        agent.session.messages.append({"role": "assistant", "content": reply,
                                       "responded_by": gate.outcome.hook.qualified_name
                                       if gate.outcome.hook else None})
        if agent.options.on_text is not None:
            agent.options.on_text(reply)
        return RunResult(RunStatus.RESPONDED, text=reply)
    text = gate.payload.text
    contexts = [*agent.pending_context, gate.context(cap)]
    agent.pending_context.clear()
    start = await agent.gate("before_agent_start", prompt=text,
                             system_prompt=agent.session.system_prompt)
    if start.blocked:
        return RunResult(RunStatus.BLOCKED, text=agent.reason_for_model(start),
                         reason=start.outcome.reason)
    agent.session.system_prompt = start.payload.system_prompt
    contexts.append(start.context(cap))
    message = {"role": "user", "content": text}
    agent.prompt = text
    joined = "\n".join(c for c in contexts if c)
    if joined:
        message["hook_context"] = joined
    agent.session.messages.append(message)
    return None
