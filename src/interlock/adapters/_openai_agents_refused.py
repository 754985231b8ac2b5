"""Tool calls a person rejects at the OpenAI Agents SDK's approval step, for the
adapter (``interlock.adapters.openai_agents``).

``state.reject(item)`` makes the SDK give the model a rejection message as the
call's output without calling the tool, and it runs no hook then, so the adapter
keeps the calls that went to the approval step and finds each one's rejection
in the next model call's input, where ``permission_denied`` and
``after_tool_call`` (``status: "blocked"``) fire for it, once (docs/adapters.md,
OpenAI Agents SDK)."""

from __future__ import annotations

from typing import Any

from agents import AgentsException
from agents.tool import DEFAULT_APPROVAL_REJECTION_MESSAGE

from interlock.adapters._core import (
    DecisionNotSupported,
    Policy,
    PolicyStopped,
    as_text,
    with_context,
)

_REWRITE_FIX = ("run with run_config=RunConfig(call_model_input_filter=interlock.model_input), "
                "which gives the model a rejected call's output as after_tool_call left it "
                "(docs/adapters.md, OpenAI Agents SDK)")


class Asked:
    """The calls that went to the SDK's approval step and have not run yet."""

    __slots__ = ("_calls",)

    def __init__(self) -> None:
        self._calls: dict[str, tuple[str, dict[str, Any]]] = {}
        """Tool name and arguments, by call id (the SDK's ids are unique)."""

    def __bool__(self) -> bool:
        return bool(self._calls)

    def add(self, call_id: str, name: str, args: dict[str, Any]) -> None:
        self._calls[call_id] = (name, args)

    def ran(self, call_id: str) -> None:
        """The call was approved: the wrapped tool is running it."""
        self._calls.pop(call_id, None)

    async def refused(self, policy: Policy, items: list[Any], *,
                      applied: bool = True) -> list[Any]:
        """``items`` (a model call's input) with the output of each call that asked
        and was answered without running, a rejection, as after_tool_call left it.

        Each fires permission_denied (the rejection's message as its reason,
        unless it is the SDK's default) and after_tool_call once. ``applied``:
        whether the caller gives the model the returned items (model_input); where
        it cannot (on_llm_start), a changed output raises DecisionNotSupported."""
        changed: list[Any] | None = None
        for at, item in enumerate(items):
            if not isinstance(item, dict) or item.get("type") != "function_call_output" \
                    or item.get("call_id") not in self._calls:
                continue
            call_id = item["call_id"]
            name, args = self._calls.pop(call_id)
            output = item.get("output")
            after = await policy.refused(
                name, args, output, call_id,
                reason=None if output == DEFAULT_APPROVAL_REJECTION_MESSAGE else as_text(output))
            if after.result is output and not after.context:
                continue
            if not applied:
                raise NotSupported(policy.framework, "after_tool_call", "modify or context",
                                   None, _REWRITE_FIX)
            if changed is None:
                changed = list(items)
            changed[at] = {**item, "output": as_text(with_context(after.result, after.context))}
        return items if changed is None else changed


class Stopped(PolicyStopped, AgentsException):
    """PolicyStopped that the SDK's tool runner re-raises as it is: it wraps any
    other exception from a tool in its own ``UserError``."""


class NotSupported(DecisionNotSupported, AgentsException):
    """DecisionNotSupported, re-raised by the SDK's tool runner as it is."""
