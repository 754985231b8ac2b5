"""The last step before a pydantic-ai tool runs: the args that reach the tool are
the ones the policy judged (docs/adapters.md, pydantic-ai, Order).

The capability judges a call in ``wrap_tool_execute``; after it, every
capability's ``before_tool_execute`` and the ``wrap_tool_execute`` of those listed
after it may still change the args. The toolset wrapper here sees the args the
tool will run with: equal to the judged ones, the call runs; changed, or never
judged, before_tool_call and the rules judge them again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.toolsets import ToolsetTool, WrapperToolset

from interlock.adapters._core import Policy, ToolGate, joined, with_context


@dataclass(slots=True)
class Judged:
    """A call before_tool_call judged, while the capability's handler runs it."""

    name: str
    args: dict[str, Any]
    """The args the policy let it run with."""
    gate: ToolGate | None = None
    """The judgment of the args that reached the tool, when they were not ``args``."""


Key = tuple[str | None, str]
"""A call, by run id and tool call id."""


@dataclass
class JudgedToolset(WrapperToolset[Any]):
    """Runs a tool only with args the policy judged (module docstring)."""

    policy: Policy = field(repr=False)
    running: dict[Key, Judged] = field(repr=False)
    """The capability's calls in flight, by run id and call id."""

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any],
                        tool: ToolsetTool[Any]) -> Any:
        call_id = ctx.tool_call_id or ""
        judged = self.running.get((ctx.run_id, call_id)) if ctx.tool_call_id else None
        if judged is not None and (tool_args is judged.args or tool_args == judged.args):
            return await self.wrapped.call_tool(name, tool_args, ctx, tool)
        # Changed after the judgment, or never judged: judge what will run. No person is
        # asked here: the approval pydantic-ai shows is of the model's args, not these.
        shown = judged.name if judged is not None else ctx.tool_name or name
        gate = await self.policy.before_tool(shown, tool_args, call_id, can_ask=False)
        if judged is not None:
            # The capability's wrap_tool_execute gives after_tool_call what ran (or not).
            judged.gate = gate
            if gate.action in ("block", "respond"):
                return gate.value
            return await self.wrapped.call_tool(name, gate.args, ctx, tool)
        if gate.action in ("block", "respond"):
            return await self.policy.answered(gate, shown, call_id)
        result = await self.wrapped.call_tool(name, gate.args, ctx, tool)
        after = await self.policy.after_tool(shown, gate.args, result, call_id)
        return with_context(after.result, joined(gate.context, after.context))
