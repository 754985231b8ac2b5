"""What an OpenAI Agents SDK run may reach, for the adapter
(``interlock.adapters.openai_agents``): every agent it can run (the first, one
handed off to, one used as a tool, and theirs in turn) holds only tools and
handoffs the policy governs (docs/adapters.md, OpenAI Agents SDK)."""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from agents import Agent, Handoff, RunContextWrapper

from interlock.adapters._core import _for_platform
from interlock.engine.errors import ConfigError

if TYPE_CHECKING:
    from interlock.adapters._core import Policy

MARK = "_interlock_governed"
"""Set on a tool or handoff the adapter wrapped (on a tool: the tool it wraps)."""

NESTED = frozenset({"before_llm_call", "after_llm_call", "before_stop", "subagent_stop"})
"""What the nested run of an agent used as a tool fires only when ``as_tool`` was given
the run hooks (``hooks=interlock``)."""


def check_governed(agent: Agent[Any], interlock: Any) -> None:
    """Refuse to run ``agent`` while it, or an agent it can run (handed off to, or
    used as a tool), holds a tool, an MCP server or a handoff that would run
    around the policy: forgetting ``interlock.tools`` or ``interlock.handoffs``
    fails loudly. So does an agent used as a tool whose nested run would not
    carry ``interlock``'s run hooks while a hook that can decide is on an event
    only they fire: that hook would never judge the nested agent."""
    seen: set[int] = set()
    todo = [agent]
    unheard: list[str] = []
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        todo += _reachable(current, interlock.policy, unheard)
    deciding = _deciding(interlock.policy, NESTED) if unheard else None
    if deciding is not None:
        raise ConfigError(
            f"the agent used as the tool {unheard[0]!r} runs without the run hooks, so "
            f"hook {deciding[0]!r} on {deciding[1]} would never judge it", field="tools",
            fix="give the nested run the hooks: agent.as_tool(..., hooks=interlock) "
                "(docs/adapters.md, OpenAI Agents SDK)")


def _reachable(agent: Agent[Any], policy: Policy, unheard: list[str]) -> list[Agent[Any]]:
    """The agents ``agent`` can run, once its own tools and handoffs pass; the
    names of its agents used as tools whose nested run no run hook of ``policy``
    sees go in ``unheard``."""
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
            if getattr(_nested_hooks(getattr(tool, MARK)), "policy", None) is not policy:
                unheard.append(tool.name)
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


def _nested_hooks(tool: Any) -> Any:
    """The run hooks ``Agent.as_tool`` gave the nested run of ``tool`` (None when it
    gave none, or the SDK keeps them where this does not look)."""
    impl = getattr(getattr(tool, "on_invoke_tool", None), "_invoke_tool_impl", None)
    code = getattr(impl, "__code__", None)
    if code is None or "hooks" not in code.co_freevars:
        return None
    try:
        return impl.__closure__[code.co_freevars.index("hooks")].cell_contents  # type: ignore[union-attr]
    except (ValueError, IndexError, TypeError):
        return None


def _deciding(policy: Policy, events: frozenset[str]) -> tuple[str, str] | None:
    """A hook (name and event) that can decide on one of ``events`` for this
    framework's runs, if any."""
    from interlock.engine.catalog import BY_NAME, Kind

    for hook in policy.engine.hooks:
        for name in hook.events:
            if (name in events and BY_NAME[name].kind is Kind.GATE and not hook.shadow
                    and not hook.background and _for_platform(hook, policy.framework)):
                return hook.qualified_name, name
    return None


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
