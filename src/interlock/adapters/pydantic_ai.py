"""The project's Interlock policy on a pydantic-ai agent, as one capability.

    from interlock.adapters.pydantic_ai import Interlock
    agent = Agent(model, tools=[...], capabilities=[Interlock()])

What maps where (docs/adapters.md, pydantic-ai):

- the run: ``session_start`` (the Policy's first run), ``user_input`` on the
  prompt (block/stop end the run; modify and context apply to the first model
  request; respond is the first request's reply, without the model),
  ``before_agent_start`` (block or stop end it before it starts),
  ``agent_end`` when it ends; ``close()`` (or ``async with``): ``session_end``;
- each model request: ``model_select`` (modify of ``model`` swaps the
  request's model), ``before_llm_call`` (block/stop end the run; respond
  answers without the model; context is added to the conversation; modify
  may drop offered tools), ``llm_error`` (retry asks pydantic-ai for another
  request) and ``after_llm_call`` (modify of text and tool calls; block/stop
  end the run);
- each tool execution: ``before_tool_call`` (block returns the structured
  reason as the tool result; modify changes the args; respond returns a
  result without running the tool; ask raises pydantic-ai's
  ``ApprovalRequired``, so the run ends with ``DeferredToolRequests`` and a
  person answers with ``DeferredToolResults``; a denial fires
  ``permission_denied`` and is a blocked call), ``tool_error`` (retry runs
  the call again; a rewrite or context gives the model the error) and
  ``after_tool_call`` (modify or block of the result; context beside it); args
  another capability changed after the judgment are judged again where the tool
  runs (``_pydantic_ai_toolset``);
- the final output: ``before_stop`` (block sends its reason to the model as a
  retry, which counts against the agent's output retries).

Any other decision raises :class:`~interlock.adapters.DecisionNotSupported`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import (
    ApprovalRequired,
    CallDeferred,
    DeferredToolRequests,
    DeferredToolResults,
    ModelRetry,
    RunContext,
    ToolDenied,
)
from pydantic_ai.capabilities import AbstractCapability, HandleDeferredToolCalls
from pydantic_ai.capabilities.abstract import (
    CapabilityOrdering,
    WrapModelRequestHandler,
    WrapRunHandler,
    WrapToolExecuteHandler,
)
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import Model, ModelRequestContext, ModelRequestParameters
from pydantic_ai.output import OutputContext
from pydantic_ai.run import AgentRunResult
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset

from interlock.adapters._core import (
    DecisionNotSupported,
    Policy,
    PolicyStopped,
    RunInput,
    SessionEnd,
    as_text,
    hook_name,
    joined,
    with_context,
)
from interlock.adapters._lifecycle import (
    chosen_model,
    error_text,
    keep_working,
    llm_retry,
    not_offered,
    status_code,
    tool_failure,
)
from interlock.adapters._pydantic_ai_messages import (
    _apply_input,
    _messages,
    _open_calls,
    _outputs,
    _response,
)
from interlock.adapters._pydantic_ai_toolset import Judged, JudgedToolset, Key

__all__ = ["FIRES", "REALTIME_FIRES", "Interlock"]

FRAMEWORK = "pydantic-ai"

FIRES = frozenset({"session_start", "user_input", "before_agent_start", "agent_end",
                   "session_end", "model_select", "before_llm_call", "llm_error",
                   "after_llm_call", "before_stop", "before_tool_call", "tool_error",
                   "after_tool_call", "tool_result_persist", "permission_denied"})
"""The catalog events this capability fires (docs/adapters.md, Events each adapter fires)."""
REALTIME_FIRES = FIRES - {"user_input", "model_select", "before_llm_call", "llm_error",
                          "after_llm_call", "before_stop", "permission_denied"}
"""What it fires in a realtime session (``agent.realtime(...).session()``), which calls
no model-request or output hook, and whose user turns are no run prompt."""


@dataclass(init=False)
class Interlock(SessionEnd, AbstractCapability[Any]):
    """The project's policy as a pydantic-ai capability.

    ``project``: the project root (default: found from the working folder up).
    ``policy``: a :class:`~interlock.adapters.Policy` to share (for example one
    built on your own engine). ``models``: models a model_select hook may switch a
    request to, by the name it gives; any other name goes to pydantic-ai's
    ``infer_model`` (``"provider:model"``).
    """

    policy: Policy = field(repr=False)
    models: dict[str, Model] = field(repr=False)
    _inputs: dict[str, tuple[str, RunInput]] = field(repr=False)
    _answered: set[str] = field(repr=False)
    _failures: dict[str, int] = field(repr=False)
    _deferred: set[tuple[str | None, str]] = field(repr=False)
    _offered: dict[str | None, set[str]] = field(repr=False)
    _judged: set[tuple[str | None, str]] = field(repr=False)
    _open: set[tuple[str | None, str]] = field(repr=False)
    _running: dict[Key, Judged] = field(repr=False)

    def __init__(self, *, project: str | os.PathLike[str] | None = None,
                 policy: Policy | None = None,
                 models: Mapping[str, Model] | None = None) -> None:
        self.policy = policy if policy is not None else Policy(FRAMEWORK, project=project)
        self.models = dict(models or {})
        self._inputs = {}
        """A run's changed input (by run id), until its first model request."""
        self._answered = set()
        """Runs whose input a hook answered: their output is the hook's, not a stop."""
        self._failures = {}
        """A run's model calls that failed in a row (by run id), for llm_error's attempt."""
        self._deferred = set()
        """Calls (by run id and call id) of function tools that deferred themselves
        after before_tool_call."""
        self._offered = {}
        """The tools a run's last model request offered, by run id, while a
        before_llm_call hook narrowed them: a call to any other is blocked."""
        self._judged = set()
        """External tools' and denied calls (by run id and call id) that after_tool_call
        saw."""
        self._open = set()
        """Calls the run's history left unanswered (by run id and call id), until a tool
        hook runs them: a DeferredToolResults answer reaches the model without one."""
        self._running = {}
        """Calls before_tool_call let run (by run id and call id), with the args it
        judged, while they run."""

    def get_ordering(self) -> CapabilityOrdering:
        """Outside pydantic-ai's ``HandleDeferredToolCalls``, wherever it is listed:
        before_tool_call judges an external call before a handler runs it."""
        return CapabilityOrdering(wraps=[HandleDeferredToolCalls])

    def get_wrapper_toolset(self, toolset: AbstractToolset[Any]) -> AbstractToolset[Any]:
        """The agent's function tools run only with args the policy judged, whatever
        capability changed them after wrap_tool_execute (docs/adapters.md, pydantic-ai,
        Order). A durable capability's toolsets (innermost) are inside this one."""
        return JudgedToolset(toolset, policy=self.policy, running=self._running)

    # -- the run ------------------------------------------------------------------
    async def wrap_run(self, ctx: RunContext[Any], *,
                       handler: WrapRunHandler) -> AgentRunResult[Any]:
        prompt = ctx.prompt if isinstance(ctx.prompt, str) else as_text(ctx.prompt or "")
        # The input is changed where the first model request reads it, found by the
        # run's id; a prompt that is not text, or a run with no id, cannot be.
        rewritable = isinstance(ctx.prompt, str) and ctx.run_id is not None
        given = await self.policy.start_run(
            prompt, fires=REALTIME_FIRES if getattr(ctx, "realtime", False) else FIRES,
            can=("block", "modify", "context", "respond") if rewritable else ("block",))
        if given.respond is None:
            outcome = await self.policy.emit("before_agent_start", prompt=given.text)
            self.policy.apply(outcome, can=("block",))
            if outcome.blocked:
                raise PolicyStopped(outcome.name, outcome.reason, hook_name(outcome))
        self._open |= {(ctx.run_id, c) for c in _open_calls(ctx.messages)}
        if ctx.run_id is not None and (given.text != prompt or given.context
                                       or given.respond is not None):
            self._inputs[ctx.run_id] = (prompt, given)
        status, final = "error", None
        try:
            result = await handler()
            status, final = "completed", as_text(result.output)
            return result
        except PolicyStopped:
            status = "stopped"
            raise
        finally:
            self._judged = {k for k in self._judged if k[0] != ctx.run_id}
            self._deferred = {k for k in self._deferred if k[0] != ctx.run_id}
            self._open = {k for k in self._open if k[0] != ctx.run_id}
            self._offered.pop(ctx.run_id, None)
            if ctx.run_id is not None:
                self._inputs.pop(ctx.run_id, None)
                self._answered.discard(ctx.run_id)
                self._failures.pop(ctx.run_id, None)
            self.policy.notify("agent_end", status=status, final_text=final)

    # -- model requests -------------------------------------------------------------
    async def wrap_model_request(self, ctx: RunContext[Any], *,
                                 request_context: ModelRequestContext,
                                 handler: WrapModelRequestHandler) -> ModelResponse:
        if self._inputs and ctx.run_id in self._inputs:
            original, given = self._inputs.pop(ctx.run_id)
            _apply_input(request_context, original, given)
            if given.respond is not None:
                return self._answer(ctx, request_context, given.respond)
        await self._unhooked_returns(ctx, request_context)
        if self.policy.listens("model_select"):
            await self._select(request_context)
        model = request_context.model.model_name
        params = request_context.model_request_parameters
        if params.native_tools:
            _refuse_native(params.native_tools)
        # With no hook on before_llm_call the engine's answer is "no opinion": skip it
        # (and no hook took a tool off this request's offer).
        if self.policy.listens("before_llm_call"):
            answer = await self._before_model(ctx, request_context, model)
            if answer is not None:
                return await self._after_model(answer, model, True)
        elif self._offered:
            self._offered.pop(ctx.run_id, None)
        response = await handler(request_context)
        if self._failures and ctx.run_id is not None:
            self._failures.pop(ctx.run_id, None)
        return await self._after_model(response, model, False, streamed=(
            params if request_context.streaming else None))

    async def _before_model(self, ctx: RunContext[Any], request_context: ModelRequestContext,
                            model: str) -> ModelResponse | None:
        """before_llm_call, applied to the request; a respond's reply, else None."""
        params = request_context.model_request_parameters
        offered = [t.name for t in (*params.function_tools, *params.output_tools)]
        before = await self.policy.emit("before_llm_call", model=model,
                                        messages=_messages(request_context.messages),
                                        tools=offered)
        self.policy.apply(before, can=("block", "respond", "modify", "context"))
        if before.blocked:
            raise PolicyStopped(before.name, before.reason, hook_name(before))
        unsupported = set(before.changes) - {"tools"}
        if unsupported:
            raise DecisionNotSupported(FRAMEWORK, before.name, "modify", hook_name(before),
                                       f"pydantic-ai's adapter changes only 'tools' here, "
                                       f"not {sorted(unsupported)}")
        if "tools" in before.changes:
            kept = set(before.changes["tools"]) & set(offered)
            params.function_tools = [t for t in params.function_tools if t.name in kept]
            params.output_tools = [t for t in params.output_tools if t.name in kept]
            self._offered[ctx.run_id] = kept
        elif self._offered:
            self._offered.pop(ctx.run_id, None)
        if before.contexts:
            request_context.messages = [*request_context.messages, ModelRequest(
                parts=[UserPromptPart(before.context_text())])]
        if before.verdict.value == "respond":
            return _response(before.value, model)
        return None

    async def _unhooked_returns(self, ctx: RunContext[Any],
                               request_context: ModelRequestContext) -> None:
        """after_tool_call (and tool_result_persist), before the model reads it, on
        what pydantic-ai gives the model without a tool hook: what the application
        gave back for an external tool's call (``DeferredToolResults(calls=...)``),
        and a person's denial of a call that asked (``approvals={id: False}`` or
        ``ToolDenied``), a blocked call that fires permission_denied first."""
        messages = request_context.messages
        if not messages or not isinstance(messages[-1], ModelRequest):
            return
        external: set[str] | None = None
        for part in messages[-1].parts:
            if not isinstance(part, ToolReturnPart):
                continue
            denied = part.outcome == "denied"
            if not denied and (ctx.run_id, part.tool_call_id) not in self._open:
                if external is None:
                    external = {t.name for t in
                                request_context.model_request_parameters.function_tools
                                if t.kind == "external"}
                if part.tool_name not in external:
                    continue
            key = (ctx.run_id, part.tool_call_id)
            if key in self._judged:
                continue
            self._judged.add(key)
            args = next((p.args_as_dict() for m in messages if isinstance(m, ModelResponse)
                         for p in m.parts if isinstance(p, ToolCallPart)
                         and p.tool_call_id == part.tool_call_id), {})
            if denied:  # the reason: a message the person gave, not pydantic-ai's default
                after = await self.policy.refused(
                    part.tool_name, args, part.content, part.tool_call_id,
                    reason=None if part.content == _DENIED else as_text(part.content))
            else:
                after = await self.policy.after_tool(part.tool_name, args, part.content,
                                                     part.tool_call_id)
            if after.result is not part.content or after.context:
                part.content = with_context(after.result, after.context)

    def _answer(self, ctx: RunContext[Any], request_context: ModelRequestContext,
                answer: str) -> ModelResponse:
        """A respond on user_input: the first request's reply, with no model call."""
        if not request_context.model_request_parameters.allow_text_output:
            raise DecisionNotSupported(
                FRAMEWORK, "user_input", "respond", None,
                "this agent's output type takes no text, so a hook's text answer cannot "
                "end its run; give the agent an output type that takes str "
                "(docs/adapters.md, pydantic-ai)")
        if ctx.run_id is not None:
            self._answered.add(ctx.run_id)
        return ModelResponse(parts=[TextPart(answer)],
                             model_name=request_context.model.model_name)

    async def _select(self, request_context: ModelRequestContext) -> None:
        """model_select's modify of ``model``: the request goes to that model."""
        current = request_context.model.model_name
        model = chosen_model(self.policy, await self.policy.emit("model_select", model=current),
                             current, self.models, _infer_model,
                             cannot="pydantic-ai cannot make a model", option="Interlock",
                             section="pydantic-ai")
        if model is not None:
            request_context.model = model

    async def on_model_request_error(self, ctx: RunContext[Any], *,
                                     request_context: ModelRequestContext,
                                     error: Exception) -> ModelResponse:
        """llm_error on a model call that raised: a retry is pydantic-ai's
        ``ModelRetry`` (another request, back through before_llm_call, counted
        against the agent's output retries); else the error stands."""
        if not self.policy.listens("llm_error"):
            raise error
        if ctx.run_id is None:
            attempt = ctx.retry + 1
        else:
            attempt = self._failures[ctx.run_id] = self._failures.get(ctx.run_id, 0) + 1
        outcome = await self.policy.emit(
            "llm_error", model=request_context.model.model_name, error=error_text(error),
            status_code=status_code(error), attempt=attempt)
        if not llm_retry(self.policy, outcome, attempt):
            raise error
        raise ModelRetry(f"The model call failed ({error_text(error)}); try again.") from error

    async def before_output_process(self, ctx: RunContext[Any], *,
                                    output_context: OutputContext, output: Any) -> Any:
        """before_stop on the run's final output: a block is pydantic-ai's
        ``ModelRetry``, whose message (the reason) the model reads. An output
        function is a tool call first (:meth:`_gate_output`)."""
        if output_context.has_function:
            await self._gate_output(ctx, output_context, output)
        if (ctx.partial_output or isinstance(output, DeferredToolRequests)
                or ctx.run_id in self._answered or not self.policy.listens("before_stop")):
            return output
        prompt = ctx.prompt if isinstance(ctx.prompt, str) else None
        outcome = await self.policy.emit("before_stop", last_message=as_text(output),
                                         prompt=prompt)
        instruction = keep_working(self.policy, outcome)
        if instruction is not None:
            raise ModelRetry(instruction)
        return output

    async def _gate_output(self, ctx: RunContext[Any], output_context: OutputContext,
                           output: Any) -> None:
        """An output function runs with the model's arguments, and pydantic-ai runs
        no tool hook on it: before_tool_call and the rules judge it here, each time
        it would run (a streamed run's partial outputs too). A block (or a tool
        taken off the offer) is a ``ModelRetry`` the model reads; the function
        does not run."""
        call = output_context.tool_call
        name = call.tool_name if call else output_context.function_name or "output_function"
        call_id = call.tool_call_id if call else ""
        args = (call.args_as_dict() if call else output if isinstance(output, dict)
                else {"output": output})
        offered = self._offered.get(ctx.run_id) if self._offered else None
        if call is not None and offered is not None and name not in offered:
            raise ModelRetry(as_text(not_offered(name, offered)))
        gate = await self.policy.before_tool(name, args, call_id, can_ask=False)
        if gate.action == "block":
            await self.policy.after_gated(gate, name, call_id)
            raise ModelRetry(as_text(gate.value))
        if gate.action != "run" or gate.args != args or gate.context:
            decision = gate.action if gate.action != "run" else (
                "modify" if gate.args != args else "context")
            raise DecisionNotSupported(
                FRAMEWORK, "before_tool_call", decision, hook_name(gate.outcome),
                f"the output function {name!r} runs with the model's arguments and its "
                "result is the run's output; block it, or change the arguments in the "
                "function (docs/adapters.md, pydantic-ai)")

    async def _after_model(self, response: ModelResponse, model: str, synthetic: bool, *,
                           streamed: ModelRequestParameters | None = None) -> ModelResponse:
        """after_llm_call, applied to the response. ``streamed``: a streamed request's
        parameters (its output tools), whose consumer has read the response."""
        if not self.policy.listens("after_llm_call"):
            return response
        calls = [{"id": p.tool_call_id, "name": p.tool_name, "args": p.args_as_dict()}
                 for p in response.parts if isinstance(p, ToolCallPart)]
        after = await self.policy.emit("after_llm_call", model=model, text=response.text or "",
                                       tool_calls=calls, finish_reason=response.finish_reason,
                                       synthetic=synthetic)
        self.policy.apply(after, can=("block", "modify"))
        if after.blocked:
            raise PolicyStopped(after.name, after.reason, hook_name(after))
        if after.changes:
            text = after.changes.get("text", response.text or "")
            new_calls = after.changes.get("tool_calls", calls)
            if streamed is not None and (text != (response.text or "") or _outputs(
                    calls, streamed) != _outputs(new_calls, streamed)):
                # The consumer of a stream has read the model's text and output as they
                # came, and run_stream's output is the stream's, not this response's.
                raise DecisionNotSupported(
                    FRAMEWORK, after.name, "modify", hook_name(after),
                    "a streamed run cannot take back the text or output it has streamed; "
                    "run the agent without streaming (run, run_sync) to rewrite them "
                    "(docs/adapters.md, pydantic-ai)")
            parts: list[Any] = [TextPart(text)] if text else []
            parts += [ToolCallPart(c["name"], c.get("args") or {}, tool_call_id=c.get("id") or "")
                      for c in new_calls]
            response = ModelResponse(parts=parts, model_name=response.model_name,
                                     usage=response.usage, finish_reason=response.finish_reason)
        return response

    # -- tools ----------------------------------------------------------------------
    async def handle_deferred_tool_calls(self, ctx: RunContext[Any], *,
                                         requests: DeferredToolRequests
                                         ) -> DeferredToolResults | None:
        """An externally executed tool's call (an ``ExternalToolset``'s, say), before
        the run hands it out in ``DeferredToolRequests``: before_tool_call judges it,
        and a block or respond is the result the model reads. A function tool that
        deferred itself passed before_tool_call in wrap_tool_execute already."""
        answered: dict[str, Any] = {}
        offered = self._offered.get(ctx.run_id) if self._offered else None
        for call in requests.calls:
            if (ctx.run_id, call.tool_call_id) in self._deferred:
                self._deferred.discard((ctx.run_id, call.tool_call_id))
                continue
            args = call.args_as_dict()
            if offered is not None and call.tool_name not in offered:
                after = await self.policy.after_tool(
                    call.tool_name, args, not_offered(call.tool_name, offered),
                    call.tool_call_id, status="blocked")
                answered[call.tool_call_id] = with_context(after.result, after.context)
                self._judged.add((ctx.run_id, call.tool_call_id))
                continue
            gate = await self.policy.before_tool(call.tool_name, args, call.tool_call_id,
                                                 can_ask=False)
            if gate.action in ("block", "respond"):
                answered[call.tool_call_id] = await self.policy.answered(
                    gate, call.tool_name, call.tool_call_id)
                self._judged.add((ctx.run_id, call.tool_call_id))
            elif gate.args != args or gate.context:
                raise DecisionNotSupported(
                    FRAMEWORK, "before_tool_call", "modify" if gate.args != args else "context",
                    hook_name(gate.outcome), "an external tool's call is handed out as the model "
                    "made it; block it, or change the arguments where the tool runs "
                    "(docs/adapters.md, pydantic-ai)")
        return DeferredToolResults(calls=answered) if answered else None

    async def wrap_tool_execute(self, ctx: RunContext[Any], *, call: ToolCallPart,
                                tool_def: ToolDefinition, args: dict[str, Any],
                                handler: WrapToolExecuteHandler) -> Any:
        policy, name, call_id = self.policy, call.tool_name, call.tool_call_id
        if self._open:  # it runs: after_tool_call sees its result here
            self._open.discard((ctx.run_id, call_id))
        offered = self._offered.get(ctx.run_id) if self._offered else None
        if offered is not None and name not in offered:
            # A before_llm_call hook took it off the offer (docs/adapters.md, pydantic-ai).
            after = await policy.after_tool(name, args, not_offered(name, offered), call_id,
                                            status="blocked")
            return with_context(after.result, after.context)
        attempt = 1
        while True:
            gate = await policy.before_tool(name, args, call_id)
            if gate.action in ("block", "respond"):
                return await policy.answered(gate, name, call_id)
            if gate.action == "ask" and not ctx.tool_call_approved:
                # pydantic-ai's human-in-the-loop step: the run ends with this call in
                # DeferredToolRequests.approvals; a person's DeferredToolResults resumes it.
                raise ApprovalRequired(metadata={"reason": gate.reason or "",
                                                 "hook": hook_name(gate.outcome) or ""})
            status, key = "ok", (ctx.run_id, call_id)
            judged = self._running[key] = Judged(name, gate.args)
            try:
                result = await handler(gate.args)
            except CallDeferred:
                # Judged: handle_deferred_tool_calls skips it; its result, once given,
                # passes after_tool_call in _unhooked_returns.
                self._deferred.add((ctx.run_id, call_id))
                self._open.add((ctx.run_id, call_id))
                raise
            except Exception as exc:
                if isinstance(exc, _NOT_FAILURES) or not policy.listens("tool_error"):
                    raise
                outcome = await policy.emit("tool_error", tool_call_id=call_id, tool_name=name,
                                            args=(judged.gate or gate).args,
                                            error=error_text(exc),
                                            attempt=attempt)
                failure = tool_failure(policy, outcome, attempt)
                if failure.retry:
                    attempt += 1  # back through before_tool_call (docs/adapters.md)
                    continue
                if not failure.answered:
                    raise
                # The model reads the error as the tool's result, as in the reference agent.
                status, result = "error", with_context({"error": failure.error},
                                                       failure.context)
            finally:
                self._running.pop(key, None)
            ran, before = gate, [gate.context]
            if judged.gate is not None:  # other args reached the tool, judged there
                ran, before = judged.gate, [gate.context, judged.gate.context]
                if ran.action != "run":
                    return await policy.answered(ran, name, call_id, gate.context)
            after = await policy.after_tool(name, ran.args, result, call_id, status=status)
            return with_context(after.result, joined(*before, after.context))


_DENIED = ToolDenied().message
"""What the model reads of a denial that gives no message (``approvals={id: False}``)."""


def _not_failures() -> tuple[type[Exception], ...]:
    """What a tool raises that is pydantic-ai's control flow (a retry, a deferral,
    an approval, a skip) or a policy's stop, not the tool's failure."""
    from pydantic_ai.exceptions import (
        CallDeferred,
        SkipToolExecution,
        ToolFailed,
        ToolFailedError,
        ToolRetryError,
    )

    from interlock.engine.errors import InterlockError

    return (ModelRetry, ToolFailed, CallDeferred, ApprovalRequired, SkipToolExecution,
            ToolRetryError, ToolFailedError, InterlockError)


_NOT_FAILURES = _not_failures()


def _refuse_native(tools: Any) -> None:
    """Provider-run tools: the provider runs their calls, which no hook or rule
    ever sees, so an agent offering one does not run (docs/adapters.md, pydantic-ai)."""
    from interlock.engine.errors import ConfigError

    names = ", ".join(sorted({type(t).__name__ for t in tools}))
    raise ConfigError(f"the agent offers native (provider-run) tools ({names}), whose calls "
                      "the policy cannot gate", field="native_tools",
                      fix="remove the NativeTool capabilities and native tools, or give the "
                          "agent function tools that do the same")


def _infer_model(name: str) -> Model:
    from pydantic_ai.models import infer_model

    return infer_model(name)
