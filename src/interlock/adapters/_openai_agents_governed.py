"""What an OpenAI Agents SDK run may reach, for the adapter
(``interlock.adapters.openai_agents``): every agent it can run (the first, one
handed off to, one used as a tool, and theirs in turn) holds only tools and
handoffs the policy governs (docs/adapters.md, OpenAI Agents SDK)."""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from typing import Any

from agents import Agent, Handoff, RunContextWrapper

from interlock.engine.errors import ConfigError

MARK = "_interlock_governed"
"""Set on a tool or handoff the adapter wrapped."""


def check_governed(agent: Agent[Any]) -> None:
    """Refuse to run ``agent`` while it, or an agent it can run (handed off to, or
    used as a tool, whose nested run no run hook sees), holds a tool, an MCP
    server or a handoff that would run around the policy: forgetting
    ``interlock.tools`` or ``interlock.handoffs`` fails loudly."""
    seen: set[int] = set()
    todo = [agent]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        todo += _reachable(current)


def _reachable(agent: Agent[Any]) -> list[Agent[Any]]:
    """The agents ``agent`` can run, once its own tools and handoffs pass."""
    found: list[Agent[Any]] = []
    for tool in agent.tools:
        if not getattr(tool, MARK, False):
            raise ConfigError(f"agent {agent.name!r} has the tool "
                              f"{getattr(tool, 'name', tool)!r}, which the policy does not "
                              "govern", field="tools",
                              fix="build the agent with tools=interlock.tools([...])")
        nested = getattr(tool, "_agent_instance", None)  # Agent.as_tool's agent
        if isinstance(nested, Agent):
            found.append(nested)
    if agent.mcp_servers:
        raise ConfigError(f"agent {agent.name!r} has MCP servers, whose tools this adapter "
                          "does not govern", field="mcp_servers",
                          fix="give the agent function tools only, or gate the servers' "
                              "tools where they run (docs/adapters.md)")
    for item in agent.handoffs:
        if isinstance(item, Agent):
            found.append(item)
            continue
        if not getattr(item, MARK, False):
            # Its on_handoff callback would run with the model's arguments before
            # subagent_start is asked.
            raise ConfigError(f"agent {agent.name!r} has the handoff {item.tool_name!r}, "
                              "whose callback would run before the policy is asked",
                              field="handoffs",
                              fix="build the agent with handoffs=interlock.handoffs([...])")
        target = item._agent_ref() if item._agent_ref is not None else None
        if isinstance(target, Agent):
            found.append(target)
    return found


def governed_handoff(handoff: Handoff[Any, Any],
                     ask: Callable[[RunContextWrapper[Any], Agent[Any]], Awaitable[None]]
                     ) -> Handoff[Any, Any]:
    """A copy of ``handoff`` that awaits ``ask`` (subagent_start; it raises to
    refuse) before the handoff's own ``on_invoke_handoff`` (its callback) runs."""
    target = handoff._agent_ref() if handoff._agent_ref is not None else None
    if not isinstance(target, Agent):
        raise TypeError(f"interlock cannot govern the handoff {handoff.tool_name!r}: it names "
                        "no agent (build it with agents.handoff(agent, ...))")
    governed = copy.copy(handoff)  # keeps the target agent's reference
    invoke = handoff.on_invoke_handoff

    async def on_invoke(ctx: RunContextWrapper[Any], input_json: str) -> Any:
        await ask(ctx, target)
        return await invoke(ctx, input_json)

    governed.on_invoke_handoff = on_invoke
    setattr(governed, MARK, True)
    return governed
