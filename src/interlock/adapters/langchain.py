"""The project's Interlock policy on a LangChain 1.x agent, as one middleware.

    from interlock.adapters.langchain import InterlockMiddleware
    agent = create_agent(model, tools=[...], middleware=[InterlockMiddleware()])

What maps where (docs/adapters.md, LangChain):

- ``before_agent``/``after_agent``: ``session_start`` (the Policy's first
  run), ``user_input`` on the last ``HumanMessage`` (block/stop end the run;
  modify rewrites it; context follows it), ``before_agent_start`` (block or
  stop end the run before it starts) and ``agent_end``;
- ``wrap_model_call``: ``before_llm_call`` (block/stop end the run; respond
  answers without the model; context is added as a message; modify may drop
  offered tools) and ``after_llm_call`` (modify of text and tool calls);
- ``wrap_tool_call``: ``before_tool_call`` (block returns the structured
  reason as the ``ToolMessage``; modify changes the args; respond returns a
  result without running the tool; ask pauses the graph with LangGraph's
  ``interrupt``, so a checkpointer is needed, and the run resumes with
  ``Command(resume=True)`` or ``{"approved": False, "reason": ...}``) and
  ``after_tool_call`` (modify or block of the result; context beside it).

Both the sync (``invoke``) and async (``ainvoke``) paths apply the policy.
Any other decision raises :class:`~interlock.adapters.DecisionNotSupported`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    HumanMessage,
    ToolMessage,
    convert_to_messages,
)

from interlock.adapters._core import (
    AfterTool,
    DecisionNotSupported,
    Policy,
    PolicyStopped,
    RunInput,
    ToolGate,
    as_text,
    with_context,
)

if TYPE_CHECKING:
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.runtime import Runtime
    from langgraph.types import Command

    from interlock.engine.outcome import Outcome

__all__ = ["FIRES", "InterlockMiddleware"]

FRAMEWORK = "langchain"

FIRES = frozenset({"session_start", "user_input", "before_agent_start", "agent_end",
                   "before_llm_call", "after_llm_call", "before_tool_call", "after_tool_call",
                   "tool_result_persist"})
"""The catalog events this middleware fires (docs/adapters.md, Events each adapter fires)."""
_INPUT_CAN = ("block", "modify", "context")


class InterlockMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """The project's policy as LangChain agent middleware.

    ``project``: the project root (default: found from the working folder up).
    ``policy``: a :class:`~interlock.adapters.Policy` to share.
    """

    def __init__(self, *, project: str | os.PathLike[str] | None = None,
                 policy: Policy | None = None) -> None:
        super().__init__()
        self.policy = policy if policy is not None else Policy(FRAMEWORK, project=project)

    # -- the run ------------------------------------------------------------------
    def before_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        given = self.policy.start_run_sync(_prompt(state), fires=FIRES, can=_INPUT_CAN)
        self._started(self.policy.emit_sync("before_agent_start", prompt=given.text))
        return _input_update(state, given)

    async def abefore_agent(self, state: AgentState[Any],
                            runtime: Runtime[Any]) -> dict[str, Any] | None:
        given = await self.policy.start_run(_prompt(state), fires=FIRES, can=_INPUT_CAN)
        self._started(await self.policy.emit("before_agent_start", prompt=given.text))
        return _input_update(state, given)

    def _started(self, outcome: Outcome) -> None:
        self.policy.apply(outcome, can=("block",))
        if outcome.blocked:
            raise PolicyStopped(outcome.name, outcome.reason, _hook(outcome))

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        self.policy.notify("agent_end", status="completed", final_text=_last_text(state))
        return None

    async def aafter_agent(self, state: AgentState[Any],
                           runtime: Runtime[Any]) -> dict[str, Any] | None:
        return self.after_agent(state, runtime)

    # -- model calls ----------------------------------------------------------------
    def wrap_model_call(self, request: ModelRequest[Any],
                        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
                        ) -> ModelResponse[Any]:
        before = self.policy.emit_sync("before_llm_call", **_llm_fields(
            request, self.policy.listens("before_llm_call")))
        request, answer = self._before_model(before, request)
        response = answer if answer is not None else handler(request)
        if not self.policy.listens("after_llm_call"):
            return response
        after = self.policy.emit_sync("after_llm_call", **_reply_fields(request, response,
                                                                        answer is not None))
        return self._after_model(after, response)

    async def awrap_model_call(self, request: ModelRequest[Any],
                               handler: Callable[[ModelRequest[Any]],
                                                 Awaitable[ModelResponse[Any]]]
                               ) -> ModelResponse[Any]:
        before = await self.policy.emit("before_llm_call", **_llm_fields(
            request, self.policy.listens("before_llm_call")))
        request, answer = self._before_model(before, request)
        response = answer if answer is not None else await handler(request)
        if not self.policy.listens("after_llm_call"):
            return response
        after = await self.policy.emit("after_llm_call", **_reply_fields(request, response,
                                                                         answer is not None))
        return self._after_model(after, response)

    def _before_model(self, outcome: Outcome, request: ModelRequest[Any]
                      ) -> tuple[ModelRequest[Any], ModelResponse[Any] | None]:
        self.policy.apply(outcome, can=("block", "respond", "modify", "context"))
        if outcome.blocked:
            raise PolicyStopped(outcome.name, outcome.reason, _hook(outcome))
        unsupported = set(outcome.changes) - {"tools"}
        if unsupported:
            raise DecisionNotSupported(FRAMEWORK, outcome.name, "modify", _hook(outcome),
                                       f"LangChain's adapter changes only 'tools' here, not "
                                       f"{sorted(unsupported)}")
        if "tools" in outcome.changes:
            kept = set(outcome.changes["tools"])
            request = request.override(tools=[t for t in request.tools
                                              if _tool_name(t) in kept])
        if outcome.contexts:
            request = request.override(messages=[*request.messages,
                                                 HumanMessage(outcome.context_text())])
        if outcome.verdict.value == "respond":
            return request, ModelResponse(result=[_ai_message(outcome.value)])
        return request, None

    def _after_model(self, outcome: Outcome, response: ModelResponse[Any]) -> ModelResponse[Any]:
        self.policy.apply(outcome, can=("block", "modify"))
        if outcome.blocked:
            raise PolicyStopped(outcome.name, outcome.reason, _hook(outcome))
        if not outcome.changes:
            return response
        old = _ai(response)
        text = outcome.changes.get("text", as_text(old.content) if old else "")
        calls = outcome.changes.get("tool_calls", [
            {"id": c.get("id"), "name": c["name"], "args": c["args"]}
            for c in (old.tool_calls if old else [])])
        new = _ai_message({"text": text, "tool_calls": calls})
        rest = [m for m in response.result if m is not old]
        return ModelResponse(result=[new, *rest], structured_response=response.structured_response)

    # -- tool calls -----------------------------------------------------------------
    def wrap_tool_call(self, request: ToolCallRequest,
                       handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]]
                       ) -> ToolMessage | Command[Any]:
        name, args, call_id = _call(request)
        gate = self.policy.before_tool_sync(name, args, call_id)
        if gate.action in ("block", "respond"):
            return _answered(gate, self.policy.after_gated_sync(gate, name, call_id), name,
                             call_id)
        early = self._asked(gate, name, call_id)
        if early is not None:
            return early
        result = handler(_with_args(request, args, gate.args))
        rewritten: dict[int, ToolMessage] = {}
        for message in self._results(result, name):
            content = _content(message)
            after = self.policy.after_tool_sync(name, gate.args, content, call_id,
                                                status=message.status)
            rewritten[id(message)] = _with_result(message, content, after.result,
                                                  gate.context, after.context)
        final: ToolMessage | Command[Any] = _rewrite(result, rewritten)
        return final

    async def awrap_tool_call(self, request: ToolCallRequest,
                              handler: Callable[[ToolCallRequest],
                                                Awaitable[ToolMessage | Command[Any]]]
                              ) -> ToolMessage | Command[Any]:
        name, args, call_id = _call(request)
        gate = await self.policy.before_tool(name, args, call_id)
        if gate.action in ("block", "respond"):
            return _answered(gate, await self.policy.after_gated(gate, name, call_id), name,
                             call_id)
        early = self._asked(gate, name, call_id)
        if early is not None:
            return early
        result = await handler(_with_args(request, args, gate.args))
        rewritten: dict[int, ToolMessage] = {}
        for message in self._results(result, name):
            content = _content(message)
            after = await self.policy.after_tool(name, gate.args, content, call_id,
                                                 status=message.status)
            rewritten[id(message)] = _with_result(message, content, after.result,
                                                  gate.context, after.context)
        final: ToolMessage | Command[Any] = _rewrite(result, rewritten)
        return final

    def _results(self, result: Any, name: str) -> list[ToolMessage]:
        """The ToolMessages a tool's result gives the model: the message itself, or
        those in a ``Command``'s ``update["messages"]`` (LangGraph's state-updating
        tools), each judged by after_tool_call. A shape holding none that can be
        read is refused while a hook listens there, never passed through unjudged."""
        found = _tool_messages(result)
        if not found:
            # Both events judge the result: either hook may block or rewrite it.
            if self.policy.listens("after_tool_call") or \
                    self.policy.listens("tool_result_persist"):
                raise DecisionNotSupported(
                    FRAMEWORK, "after_tool_call", "judge the result", None,
                    f"the tool {name!r} returned {type(result).__name__} with no ToolMessage "
                    "the adapter can read; return a ToolMessage, or a Command whose "
                    "update['messages'] holds one (docs/adapters.md, LangChain)")
            return []
        return found

    def _asked(self, gate: ToolGate, name: str, call_id: str) -> ToolMessage | None:
        """The refusal to answer with instead of running the tool, if a person refused."""
        if gate.action == "ask":
            from langgraph.types import interrupt

            # LangGraph's human-in-the-loop step: the graph pauses here (its
            # checkpointer keeps the state); Command(resume=...) answers.
            answer = interrupt({"type": "interlock_approval", "tool_name": name,
                                "tool_call_id": call_id, "args": gate.args,
                                "reason": gate.reason, "hook": _hook(gate.outcome)})
            approved, why = _approval(answer)
            if not approved:
                refusal = {"error": "tool call refused", "tool_name": name,
                           "reason": why or "a person refused the call"}
                return _message(refusal, name, call_id, "error")
        return None


def _answered(gate: ToolGate, after: AfterTool, name: str, call_id: str) -> ToolMessage:
    """The ToolMessage of a call before_tool_call blocked or answered."""
    context = "\n".join(c for c in (gate.context, after.context) if c)
    return _message(with_context(after.result, context), name, call_id,
                    "error" if gate.action == "block" else "success")


def _input_update(state: AgentState[Any], given: RunInput) -> dict[str, Any] | None:
    """The state update that applies user_input's decision: the prompt rewritten in
    place (same message id, which LangGraph's reducer replaces), context after it."""
    update: list[AnyMessage] = []
    last = _last_human(state)
    if given.text != _prompt(state):
        if last is None or last.id is None:
            # Nothing to rewrite in place: the model would read the original prompt.
            raise DecisionNotSupported(
                FRAMEWORK, "user_input", "modify", None,
                "the state holds no prompt message with an id to replace; give the "
                "agent its input as a user message (docs/adapters.md, LangChain)")
        update.append(HumanMessage(given.text, id=last.id))
    if given.context:
        update.append(HumanMessage(given.context))
    return {"messages": update} if update else None


def _with_args(request: ToolCallRequest, old: dict[str, Any],
               new: dict[str, Any]) -> ToolCallRequest:
    """The request to run: the same one unless a hook changed the arguments."""
    if new is old:
        return request
    return request.override(tool_call={**request.tool_call, "args": new})


def _tool_messages(result: Any) -> list[ToolMessage] | None:
    """The ToolMessages in a tool's result (a ToolMessage, a Command, or a list of
    them), their dict forms made messages in place; None for a shape the adapter
    cannot read."""
    from langgraph.types import Command

    if isinstance(result, ToolMessage):
        return [result]
    if isinstance(result, list):
        found: list[ToolMessage] = []
        for item in result:
            inner = _tool_messages(item)
            if inner is None:
                return None
            found += inner
        return found
    if not isinstance(result, Command):
        return None
    update = result.update
    if update is None:
        return []
    if isinstance(update, dict):
        messages = update.get("messages", [])
    elif isinstance(update, list):
        messages = update
    else:
        return None
    if not isinstance(messages, list):
        return None
    try:
        converted = convert_to_messages(messages)
    except (ValueError, TypeError, NotImplementedError):
        return None
    # The converted list replaces the original, so the rewrite below reaches the graph.
    if isinstance(update, dict):
        update["messages"] = converted
    else:
        update[:] = converted
    return [m for m in converted if isinstance(m, ToolMessage)]


def _rewrite(result: Any, rewritten: dict[int, ToolMessage]) -> Any:
    """``result`` with each judged ToolMessage replaced by its rewrite."""
    from langgraph.types import Command

    if not rewritten:
        return result
    if isinstance(result, ToolMessage):
        return rewritten.get(id(result), result)
    if isinstance(result, list):
        result[:] = [_rewrite(item, rewritten) for item in result]
        return result
    if isinstance(result, Command):
        update = result.update
        if isinstance(update, dict):
            update["messages"] = [rewritten.get(id(m), m) for m in update["messages"]]
        elif isinstance(update, list):
            update[:] = [rewritten.get(id(m), m) for m in update]
    return result


def _approval(answer: Any) -> tuple[bool, str | None]:
    if isinstance(answer, bool):
        return answer, None
    if isinstance(answer, dict) and isinstance(answer.get("approved"), bool):
        reason = answer.get("reason")
        return answer["approved"], reason if isinstance(reason, str) else None
    # An answer in no shape we know is not a yes.
    return False, f"unrecognised approval answer {answer!r}; resume with True or " \
                  "{'approved': bool, 'reason': str}"


def _hook(outcome: Outcome) -> str | None:
    return outcome.hook.qualified_name if outcome.hook is not None else None


def _call(request: ToolCallRequest) -> tuple[str, dict[str, Any], str]:
    call = request.tool_call
    return call["name"], dict(call.get("args") or {}), call.get("id") or ""


def _content(message: ToolMessage) -> Any:
    content = message.content
    if isinstance(content, str) and content[:1] in ("{", "["):
        try:
            return json.loads(content)
        except ValueError:
            return content
    return content


def _message(value: Any, name: str, call_id: str, status: str) -> ToolMessage:
    return ToolMessage(content=as_text(value), name=name, tool_call_id=call_id,
                       status="error" if status == "error" else "success")


def _with_result(message: ToolMessage, content: Any, result: Any,
                 *contexts: str) -> ToolMessage:
    context = "\n".join(c for c in contexts if c)
    if result is content and not context:
        return message
    return _message(with_context(result, context), message.name or "", message.tool_call_id,
                    message.status)


def _last_human(state: AgentState[Any]) -> HumanMessage | None:
    for message in reversed(state.get("messages", [])):
        if isinstance(message, HumanMessage):
            return message
    return None


def _prompt(state: AgentState[Any]) -> str:
    last = _last_human(state)
    return as_text(last.content) if last is not None else ""


def _last_text(state: AgentState[Any]) -> str | None:
    for message in reversed(state.get("messages", [])):
        if isinstance(message, AIMessage):
            return as_text(message.content)
    return None


def _tool_name(tool: Any) -> str:
    return tool.get("name", "") if isinstance(tool, dict) else str(getattr(tool, "name", ""))


def _openai_shape(messages: list[AnyMessage]) -> list[dict[str, Any]]:
    roles = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
    out: list[dict[str, Any]] = []
    for m in messages:
        entry: dict[str, Any] = {"role": roles.get(m.type, m.type), "content": as_text(m.content)}
        if isinstance(m, AIMessage) and m.tool_calls:
            entry["tool_calls"] = [{"id": c.get("id"), "type": "function", "function": {
                "name": c["name"], "arguments": json.dumps(c["args"])}} for c in m.tool_calls]
        if isinstance(m, ToolMessage):
            entry["tool_call_id"] = m.tool_call_id
        out.append(entry)
    return out


def _llm_fields(request: ModelRequest[Any], full: bool = True) -> dict[str, Any]:
    messages = _openai_shape(request.messages) if full else []
    if full and request.system_message is not None:
        messages.insert(0, {"role": "system", "content": as_text(request.system_message.content)})
    model = getattr(request.model, "model_name", None) or getattr(request.model, "model", None)
    return {"model": str(model or type(request.model).__name__), "messages": messages,
            "tools": [_tool_name(t) for t in request.tools]}


def _ai(response: ModelResponse[Any]) -> AIMessage | None:
    return next((m for m in response.result if isinstance(m, AIMessage)), None)


def _reply_fields(request: ModelRequest[Any], response: ModelResponse[Any],
                  synthetic: bool) -> dict[str, Any]:
    ai = _ai(response)
    calls = [{"id": c.get("id"), "name": c["name"], "args": c["args"]}
             for c in (ai.tool_calls if ai else [])]
    return {"model": _llm_fields(request, False)["model"],
            "text": as_text(ai.content) if ai else "",
            "tool_calls": calls, "synthetic": synthetic,
            "finish_reason": "tool_calls" if calls else "stop"}


def _ai_message(value: Any) -> AIMessage:
    """A respond (or modified) reply: text, or ``{"text", "tool_calls"}``."""
    if isinstance(value, str):
        return AIMessage(content=value)
    data = value if isinstance(value, dict) else {}
    calls = [{"id": c.get("id") or f"interlock-{i}", "name": c["name"],
              "args": c.get("args") or {}, "type": "tool_call"}
             for i, c in enumerate(data.get("tool_calls") or [])]
    return AIMessage(content=data.get("text") or "", tool_calls=calls)
