"""Phase 2, call the model: compaction, before_llm_call, the call, llm_error,
after_llm_call.

A synthetic reply (``respond`` on before_llm_call) goes through after_llm_call
and the tool gates exactly like a real one (docs/agent.md, What each decision does here). Text is
streamed to the user only while no after_llm_call or before_message_send hook
is active; otherwise it is shown once those hooks have passed it.
"""

from __future__ import annotations

import json
import weakref
from typing import TYPE_CHECKING, Any

from interlock.agent.compaction import compact, estimate_tokens
from interlock.agent.options import RunResult, RunStatus
from interlock.engine.decisions import Verdict
from interlock.engine.dispatch import Engine
from interlock.engine.redact import redact
from interlock.events import Event
from interlock.models.openai import MALFORMED
from interlock.models.tooling import ModelError, ModelRequest, ModelResponse, ToolCall

if TYPE_CHECKING:
    from interlock.agent.loop import Agent

_OPENAI_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")


def render(agent: Agent, extra_context: str = "") -> list[dict[str, Any]]:
    """The request messages: system prompt, then the transcript with hook context merged."""
    out: list[dict[str, Any]] = [{"role": "system", "content": agent.session.system_prompt}]
    for msg in agent.session.messages:
        item = {k: msg[k] for k in _OPENAI_KEYS if k in msg}
        ctx = msg.get("hook_context")
        if ctx:
            content = item.get("content") or ""
            item["content"] = f"{content}\n\n{ctx}" if content else ctx
        out.append(item)
    if extra_context:
        for item in reversed(out):
            if item["role"] == "user":
                content = item.get("content") or ""
                item["content"] = f"{content}\n\n{extra_context}" if content else extra_context
                break
        else:
            out.append({"role": "user", "content": extra_context})
    return out


def calls_from_dicts(raw: Any) -> list[ToolCall]:
    """Tool calls from the event shape ``[{id, name, args}]``; ValueError when malformed."""
    if not isinstance(raw, list):
        raise ValueError("tool_calls must be a list")
    calls = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise ValueError(f"tool_calls[{i}] needs a 'name' string")
        args = item.get("args", {})
        if not isinstance(args, dict):
            raise ValueError(f"tool_calls[{i}].args must be an object")
        calls.append(ToolCall(id=str(item.get("id") or ""), name=item["name"], args=args))
    return calls


def _check_reply(event: Event) -> None:
    calls_from_dicts(getattr(event, "tool_calls", []))


_CHECKED: weakref.WeakSet[Engine] = weakref.WeakSet()


def install_reply_validator(engine: Engine) -> None:
    """A modified after_llm_call must still hold well-formed tool calls."""
    if engine not in _CHECKED:
        engine.add_validator("after_llm_call", _check_reply)
        _CHECKED.add(engine)


def _unique_ids(agent: Agent, calls: list[ToolCall]) -> list[ToolCall]:
    seen: set[str] = set()
    out = []
    for i, call in enumerate(calls):
        cid = call.id
        if not cid or cid in seen:
            cid = f"call_{agent.turn_id}_{i}"
        seen.add(cid)
        out.append(ToolCall(id=cid, name=call.name, args=call.args))
    return out


async def _ask_model(agent: Agent, request: ModelRequest, stream: bool) -> ModelResponse:
    try:
        return await _provider_call(agent, request, stream)
    except ModelError:
        raise
    except Exception as exc:  # a provider's bug is a failed call, not a crashed run
        raise ModelError(f"the model provider failed: {type(exc).__name__}: {exc}") from exc


async def _provider_call(agent: Agent, request: ModelRequest, stream: bool) -> ModelResponse:
    on_text = agent.options.on_text
    if not stream or on_text is None:
        return await agent.model.complete(request)
    final: ModelResponse | None = None
    async for item in agent.model.stream(request):
        if isinstance(item, ModelResponse):
            final = item
        else:
            on_text(item)
    if final is None:
        raise ModelError("the model's stream ended without a final response")
    return final


async def call_model(agent: Agent) -> ModelResponse | RunResult:
    """One model call through every gate; a RunResult when the run must end here."""
    opts = agent.options
    if estimate_tokens(agent.session.messages) > opts.token_budget:
        await compact(agent, trigger="auto")
    retry_note = ""
    attempt = 0
    while True:
        gate = await agent.gate("before_llm_call", model=agent.session.model,
                                messages=render(agent, retry_note), params={},
                                tools=agent.active.begin_call(agent.turn_id))
        if gate.blocked:
            agent.step("blocked", event="before_llm_call", reason=gate.outcome.reason)
            return RunResult(RunStatus.BLOCKED, text=agent.reason_for_model(gate),
                             reason=gate.outcome.reason)
        payload = gate.payload
        # The validator let a modifier only narrow the set; this is what the
        # reply may call (agent/active.py refuses the rest).
        offered = list(payload.tools)
        agent.active.offer(agent.turn_id, offered)
        messages = list(payload.messages)
        ctx = gate.context(opts.context_cap)
        if ctx:
            messages = _with_context(messages, ctx)
        synthetic = gate.verdict is Verdict.RESPOND
        buffered = agent.hooks_on(("after_llm_call", "before_message_send"))
        if synthetic:
            try:
                value = gate.outcome.value
                if not isinstance(value, dict):
                    raise ValueError("respond's value must be an object {text, tool_calls}")
                reply = ModelResponse(text=str(value.get("text") or ""),
                                      tool_calls=calls_from_dicts(value.get("tool_calls", [])),
                                      finish_reason="synthetic")
            except ValueError as exc:
                hook = gate.outcome.hook.qualified_name if gate.outcome.hook else "a hook"
                return RunResult(RunStatus.ERROR, text=f"{hook} answered before_llm_call with a "
                                 f"malformed synthetic reply: {exc}")
        else:
            request = ModelRequest(model=agent.session.model, messages=messages,
                                   tools=agent.tools.openai_tools(offered),
                                   params=dict(payload.params))
            try:
                reply = await _ask_model(agent, request, opts.stream and not buffered)
            except ModelError as exc:
                attempt += 1
                error = redact(str(exc))
                agent.step("model_error", error=error)
                failed = await agent.gate("llm_error", model=agent.session.model, error=error,
                                          status_code=exc.status_code, attempt=attempt)
                if failed.verdict is Verdict.RETRY and attempt <= opts.llm_retry_cap:
                    # Back through before_llm_call: a retry is gated like any call.
                    retry_note = failed.context(opts.context_cap)
                    if failed.outcome.reason:
                        retry_note = (retry_note + "\n" if retry_note else "") + \
                            f"<hook-context hook=\"llm_error\">\n{failed.outcome.reason}\n" \
                            "</hook-context>"
                    continue
                return RunResult(RunStatus.ERROR, text=f"model call failed: {error}")
        return await _after(agent, reply, synthetic, buffered)


def _with_context(messages: list[dict[str, Any]], ctx: str) -> list[dict[str, Any]]:
    out = [dict(m) for m in messages]
    for item in reversed(out):
        if item.get("role") == "user":
            content = item.get("content") or ""
            item["content"] = f"{content}\n\n{ctx}" if content else ctx
            return out
    out.append({"role": "user", "content": ctx})
    return out


async def _after(agent: Agent, reply: ModelResponse, synthetic: bool, buffered: bool
                 ) -> ModelResponse | RunResult:
    calls = _unique_ids(agent, reply.tool_calls)
    gate = await agent.gate(
        "after_llm_call", model=agent.session.model, text=reply.text,
        tool_calls=[{"id": c.id, "name": c.name, "args": c.args} for c in calls],
        finish_reason=reply.finish_reason, synthetic=synthetic)
    if gate.blocked:
        agent.step("blocked", event="after_llm_call", reason=gate.outcome.reason)
        return RunResult(RunStatus.BLOCKED, text=agent.reason_for_model(gate),
                         reason=gate.outcome.reason)
    text = gate.payload.text
    if gate.outcome.payload is not None:
        calls = _unique_ids(agent, calls_from_dicts(gate.payload.tool_calls))
    if text and agent.options.on_text is not None and (buffered or not agent.options.stream
                                                       or synthetic):
        agent.options.on_text(text)
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function",
             "function": {"name": c.name,
                          "arguments": c.args[MALFORMED] if MALFORMED in c.args
                          else json.dumps(c.args)}}
            for c in calls]
    agent.session.messages.append(message)
    agent.step("model", text=text, tool_calls=[(c.name, c.args) for c in calls],
               synthetic=synthetic)
    return ModelResponse(text=text, tool_calls=calls, finish_reason=reply.finish_reason,
                         usage=reply.usage)
