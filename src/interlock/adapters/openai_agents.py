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
  resumes after ``state.approve(...)``, or ``reject``: ``permission_denied``)
  and ``after_tool_call`` (modify or block of the output, a rejection's at the
  next model call; context beside it); when the tool raises,
  ``tool_error`` (retry runs it again, back through ``before_tool_call``;
  modify of ``error`` is what the model reads; context beside it);
- ``on_agent_start`` of the first agent: ``session_start`` (the Policy's
  first run), ``user_input`` on the run's input and ``before_agent_start``
  (block/stop end the run; a rewrite of the input and context reach the
  model through :meth:`Interlock.model_input`, the run's
  ``call_model_input_filter``, and end the run before the model without it);
- ``on_agent_end`` (a final output, about to end the run): ``subagent_stop``
  when the agent was handed off to, then ``before_stop``, then
  ``agent_end``. Block there means "keep working", which the SDK cannot do
  once an agent gave its final output, so a block (or context) ends the run
  with :class:`~interlock.adapters.DecisionNotSupported`, and stop with
  :class:`~interlock.adapters.PolicyStopped`; a run the policy ends by
  raising fires ``agent_end`` (``stopped``) itself;
- ``on_handoff``: ``subagent_stop`` of a handed-off agent handing on, then
  ``subagent_start`` (block/stop end the run); a ``Handoff`` given through
  :meth:`Interlock.handoffs` asks them before its own callback runs;
- ``on_llm_start``/``on_llm_end``: ``before_llm_call``/``after_llm_call``
  (block/stop end the run; the SDK's hooks cannot change a model call, so
  modify, respond or context there end it too, with
  :class:`~interlock.adapters.DecisionNotSupported`);
- :meth:`Interlock.close` (or ``async with``): ``session_end``.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from agents import Agent, FunctionTool, Handoff, RunContextWrapper, RunHooks, Tool
from agents.items import ModelResponse
from agents.run_config import CallModelData, ModelInputData
from agents.tool import (
    maybe_invoke_function_tool_failure_error_function,
    resolve_function_tool_failure_error_function,
    set_function_tool_failure_error_function,
)
from agents.tool_context import ToolContext

from interlock.adapters._core import (
    DecisionNotSupported,
    Policy,
    PolicyStopped,
    SessionEnd,
    ToolGate,
    as_text,
    joined,
    with_context,
)
from interlock.adapters._lifecycle import TOOL_RETRY_CAP
from interlock.adapters._openai_agents_governed import MARK, check_governed, governed_handoff
from interlock.adapters._openai_agents_refused import Asked, NotSupported, Stopped
from interlock.engine.decisions import Verdict
from interlock.engine.errors import InterlockError
from interlock.engine.redact import redact

if TYPE_CHECKING:
    from agents.run_context import AgentHookContext

    from interlock.engine.outcome import Outcome

__all__ = ["FIRES", "Interlock"]

FRAMEWORK = "openai-agents"

FIRES = frozenset({"session_start", "session_end", "user_input", "before_agent_start",
                   "before_stop", "agent_end", "subagent_start", "subagent_stop",
                   "before_llm_call", "after_llm_call", "before_tool_call", "after_tool_call",
                   "tool_error", "tool_result_persist", "permission_denied"})
"""The catalog events these hooks and tools fire (docs/adapters.md, Events each adapter
fires)."""
_LLM_FIX = ("the OpenAI Agents SDK's run hooks observe model calls; decide on tool calls "
            "instead, or use a RunConfig call_model_input_filter of your own")
_FILTER_FIX = ("run with run_config=RunConfig(call_model_input_filter=interlock.model_input), "
               "which gives the model the changed input (docs/adapters.md, OpenAI Agents SDK)")
_STOP_FIX = ("the OpenAI Agents SDK cannot send a run back to its model once an agent gave "
             "its final output; judge the reply on after_llm_call (block or stop end the "
             "run) or answer stop here (docs/adapters.md, OpenAI Agents SDK)")
_ERROR_FIX = ("this tool raises out of the run (failure_error_function=None), so the "
              "model reads no error; give the tool a failure_error_function, or answer "
              "retry or nothing (docs/adapters.md, OpenAI Agents SDK)")
_NESTED_FIX = ("the model input holds the run's input inside another item (a handoff "
               "with nest_handoff_history or an input_filter), where model_input cannot "
               "change it; hand off without reshaping the history (docs/adapters.md, OpenAI "
               "Agents SDK)")


class Interlock(SessionEnd, RunHooks[Any]):
    """The project's policy for OpenAI Agents SDK runs: run hooks, and a tool wrapper.

    ``project``: the project root (default: found from the working folder up).
    ``policy``: a :class:`~interlock.adapters.Policy` to share.
    """

    def __init__(self, *, project: str | os.PathLike[str] | None = None,
                 policy: Policy | None = None) -> None:
        self.policy = policy if policy is not None else Policy(FRAMEWORK, project=project)
        self._runs: dict[int, _Run] = {}
        """Each run whose start was judged, by its usage record (one per run, shared by
        its agents and tool calls), so runs at the same time keep apart; dropped with
        the record. A run that ended by raising never reaches on_agent_end."""
        self._gates: dict[tuple[int, str], ToolGate] = {}
        self._calls: dict[tuple[int, str], _Call] = {}
        """Tool calls running now that tool_error may judge (or that failed), by run
        and id."""
        self._asked = Asked()
        """Calls at the SDK's approval step, until they run or a model call reads a no."""
        self._filtered: ContextVar[_Input | object | None] = ContextVar(
            "interlock_model_input", default=None)
        """The input model_input applied for the model call about to go out in this
        task (the filter and on_llm_start run in the run's own task)."""

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

    def handoffs(self, handoffs: Iterable[Agent[Any] | Handoff[Any, Any]]
                 ) -> list[Agent[Any] | Handoff[Any, Any]]:
        """``handoffs`` with each ``Handoff`` asking subagent_start before its own
        callback (``on_handoff``) runs; an agent is kept as it is (its handoff
        runs no code of yours)."""
        return [h if isinstance(h, Agent) else governed_handoff(h, self._handing_off)
                for h in handoffs]

    def _wrap(self, tool: FunctionTool) -> FunctionTool:
        # The copy's invoker is bound to the copy (FunctionTool.__copy__), so its
        # failure handling asks the copy's formatter: tool_error's, which hands
        # on to the tool's own.
        governed = copy.copy(tool)
        own_approval = tool.needs_approval

        async def failed(ctx: RunContextWrapper[Any], error: Exception) -> str | None:
            return await self._failed(tool, ctx, error)

        set_function_tool_failure_error_function(governed, failed)
        invoke = governed.on_invoke_tool

        async def needs_approval(ctx: RunContextWrapper[Any], args: dict[str, Any],
                                 call_id: str) -> bool:
            with self._through_the_sdk(ctx):
                gate = await self.policy.before_tool(tool.name, args, call_id)
            self._gates[(id(ctx.usage), call_id)] = gate
            asks = gate.action == "ask" or (await own_approval(ctx, args, call_id)
                                            if callable(own_approval) else bool(own_approval))
            if asks:
                self._asked.add(call_id, tool.name, gate.args)
            return asks

        async def on_invoke(ctx: ToolContext[Any], raw: str) -> Any:
            with self._through_the_sdk(ctx):
                return await self._invoke(tool, invoke, ctx, raw)

        # The SDK reads the wrapper's annotations on every call, to choose the
        # context it passes: resolved ones, or it compiles the strings each time.
        on_invoke.__annotations__ = {"ctx": ToolContext, "raw": str, "return": Any}
        governed.needs_approval = needs_approval
        governed.on_invoke_tool = on_invoke
        setattr(governed, MARK, tool)
        return governed

    async def _invoke(self, tool: FunctionTool,
                      invoke: Callable[[ToolContext[Any], str], Awaitable[Any]],
                      ctx: ToolContext[Any], raw: str) -> Any:
        name, call_id = tool.name, ctx.tool_call_id
        key = (id(ctx.usage), call_id)
        args = _args(raw)
        gate = self._gates.pop(key, None)
        self._asked.ran(call_id)
        if gate is None:  # a resumed run: the approval check ran before it was saved
            gate = await self.policy.before_tool(name, args, call_id)
        if self.policy.listens("tool_error"):  # nothing kept per call otherwise
            self._calls[key] = _Call()
        try:
            while True:
                if gate.action in ("block", "respond"):
                    gated = await self.policy.after_gated(gate, name, call_id)
                    context = joined(*_contexts(self._calls.get(key)), gate.context,
                                      gated.context)
                    return as_text(with_context(gated.result, context))
                if gate.action == "ask" and ctx.is_tool_approved(name, call_id) is not True:
                    # The SDK runs a tool that needs approval only once it is approved;
                    # should it ever not have asked, the call is refused, not run.
                    refusal = {"error": "tool call needs approval", "tool_name": name,
                               "reason": gate.reason or "a hook asks for a person's approval"}
                    return as_text(refusal)
                if key in self._calls:
                    self._calls[key].args = gate.args
                try:
                    result = await self._attempt(tool, invoke, ctx,
                                                 raw if gate.args == args
                                                 else json.dumps(gate.args))
                except _Retry:  # back through before_tool_call, as in the reference agent
                    self._calls[key].attempt += 1
                    gate = await self.policy.before_tool(name, args, call_id)
                    continue
                break
        finally:
            call = self._calls.pop(key, None)
        after = await self.policy.after_tool(name, gate.args, result, call_id,
                                             status="error" if call and call.failed else "ok")
        final = with_context(after.result,
                             joined(*_contexts(call), gate.context, after.context))
        return final if final is result else as_text(final)

    async def _attempt(self, tool: FunctionTool,
                       invoke: Callable[[ToolContext[Any], str], Awaitable[Any]],
                       ctx: ToolContext[Any], text: str) -> Any:
        try:
            return await invoke(ctx, text)
        except (_Retry, InterlockError):
            raise
        except Exception as error:
            call = self._calls.get((id(ctx.usage), ctx.tool_call_id))
            if call is not None and call.judged is error:
                raise  # tool_error saw it already: the tool is set to raise
            # A tool built without the SDK's failure handling raised: judged here.
            return await self._failed(tool, ctx, error)

    async def _failed(self, tool: FunctionTool, ctx: RunContextWrapper[Any],
                      error: Exception) -> str | None:
        """The tool raised: tool_error decides, then what the model reads is the
        hook's error, else the tool's own failure message (the SDK's formatter)."""
        if isinstance(error, InterlockError):
            raise error  # a stop decided within (an agent used as a tool)
        call_id = getattr(ctx, "tool_call_id", "")
        key = (id(ctx.usage), call_id)
        call = self._calls.get(key)
        cancelled = isinstance(getattr(error, "cancelled_error", None), asyncio.CancelledError)
        if call is None and not cancelled and self.policy.listens("tool_error"):
            # A hook came (a reload) while the call ran: it is asked all the same.
            call = self._calls[key] = _Call()
            call.args = _args(getattr(ctx, "tool_arguments", "") or "")
        if call is None or cancelled:
            # No hook listened as the call began, or the SDK reports a call cancelled
            # after it ended: the SDK's own handling (a tool set to raise raises).
            if not cancelled and resolve_function_tool_failure_error_function(tool, ctx) is None:
                raise error
            message = await maybe_invoke_function_tool_failure_error_function(
                function_tool=tool, context=ctx, error=error)
            if message is not None and not cancelled:
                self._calls[key] = _Call(failed=True)  # for after_tool_call's status
            return message
        outcome = await self.policy.emit(
            "tool_error", tool_call_id=call_id, tool_name=tool.name, args=call.args,
            error=redact(f"{type(error).__name__}: {error}"), attempt=call.attempt)
        self.policy.apply(outcome, can=("retry", "modify", "context"), fix=_ERROR_FIX)
        if outcome.verdict is Verdict.RETRY and call.attempt <= TOOL_RETRY_CAP:
            call.contexts.append(outcome.context_text())
            raise _Retry
        call.failed = True
        if resolve_function_tool_failure_error_function(tool, ctx) is None:
            # The tool is set to raise: the run ends with its error, and the model
            # reads no rewrite or context.
            self.policy.apply(outcome, can=("retry",), fix=_ERROR_FIX)
            call.judged = error
            raise error
        call.contexts.append(outcome.context_text())
        if "error" in outcome.changes:
            return as_text(outcome.changes["error"])
        return await maybe_invoke_function_tool_failure_error_function(
            function_tool=tool, context=ctx, error=error)

    # -- the run --------------------------------------------------------------------
    def _run_of(self, context: RunContextWrapper[Any]) -> _Run | None:
        return self._runs.get(id(context.usage))

    async def on_agent_start(self, context: AgentHookContext[Any], agent: Agent[Any]) -> None:
        check_governed(agent, self)
        if (current := self._run_of(context)) is not None:  # a handoff within the run
            current.agent = agent
            return
        key = id(context.usage)
        run = self._runs[key] = _Run(agent)
        weakref.finalize(context.usage, self._runs.pop, key, None)
        # The hooks observe: a change to the input is applied by model_input.
        text = _input_text(context.turn_input)
        given = await self.policy.start_run(text, fires=FIRES, can=("modify", "context"))
        run.prompt = given.text
        if given.text != text or given.context:
            if sum(_is_user(i, text) for i in context.turn_input) != 1:
                raise NotSupported(FRAMEWORK, "user_input", "modify or context", None,
                                   "give the run its input as one text message, where "
                                   "model_input can change it")
            run.input = _Input(text, given.text, given.context)
        outcome = await self.policy.emit("before_agent_start", prompt=given.text,
                                         system_prompt=_instructions(agent))
        self._end_on(run, outcome, can=("block",))
        run.begun = True

    async def on_agent_end(self, context: AgentHookContext[Any], agent: Agent[Any],
                           output: Any) -> None:
        # Called with the run's final output, before the SDK returns it.
        run = self._run_of(context) or _Run(agent)
        text = as_text(output)
        if agent is not run.first:
            await self._subagent_stop(run, agent, text)
        outcome = await self.policy.emit("before_stop", last_message=text, prompt=run.prompt)
        self._end_on(run, outcome, can=(), fix=_STOP_FIX)
        run.begun = False
        self.policy.notify("agent_end", status="completed", final_text=text)

    async def _subagent_stop(self, run: _Run, agent: Agent[Any], text: str | None) -> None:
        outcome = await self.policy.emit("subagent_stop", child_session_id=agent.name,
                                         result=text)
        self._end_on(run, outcome, can=(), fix=_STOP_FIX)

    async def on_handoff(self, context: RunContextWrapper[Any], from_agent: Agent[Any],
                         to_agent: Agent[Any]) -> None:
        run = self._run_of(context) or _Run(from_agent)
        if run.handed is to_agent:  # its interlock.handoffs wrapper asked
            run.handed = None
            return
        if from_agent is not run.first:
            await self._subagent_stop(run, from_agent, None)  # a handed-off agent hands on
        outcome = await self.policy.emit("subagent_start", task=f"handoff to {to_agent.name}",
                                         child_session_id=to_agent.name)
        self._end_on(run, outcome, can=("block",))

    async def _handing_off(self, context: RunContextWrapper[Any], to: Agent[Any]) -> None:
        """on_handoff, asked before a governed handoff's callback runs (a nested run
        with no run hooks has no run here, and no agent to tell subagent_stop of)."""
        run = self._run_of(context)
        with self._through_the_sdk(context):
            await self.on_handoff(context, run.agent if run else to, to)
        if run is not None:
            run.handed = to

    async def model_input(self, data: CallModelData[Any]) -> ModelInputData:
        """``RunConfig(call_model_input_filter=interlock.model_input)``: every model
        call of the run gets its input as session_start and user_input left it
        (the rewritten text, their context after it).

        The filter is not told which run calls it: the run is the one whose input
        the model input holds, and on_llm_start checks it was this call's own."""
        items = data.model_data.input
        if self._asked:  # calls a person rejected: docs/adapters.md, OpenAI Agents SDK
            items = data.model_data.input = await self._asked.refused(self.policy, items)
        runs = [r for r in self._runs.values() if r.input]
        found = _pending(items, [r.input for r in runs if r.input]) if runs else None
        self._filtered.set(_RAN if found is None else found[0])
        if found is None:
            texts = list(_strings(items)) if runs else []
            for run in runs:
                if run.input and any(run.input.text in text for text in texts):
                    # The input is there in another shape (a nested handoff history, a
                    # handoff input filter's): the model would read it unchanged.
                    error = NotSupported(FRAMEWORK, "user_input", "modify or context", None,
                                         _NESTED_FIX)
                    self._ended(run, error)
                    raise error
            return data.model_data  # no change, or a server-kept conversation sent it
        pending, at = found
        # New items: the list is a copy, its items are the run's history.
        changed: list[Any] = [*items[:at], {**items[at], "content": pending.new}]
        if pending.context:
            changed.append({"role": "user", "content": pending.context})
        return ModelInputData(input=[*changed, *items[at + 1:]],
                              instructions=data.model_data.instructions)

    async def on_llm_start(self, context: RunContextWrapper[Any], agent: Agent[Any],
                           system_prompt: str | None, input_items: list[Any]) -> None:
        run = self._run_of(context)
        applied = self._filtered.get()
        self._filtered.set(None)
        if self._asked:  # no model_input ran to find them
            with self._through_the_sdk(context):
                await self._asked.refused(self.policy, input_items, applied=False)
        if run is not None and run.input is not None:
            own = run.input
            if applied is own or (isinstance(applied, _Input) and applied.same(own)):
                own.sent = True
            elif applied is not _RAN or not own.sent:
                # No filter, or one that gave this call no input of this run's: a
                # server-kept conversation sends it once, with the first call.
                error = NotSupported(FRAMEWORK, "user_input", "modify or context", None,
                                     _FILTER_FIX if applied is None else
                                     "the model input no longer holds the run's input "
                                     "as one text message; apply this filter last")
                self._ended(run, error)
                raise error
        messages: list[dict[str, Any]] = []
        if self.policy.listens("before_llm_call"):
            messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
            messages += [_item(i) for i in input_items]
        outcome = await self.policy.emit("before_llm_call", model=str(agent.model or ""),
                                         messages=messages,
                                         tools=[t.name for t in agent.tools])
        self._end_on(run, outcome, can=("block",), fix=_LLM_FIX)

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
        self._end_on(self._run_of(context), outcome, can=("block",), fix=_LLM_FIX)

    def _end_on(self, run: _Run | None, outcome: Outcome, *, can: tuple[str, ...],
                fix: str = "") -> None:
        try:
            self.policy.apply(outcome, can=can, fix=fix)
            if outcome.blocked:
                raise PolicyStopped(outcome.name, outcome.reason,
                                    outcome.hook.qualified_name if outcome.hook else None)
        except InterlockError as e:
            self._ended(run, e)
            raise

    def _ended(self, run: _Run | None, error: InterlockError) -> None:
        """agent_end for a run the policy ends by raising out of it (the SDK calls
        no hook then), once, if its agent had started."""
        if run is not None and run.begun:
            run.begun = False
            self.policy.notify("agent_end", status="stopped"
                               if isinstance(error, PolicyStopped) else "error")

    @contextmanager
    def _through_the_sdk(self, ctx: RunContextWrapper[Any]) -> Iterator[None]:
        """Let ``except PolicyStopped`` around ``Runner.run`` catch a stop decided in
        a tool call, as the adapters promise (docs/adapters.md)."""
        try:
            yield
        except (Stopped, NotSupported) as e:
            self._ended(self._run_of(ctx), e)
            raise
        except PolicyStopped as e:
            self._ended(self._run_of(ctx), e)
            raise Stopped(e.event, e.reason, e.hook) from e
        except DecisionNotSupported as e:
            self._ended(self._run_of(ctx), e)
            raise NotSupported(e.framework, e.event, e.decision, e.hook, e.fix) from e


class _Call:
    """A tool call that a tool_error hook may judge, or that failed."""

    __slots__ = ("args", "attempt", "contexts", "failed", "judged")

    def __init__(self, *, failed: bool = False) -> None:
        self.args: dict[str, Any] = {}
        """The arguments it runs with."""
        self.attempt = 1
        self.contexts: list[str] = []
        """Context from tool_error answers, for the result the model reads."""
        self.failed = failed
        self.judged: BaseException | None = None
        """An error tool_error saw that the tool then raises out of the run."""


class _Retry(Exception):
    """A tool_error hook asked for the call again."""


class _Input:
    """A run's input as session_start and user_input left it."""

    __slots__ = ("context", "new", "sent", "text")

    def __init__(self, text: str, new: str, context: str) -> None:
        self.text, self.new, self.context = text, new, context
        self.sent = False
        """A model call carried it."""

    def same(self, other: _Input) -> bool:
        return (self.text, self.new, self.context) == (other.text, other.new, other.context)


class _Run:
    """One run's state: its first agent, its input, whether its agent started."""

    __slots__ = ("agent", "begun", "first", "handed", "input", "prompt")

    def __init__(self, first: Agent[Any]) -> None:
        self.first = self.agent = first
        """The run's first agent: any other that ends was handed off to; and the
        agent running now."""
        self.handed: Agent[Any] | None = None
        """The agent a governed handoff's wrapper asked subagent_start about."""
        self.prompt = ""
        self.input: _Input | None = None
        """The input as the policy changed it, for model_input to apply."""
        self.begun = False
        """Whether the run's agent started and no agent_end told of its end yet."""


_RAN = object()
"""model_input ran and found no changed input of a run in the model input."""


def _pending(items: list[Any], inputs: list[_Input]) -> tuple[_Input, int] | None:
    """The changed input whose original is the last user message of ``items`` that
    is one, and where it is."""
    for at in range(len(items) - 1, -1, -1):
        for pending in inputs:
            if _is_user(items[at], pending.text):
                return pending, at
    return None


def _is_user(item: Any, text: str) -> bool:
    return isinstance(item, dict) and item.get("role") == "user" and item.get("content") == text


def _strings(value: Any) -> Iterator[str]:
    """Every text in model input items (nested dicts and lists)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _contexts(call: _Call | None) -> list[str]:
    return call.contexts if call is not None else []




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
