"""The project's Interlock policy on a LangChain 1.x agent, as one middleware.

    from interlock.adapters.langchain import InterlockMiddleware
    agent = create_agent(model, tools=[...], middleware=[InterlockMiddleware()])

What maps where (docs/adapters.md, LangChain):

- ``before_agent``/``after_agent``: ``session_start`` (the Policy's first
  run), ``user_input`` on the last ``HumanMessage`` (block/stop end the run;
  modify rewrites it; context follows it; respond ends the run with its
  answer as an ``AIMessage``, through ``jump_to="end"``), ``before_agent_start``
  (block or stop end the run before it starts) and ``agent_end``;
  ``close()`` (or ``with``): ``session_end``;
- ``wrap_model_call``: ``model_select`` (modify of ``model`` swaps the call's
  chat model), ``before_llm_call`` (block/stop end the run; respond answers
  without the model; context is added as a message; modify may drop offered
  tools), ``llm_error`` (retry calls the model again), ``after_llm_call``
  (modify of text and tool calls) and, on a reply with no tool call,
  ``before_stop`` (block sends its reason to the model, which goes on);
- ``wrap_tool_call``: ``before_tool_call`` (block returns the structured
  reason as the ``ToolMessage``; modify changes the args; respond returns a
  result without running the tool; ask pauses the graph with LangGraph's
  ``interrupt``, so a checkpointer is needed, and the run resumes with
  ``Command(resume=True)`` or ``{"approved": False, "reason": ...}``, a
  refusal that fires ``permission_denied`` and is a blocked call),
  ``tool_error`` (retry runs the call again; a rewrite or context gives the
  model the error) and ``after_tool_call`` (modify or block of the result;
  context beside it).

Both the sync (``invoke``) and async (``ainvoke``) paths apply the policy.
Any other decision raises :class:`~interlock.adapters.DecisionNotSupported`.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, TypeGuard

from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
    hook_config,
)
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.errors import GraphBubbleUp

from interlock.adapters._core import (
    DENIED,
    AfterTool,
    DecisionNotSupported,
    Policy,
    PolicyStopped,
    RunInput,
    SessionEnd,
    ToolGate,
    as_text,
    hook_name,
    joined,
    with_context,
)
from interlock.adapters._langchain_messages import (
    _ai,
    _ai_message,
    _approval,
    _call,
    _content,
    _error_fields,
    _final,
    _last_human,
    _last_text,
    _llm_error_fields,
    _llm_fields,
    _mark_offered,
    _message,
    _nothing_besides,
    _offered,
    _prompt,
    _refuse_provider_tools,
    _reply_fields,
    _rewrite,
    _select_fields,
    _stop_fields,
    _streamed,
    _tool_messages,
    _tool_name,
    _unstreamed,
    _with_args,
    _with_result,
)
from interlock.adapters._lifecycle import (
    ToolFailure,
    chosen_model,
    error_text,
    keep_working,
    llm_retry,
    not_offered,
    tool_failure,
)
from interlock.engine.errors import InterlockError

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.runtime import Runtime
    from langgraph.types import Command

    from interlock.engine.outcome import Outcome

__all__ = ["FIRES", "InterlockMiddleware"]

FRAMEWORK = "langchain"

FIRES = frozenset({"session_start", "user_input", "before_agent_start", "agent_end",
                   "session_end", "model_select", "before_llm_call", "llm_error",
                   "after_llm_call", "before_stop", "before_tool_call", "tool_error",
                   "after_tool_call", "tool_result_persist", "permission_denied"})
"""The catalog events this middleware fires (docs/adapters.md, Events each adapter fires)."""
_INPUT_CAN = ("block", "modify", "context", "respond")


class InterlockMiddleware(SessionEnd, AgentMiddleware[AgentState[Any], Any, Any]):
    """The project's policy as LangChain agent middleware.

    ``project``: the project root (default: found from the working folder up).
    ``policy``: a :class:`~interlock.adapters.Policy` to share. ``models``: chat
    models a model_select hook may switch a call to, by the name it gives; any
    other name is made with LangChain's ``init_chat_model`` (``"provider:model"``).
    """

    def __init__(self, *, project: str | os.PathLike[str] | None = None,
                 policy: Policy | None = None,
                 models: Mapping[str, BaseChatModel] | None = None) -> None:
        super().__init__()
        self.policy = policy if policy is not None else Policy(FRAMEWORK, project=project)
        self.models = dict(models or {})

    # -- the run ------------------------------------------------------------------
    @hook_config(can_jump_to=["end"])
    def before_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        given = self.policy.start_run_sync(_prompt(state), fires=FIRES, can=_INPUT_CAN)
        if given.respond is not None:
            return _answer_update(state, given)
        self._started(self.policy.emit_sync("before_agent_start", prompt=given.text))
        return _input_update(state, given)

    @hook_config(can_jump_to=["end"])
    async def abefore_agent(self, state: AgentState[Any],
                            runtime: Runtime[Any]) -> dict[str, Any] | None:
        given = await self.policy.start_run(_prompt(state), fires=FIRES, can=_INPUT_CAN)
        if given.respond is not None:
            return _answer_update(state, given)
        self._started(await self.policy.emit("before_agent_start", prompt=given.text))
        return _input_update(state, given)

    def _started(self, outcome: Outcome) -> None:
        self.policy.apply(outcome, can=("block",))
        if outcome.blocked:
            raise PolicyStopped(outcome.name, outcome.reason, hook_name(outcome))

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        # LangChain runs after_agent only for a run that ends without raising.
        self.policy.notify("agent_end", status="completed", final_text=_last_text(state))
        return None

    async def aafter_agent(self, state: AgentState[Any],
                           runtime: Runtime[Any]) -> dict[str, Any] | None:
        return self.after_agent(state, runtime)

    # -- model calls ----------------------------------------------------------------
    def wrap_model_call(self, request: ModelRequest[Any],
                        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
                        ) -> ModelResponse[Any]:
        try:
            policy = self.policy
            _refuse_provider_tools(request.tools)
            if policy.listens("model_select"):
                request = self._select(policy.emit_sync("model_select", **_select_fields(request)),
                                       request)
            # Replies a before_stop block sent back, each with its instruction: the model
            # reads them on the next call, and the state keeps them (docs/adapters.md).
            said: list[Any] = []
            attempt = 1
            while True:
                asked = request.override(messages=[*request.messages, *said]) if said else request
                answer = None  # with no hook on before_llm_call, "no opinion"
                narrowed: Mapping[str, Any] = {}  # and no hook took a tool off the offer
                if policy.listens("before_llm_call"):
                    before = policy.emit_sync("before_llm_call", **_llm_fields(asked))
                    asked, answer = self._before_model(before, asked)
                    narrowed = before.changes
                if answer is None:
                    try:
                        response = handler(asked)
                    except Exception as exc:
                        if not _model_failure(exc) or not policy.listens("llm_error"):
                            raise
                        outcome = policy.emit_sync("llm_error", **_llm_error_fields(asked, exc,
                                                                                    attempt))
                        if not llm_retry(policy, outcome, attempt):
                            raise
                        attempt += 1
                        continue
                else:
                    response = answer
                if policy.listens("after_llm_call"):
                    after = policy.emit_sync("after_llm_call", **_reply_fields(
                        asked, response, answer is not None))
                    response = self._after_model(after, response, answer is not None)
                instruction = None
                if _final(response) and policy.listens("before_stop"):
                    instruction = keep_working(policy, policy.emit_sync(
                        "before_stop", **_stop_fields(asked, response)))
                if instruction is None:
                    return _with_said(said, _mark_offered(narrowed, asked, response))
                said += [*response.result, HumanMessage(instruction)]
                attempt = 1
        except (PolicyStopped, DecisionNotSupported) as e:
            raise _through_langgraph(e)  # noqa: B904 - it keeps e as the cause

    # LangChain runs each middleware's awrap_* hooks as LangSmith spans, and sets up
    # and closes the span of a coroutine function on a worker thread: two thread-pool
    # round trips a call, traced or not, ~250 µs a tool call in bench/adapters.py
    # (LangChain row). These two are plain functions returning the coroutine, so the
    # span takes its inline path; a trace shows it ending as the coroutine starts
    # (docs/adapters.md, Overhead).
    def awrap_model_call(self, request: ModelRequest[Any],
                         handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]
                         ) -> Coroutine[Any, Any, ModelResponse[Any]]:
        return self._awrap_model_call(request, handler)

    def awrap_tool_call(self, request: ToolCallRequest,
                        handler: Callable[[ToolCallRequest],
                                          Awaitable[ToolMessage | Command[Any]]]
                        ) -> Coroutine[Any, Any, ToolMessage | Command[Any]]:
        return self._awrap_tool_call(request, handler)

    async def _awrap_model_call(self, request: ModelRequest[Any],
                                handler: Callable[[ModelRequest[Any]],
                                                  Awaitable[ModelResponse[Any]]]
                                ) -> ModelResponse[Any]:
        try:
            policy = self.policy
            _refuse_provider_tools(request.tools)
            if policy.listens("model_select"):
                request = self._select(await policy.emit("model_select", **_select_fields(request)),
                                       request)
            said: list[Any] = []
            attempt = 1
            while True:
                asked = request.override(messages=[*request.messages, *said]) if said else request
                answer = None  # with no hook on before_llm_call, "no opinion"
                narrowed: Mapping[str, Any] = {}  # and no hook took a tool off the offer
                if policy.listens("before_llm_call"):
                    before = await policy.emit("before_llm_call", **_llm_fields(asked))
                    asked, answer = self._before_model(before, asked)
                    narrowed = before.changes
                if answer is None:
                    try:
                        response = await handler(asked)
                    except Exception as exc:
                        if not _model_failure(exc) or not policy.listens("llm_error"):
                            raise
                        outcome = await policy.emit("llm_error", **_llm_error_fields(asked, exc,
                                                                                     attempt))
                        if not llm_retry(policy, outcome, attempt):
                            raise
                        attempt += 1
                        continue
                else:
                    response = answer
                if policy.listens("after_llm_call"):
                    after = await policy.emit("after_llm_call", **_reply_fields(
                        asked, response, answer is not None))
                    response = self._after_model(after, response, answer is not None)
                instruction = None
                if _final(response) and policy.listens("before_stop"):
                    instruction = keep_working(policy, await policy.emit(
                        "before_stop", **_stop_fields(asked, response)))
                if instruction is None:
                    return _with_said(said, _mark_offered(narrowed, asked, response))
                said += [*response.result, HumanMessage(instruction)]
                attempt = 1
        except (PolicyStopped, DecisionNotSupported) as e:
            raise _through_langgraph(e)  # noqa: B904 - it keeps e as the cause

    def _select(self, outcome: Outcome, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """model_select's modify of ``model``: the call goes to that chat model."""
        model = chosen_model(self.policy, outcome, _select_fields(request)["model"],
                             self.models, _init_chat_model,
                             cannot="LangChain cannot make a chat model",
                             option="InterlockMiddleware", section="LangChain")
        return request if model is None else request.override(model=model)

    def _before_model(self, outcome: Outcome, request: ModelRequest[Any]
                      ) -> tuple[ModelRequest[Any], ModelResponse[Any] | None]:
        self.policy.apply(outcome, can=("block", "respond", "modify", "context"))
        if outcome.blocked:
            raise PolicyStopped(outcome.name, outcome.reason, hook_name(outcome))
        unsupported = set(outcome.changes) - {"tools"}
        if unsupported:
            raise DecisionNotSupported(FRAMEWORK, outcome.name, "modify", hook_name(outcome),
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

    def _after_model(self, outcome: Outcome, response: ModelResponse[Any],
                     synthetic: bool) -> ModelResponse[Any]:
        self.policy.apply(outcome, can=("block", "modify"))
        if outcome.blocked:
            raise PolicyStopped(outcome.name, outcome.reason, hook_name(outcome))
        if not outcome.changes:
            return response
        old = _ai(response)
        before = as_text(old.content) if old else ""
        text = outcome.changes.get("text", before)
        if text != before and not synthetic and _streamed():
            # The stream's consumer has read the model's reply as it came.
            raise DecisionNotSupported(
                FRAMEWORK, outcome.name, "modify", hook_name(outcome),
                "a streamed run cannot take back text it has streamed; run the agent with "
                "invoke/ainvoke, or stream without stream_mode=\"messages\", to rewrite "
                "its text (docs/adapters.md, LangChain)")
        was = [{"id": c.get("id"), "name": c["name"], "args": c["args"]}
               for c in (old.tool_calls if old else [])]
        calls = outcome.changes.get("tool_calls", was)
        if response.structured_response is not None and (text != before or calls != was):
            # LangChain parsed the structured output from the model's reply before
            # after_llm_call: the rewrite would not reach it.
            raise DecisionNotSupported(
                FRAMEWORK, outcome.name, "modify", hook_name(outcome),
                "this reply is the run's structured output, which LangChain parsed before "
                "after_llm_call; block the reply instead, or check the output in a "
                "before_stop hook (docs/adapters.md, LangChain)")
        new = _ai_message({"text": text, "tool_calls": calls})
        rest = [m for m in response.result if m is not old]
        return ModelResponse(result=[new, *rest], structured_response=response.structured_response)

    # -- tool calls -----------------------------------------------------------------
    def wrap_tool_call(self, request: ToolCallRequest,
                       handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]]
                       ) -> ToolMessage | Command[Any]:
        try:
            policy = self.policy
            name, args, call_id = _call(request)
            offered = _offered(request, call_id)
            if offered is not None and name not in offered:  # docs/adapters.md, LangChain
                after = policy.after_tool_sync(name, args, not_offered(name, offered), call_id,
                                               status="blocked")
                return _message(with_context(after.result, after.context), name, call_id,
                                "error")
            attempt = 1
            while True:
                gate = policy.before_tool_sync(name, args, call_id)
                if gate.action in ("block", "respond"):
                    return _answered(gate, policy.after_gated_sync(gate, name, call_id), name,
                                     call_id)
                refused = self._asked(gate, name, call_id)
                if refused is not None:  # permission_denied, then a blocked call
                    return _answered(refused, policy.refused_sync(
                        name, refused.args, refused.value, call_id, reason=refused.reason),
                        name, call_id)
                try:
                    result = handler(_with_args(request, args, gate.args))
                except Exception as exc:
                    if not _tool_failure(exc) or not policy.listens("tool_error"):
                        raise
                    failure = tool_failure(policy, policy.emit_sync("tool_error", **_error_fields(
                        name, gate.args, call_id, error_text(exc), attempt)), attempt)
                    if failure.retry:
                        attempt += 1
                        continue
                    if not failure.answered:
                        raise
                    result = _failed(failure, name, call_id)
                else:
                    if _errored(result) and policy.listens("tool_error"):
                        failure = tool_failure(policy, policy.emit_sync(
                            "tool_error", **_error_fields(name, gate.args, call_id,
                                                          as_text(result.content), attempt)),
                            attempt)
                        if failure.retry:
                            attempt += 1
                            continue
                        result = _failed(failure, name, call_id) if failure.answered else result
                rewritten: dict[int, ToolMessage] = {}
                for message in self._results(result, name, request.state):
                    content = _content(message)
                    after = policy.after_tool_sync(name, gate.args, content, call_id,
                                                   status=message.status)
                    if after.result is not content:
                        _unstreamed()
                    rewritten[id(message)] = _with_result(message, content, after.result,
                                                          gate.context, after.context)
                final: ToolMessage | Command[Any] = _rewrite(result, rewritten)
                return final
        except (PolicyStopped, DecisionNotSupported) as e:
            raise _through_langgraph(e)  # noqa: B904 - it keeps e as the cause

    async def _awrap_tool_call(self, request: ToolCallRequest,
                               handler: Callable[[ToolCallRequest],
                                                 Awaitable[ToolMessage | Command[Any]]]
                               ) -> ToolMessage | Command[Any]:
        try:
            policy = self.policy
            name, args, call_id = _call(request)
            offered = _offered(request, call_id)
            if offered is not None and name not in offered:  # docs/adapters.md, LangChain
                after = await policy.after_tool(name, args, not_offered(name, offered),
                                                call_id, status="blocked")
                return _message(with_context(after.result, after.context), name, call_id,
                                "error")
            attempt = 1
            while True:
                gate = await policy.before_tool(name, args, call_id)
                if gate.action in ("block", "respond"):
                    return _answered(gate, await policy.after_gated(gate, name, call_id), name,
                                     call_id)
                refused = self._asked(gate, name, call_id)
                if refused is not None:  # permission_denied, then a blocked call
                    return _answered(refused, await policy.refused(
                        name, refused.args, refused.value, call_id, reason=refused.reason),
                        name, call_id)
                try:
                    result = await handler(_with_args(request, args, gate.args))
                except Exception as exc:
                    if not _tool_failure(exc) or not policy.listens("tool_error"):
                        raise
                    failure = tool_failure(policy, await policy.emit("tool_error", **_error_fields(
                        name, gate.args, call_id, error_text(exc), attempt)), attempt)
                    if failure.retry:
                        attempt += 1
                        continue
                    if not failure.answered:
                        raise
                    result = _failed(failure, name, call_id)
                else:
                    if _errored(result) and policy.listens("tool_error"):
                        failure = tool_failure(policy, await policy.emit(
                            "tool_error", **_error_fields(name, gate.args, call_id,
                                                          as_text(result.content), attempt)),
                            attempt)
                        if failure.retry:
                            attempt += 1
                            continue
                        result = _failed(failure, name, call_id) if failure.answered else result
                rewritten: dict[int, ToolMessage] = {}
                for message in self._results(result, name, request.state):
                    content = _content(message)
                    after = await policy.after_tool(name, gate.args, content, call_id,
                                                    status=message.status)
                    if after.result is not content:
                        _unstreamed()
                    rewritten[id(message)] = _with_result(message, content, after.result,
                                                          gate.context, after.context)
                final: ToolMessage | Command[Any] = _rewrite(result, rewritten)
                return final
        except (PolicyStopped, DecisionNotSupported) as e:
            raise _through_langgraph(e)  # noqa: B904 - it keeps e as the cause

    def _results(self, result: Any, name: str, state: Any) -> list[ToolMessage]:
        """The ToolMessages a tool's result gives the model: the message itself, or
        those in a ``Command``'s ``update["messages"]`` (LangGraph's state-updating
        tools), each judged by after_tool_call. A shape holding none that can be read,
        or a message beside them, is refused while a hook listens there (either
        event may block or rewrite the result), never passed through unjudged."""
        found, listens = _tool_messages(result), self.policy.listens
        judged = listens("after_tool_call") or listens("tool_result_persist")
        if not found:
            if judged:
                raise DecisionNotSupported(
                    FRAMEWORK, "after_tool_call", "judge the result", None,
                    f"the tool {name!r} returned {type(result).__name__} with no ToolMessage "
                    "the adapter can read; return a ToolMessage, or a Command whose "
                    "update['messages'] holds one (docs/adapters.md, LangChain)")
            return []
        if judged:
            _nothing_besides(result, state, name)
        return found

    def _asked(self, gate: ToolGate, name: str, call_id: str) -> ToolGate | None:
        """The call as a block, if a person refused it: its refusal is the result,
        and permission_denied then after_tool_call see it, as in the reference agent."""
        if gate.action == "ask":
            from langgraph.types import interrupt

            # LangGraph's human-in-the-loop step: the graph pauses here (its
            # checkpointer keeps the state); Command(resume=...) answers.
            answer = interrupt({"type": "interlock_approval", "tool_name": name,
                                "tool_call_id": call_id, "args": gate.args,
                                "reason": gate.reason, "hook": hook_name(gate.outcome)})
            approved, why = _approval(answer)
            if not approved:
                reason = why or DENIED
                refusal = {"error": "tool call refused", "tool_name": name, "reason": reason}
                return ToolGate("block", gate.args, refusal, reason, gate.context, gate.outcome)
        return None


class _Stopped(PolicyStopped, GraphBubbleUp):
    """PolicyStopped as LangGraph's control flow, which its error-handling and retry
    middleware (``ModelRetryMiddleware``, ``ModelFallbackMiddleware``,
    ``ToolErrorMiddleware``, ...), ``ToolNode`` and node retry policies re-raise as it
    is, rather than retry it or hand it to the model as an error."""


class _NotSupported(DecisionNotSupported, GraphBubbleUp):
    """DecisionNotSupported, passed through LangGraph the same way."""


def _through_langgraph(error: PolicyStopped | DecisionNotSupported) -> InterlockError:
    """``error`` as LangGraph's control flow, so a stop or a decision the adapter
    cannot apply ends the run even when another middleware wraps this one
    (docs/adapters.md, LangChain). (Raised from an ``except`` clause, not a context
    manager: one wraps every model and tool call.)"""
    if isinstance(error, (_Stopped, _NotSupported)):
        return error
    if isinstance(error, PolicyStopped):
        converted: InterlockError = _Stopped(error.event, error.reason, error.hook)
    else:
        converted = _NotSupported(error.framework, error.event, error.decision, error.hook,
                                  error.fix)
    converted.__cause__ = error
    return converted


def _answered(gate: ToolGate, after: AfterTool, name: str, call_id: str) -> ToolMessage:
    """The ToolMessage of a call before_tool_call blocked or answered."""
    return _message(with_context(after.result, joined(gate.context, after.context)), name,
                    call_id, "error" if gate.action == "block" else "success")


def _answer_update(state: AgentState[Any], given: RunInput) -> dict[str, Any]:
    """The state update of a respond on user_input: the hook's answer as the run's
    reply, and the run ends there (no model call)."""
    update = _input_update(state, given) or {"messages": []}
    update["messages"].append(AIMessage(given.respond or ""))
    update["jump_to"] = "end"
    return update


def _failed(failure: ToolFailure, name: str, call_id: str) -> ToolMessage:
    """The error ToolMessage a tool_error hook's rewrite or context gives the model."""
    return _message(with_context(failure.error, failure.context), name, call_id, "error")


def _errored(result: Any) -> TypeGuard[ToolMessage]:
    return isinstance(result, ToolMessage) and result.status == "error"


def _tool_failure(error: Exception) -> bool:
    """Whether ``error`` is the tool's failure, not LangGraph's control flow (an
    interrupt) nor a policy's stop from a run inside the tool."""
    return not isinstance(error, (GraphBubbleUp, InterlockError))


_model_failure = _tool_failure


def _with_said(said: list[Any], response: ModelResponse[Any]) -> ModelResponse[Any]:
    """The reply, after any replies before_stop sent back (the state keeps them all)."""
    if not said:
        return response
    return ModelResponse(result=[*said, *response.result],
                         structured_response=response.structured_response)


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


def _init_chat_model(name: str) -> Any:
    from langchain.chat_models import init_chat_model

    return init_chat_model(name)
