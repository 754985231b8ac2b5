"""The project's Interlock policy on an OpenAI Agents SDK run.

    from interlock.adapters.openai_agents import Interlock
    interlock = Interlock()
    agent = Agent(name="assistant", tools=interlock.tools([get_weather, deploy]))
    result = await Runner.run(agent, "...", hooks=interlock)

The SDK's run hooks only observe and its tool guardrails can only allow or
reject, so the tools themselves are wrapped (:meth:`Interlock.tools`) to
apply every tool decision; the run hooks (``hooks=interlock``) carry the rest
(docs/adapters.md, OpenAI Agents SDK):

- each function tool call: ``before_tool_call`` (block returns the
  structured reason as the tool's output; modify changes the arguments;
  respond returns an output without running the tool; ask becomes the SDK's
  ``needs_approval``, so the run ends with ``result.interruptions`` and
  resumes after ``state.approve(...)``) and ``after_tool_call`` (modify or
  block of the output; context beside it);
- ``on_agent_start`` of the first agent: ``session_start`` (the Policy's
  first run), ``user_input`` on the run's input and ``before_agent_start``
  (block/stop end the run); ``on_agent_end``: ``agent_end``;
- ``on_handoff``: ``subagent_start`` (block/stop end the run);
- ``on_llm_start``/``on_llm_end``: ``before_llm_call``/``after_llm_call``
  (block/stop end the run; the SDK's hooks cannot change a model call, so
  modify, respond or context there end it too, with
  :class:`~interlock.adapters.DecisionNotSupported`).
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from agents import Agent, AgentsException, FunctionTool, RunContextWrapper, RunHooks, Tool
from agents.items import ModelResponse
from agents.tool_context import ToolContext

from interlock.adapters._core import (
    DecisionNotSupported,
    Policy,
    PolicyStopped,
    ToolGate,
    as_text,
    with_context,
)

if TYPE_CHECKING:
    from agents.run_context import AgentHookContext

    from interlock.engine.outcome import Outcome

__all__ = ["FIRES", "Interlock"]

FRAMEWORK = "openai-agents"

FIRES = frozenset({"session_start", "user_input", "before_agent_start", "agent_end",
                   "subagent_start", "before_llm_call", "after_llm_call", "before_tool_call",
                   "after_tool_call", "tool_result_persist"})
"""The catalog events these hooks and tools fire (docs/adapters.md, Events each adapter
fires)."""
_LLM_FIX = ("the OpenAI Agents SDK's run hooks observe model calls; decide on tool calls "
            "instead, or use a RunConfig call_model_input_filter of your own")


class Interlock(RunHooks[Any]):
    """The project's policy for OpenAI Agents SDK runs: run hooks, and a tool wrapper.

    ``project``: the project root (default: found from the working folder up).
    ``policy``: a :class:`~interlock.adapters.Policy` to share.
    """

    def __init__(self, *, project: str | os.PathLike[str] | None = None,
                 policy: Policy | None = None) -> None:
        self.policy = policy if policy is not None else Policy(FRAMEWORK, project=project)
        self._run: object | None = None
        """The usage record of the run whose start was judged (one per run, shared by
        its agents): a run that ended by raising never reaches on_agent_end, so a
        flag reset there would let the next run skip its start."""
        self._gates: dict[str, ToolGate] = {}

    # -- tools ----------------------------------------------------------------------
    def tools(self, tools: Iterable[Tool]) -> list[Tool]:
        """``tools`` with every function tool governed by the policy.

        A tool of another kind (hosted, computer, shell) cannot be wrapped: it is
        refused rather than let through ungoverned."""
        out: list[Tool] = []
        for tool in tools:
            if not isinstance(tool, FunctionTool):
                raise TypeError(f"interlock cannot govern the {type(tool).__name__} "
                                f"{getattr(tool, 'name', '')!r}: only function tools pass "
                                "through the policy (docs/adapters.md)")
            out.append(self._wrap(tool))
        return out

    def _wrap(self, tool: FunctionTool) -> FunctionTool:
        governed = copy.copy(tool)
        invoke = tool.on_invoke_tool
        own_approval = tool.needs_approval

        async def needs_approval(ctx: RunContextWrapper[Any], args: dict[str, Any],
                                 call_id: str) -> bool:
            with _raised_through_the_sdk():
                gate = await self.policy.before_tool(tool.name, args, call_id)
            self._gates[call_id] = gate
            if gate.action == "ask":
                return True
            if callable(own_approval):
                return await own_approval(ctx, args, call_id)
            return bool(own_approval)

        async def on_invoke(ctx: ToolContext[Any], raw: str) -> Any:
            with _raised_through_the_sdk():
                return await self._invoke(tool.name, invoke, ctx, raw)

        governed.needs_approval = needs_approval
        governed.on_invoke_tool = on_invoke
        setattr(governed, _MARK, True)
        return governed

    async def _invoke(self, name: str, invoke: Callable[[ToolContext[Any], str], Awaitable[Any]],
                      ctx: ToolContext[Any], raw: str) -> Any:
        call_id = ctx.tool_call_id
        args = _args(raw)
        gate = self._gates.pop(call_id, None)
        if gate is None:  # a resumed run: the approval check ran before it was saved
            gate = await self.policy.before_tool(name, args, call_id)
        if gate.action in ("block", "respond"):
            gated = await self.policy.after_gated(gate, name, call_id)
            context = "\n".join(c for c in (gate.context, gated.context) if c)
            return as_text(with_context(gated.result, context))
        if gate.action == "ask" and ctx.is_tool_approved(name, call_id) is not True:
            # The SDK runs a tool that needs approval only once it is approved;
            # should it ever not have asked, the call is refused, not run.
            refusal = {"error": "tool call needs approval", "tool_name": name,
                       "reason": gate.reason or "a hook asks for a person's approval"}
            return as_text(refusal)
        result = await invoke(ctx, raw if gate.args == args else json.dumps(gate.args))
        after = await self.policy.after_tool(name, gate.args, result, call_id)
        context = "\n".join(c for c in (gate.context, after.context) if c)
        final = with_context(after.result, context)
        return final if final is result else as_text(final)

    # -- the run --------------------------------------------------------------------
    async def on_agent_start(self, context: AgentHookContext[Any], agent: Agent[Any]) -> None:
        _check_governed(agent)
        if context.usage is self._run:  # a handoff within the run
            return
        self._run = context.usage
        # The SDK's hooks observe: the input can be refused here, not changed.
        given = await self.policy.start_run(_input_text(context.turn_input), fires=FIRES)
        outcome = await self.policy.emit("before_agent_start", prompt=given.text,
                                         system_prompt=_instructions(agent))
        self._end_on(outcome, can=("block",))

    async def on_agent_end(self, context: AgentHookContext[Any], agent: Agent[Any],
                           output: Any) -> None:
        self.policy.notify("agent_end", status="completed", final_text=as_text(output))

    async def on_handoff(self, context: RunContextWrapper[Any], from_agent: Agent[Any],
                         to_agent: Agent[Any]) -> None:
        outcome = await self.policy.emit("subagent_start", task=f"handoff to {to_agent.name}",
                                         child_session_id=to_agent.name)
        self._end_on(outcome, can=("block",))

    async def on_llm_start(self, context: RunContextWrapper[Any], agent: Agent[Any],
                           system_prompt: str | None, input_items: list[Any]) -> None:
        messages: list[dict[str, Any]] = []
        if self.policy.listens("before_llm_call"):
            messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
            messages += [_item(i) for i in input_items]
        outcome = await self.policy.emit("before_llm_call", model=str(agent.model or ""),
                                         messages=messages,
                                         tools=[t.name for t in agent.tools])
        self._end_on(outcome, can=("block",), fix=_LLM_FIX)

    async def on_llm_end(self, context: RunContextWrapper[Any], agent: Agent[Any],
                         response: ModelResponse) -> None:
        text, calls = "", []
        for item in response.output:
            kind = getattr(item, "type", None)
            if kind == "message":
                text += "".join(getattr(c, "text", "") for c in getattr(item, "content", []))
            elif kind == "function_call":
                call: Any = item
                calls.append({"id": call.call_id, "name": call.name,
                              "args": _args(call.arguments)})
        outcome = await self.policy.emit("after_llm_call", model=str(agent.model or ""),
                                         text=text, tool_calls=calls,
                                         finish_reason="tool_calls" if calls else "stop")
        self._end_on(outcome, can=("block",), fix=_LLM_FIX)

    def _end_on(self, outcome: Outcome, *, can: tuple[str, ...], fix: str = "") -> None:
        self.policy.apply(outcome, can=can, fix=fix)
        if outcome.blocked:
            raise PolicyStopped(outcome.name, outcome.reason,
                                outcome.hook.qualified_name if outcome.hook else None)


_MARK = "_interlock_governed"


class _Stopped(PolicyStopped, AgentsException):
    """PolicyStopped that the SDK's tool runner re-raises as it is: it wraps any
    other exception from a tool in its own ``UserError``."""


class _NotSupported(DecisionNotSupported, AgentsException):
    """DecisionNotSupported, re-raised by the SDK's tool runner as it is."""


@contextmanager
def _raised_through_the_sdk() -> Iterator[None]:
    """Let ``except PolicyStopped`` around ``Runner.run`` catch a stop decided in a
    tool call, as the adapters promise (docs/adapters.md)."""
    try:
        yield
    except (_Stopped, _NotSupported):
        raise
    except PolicyStopped as e:
        raise _Stopped(e.event, e.reason, e.hook) from e
    except DecisionNotSupported as e:
        raise _NotSupported(e.framework, e.event, e.decision, e.hook, e.fix) from e


def _check_governed(agent: Agent[Any]) -> None:
    """Refuse to run an agent (the first, or one handed off to) holding a tool that
    would run around the policy: forgetting ``interlock.tools`` fails loudly."""
    from interlock.engine.errors import ConfigError

    for tool in agent.tools:
        if not getattr(tool, _MARK, False):
            raise ConfigError(f"agent {agent.name!r} has the tool "
                              f"{getattr(tool, 'name', tool)!r}, which the policy does not "
                              "govern", field="tools",
                              fix="build the agent with tools=interlock.tools([...])")
    if agent.mcp_servers:
        raise ConfigError(f"agent {agent.name!r} has MCP servers, whose tools this adapter "
                          "does not govern", field="mcp_servers",
                          fix="give the agent function tools only, or gate the servers' "
                              "tools where they run (docs/adapters.md)")


def _args(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {"_raw": raw}
    return value if isinstance(value, dict) else {"_value": value}


def _input_text(items: list[Any]) -> str:
    """The run's input as text: its user messages, in order."""
    texts = []
    for item in items:
        if isinstance(item, dict) and item.get("role") == "user":
            texts.append(as_text(_content_text(item.get("content", ""))))
    return "\n".join(texts)


def _content_text(content: Any) -> Any:
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return content


def _instructions(agent: Agent[Any]) -> str:
    return agent.instructions if isinstance(agent.instructions, str) else ""


def _item(item: Any) -> dict[str, Any]:
    if isinstance(item, dict):
        role = item.get("role") or item.get("type") or "user"
        content = item.get("content", item.get("output", item.get("arguments", "")))
        return {"role": str(role), "content": as_text(content)}
    return {"role": "user", "content": as_text(item)}
