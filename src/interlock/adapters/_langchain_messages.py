"""LangChain's messages and requests as the catalog's fields, and back: what the
LangChain middleware (``interlock.adapters.langchain``) reads and writes."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware import AgentState, ModelRequest, ModelResponse
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    convert_to_messages,
)
from langgraph.types import Command

from interlock.adapters._core import DecisionNotSupported, as_text, joined, with_context
from interlock.adapters._lifecycle import error_text, status_code

if TYPE_CHECKING:
    from langgraph.prebuilt.tool_node import ToolCallRequest


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


def _nothing_besides(result: Any, state: Any, name: str) -> None:
    """Refuse a tool's ``Command`` (or a list holding some) that adds a message other
    than its ToolMessage to the state, which the hooks would not judge (a message
    already in ``state`` is not new: a handoff tool passes the history on)."""
    commands = [r for r in (result if isinstance(result, list) else [result])
                if isinstance(r, Command)]
    if not commands:
        return
    history = (state.get("messages", []) if isinstance(state, dict)
               else getattr(state, "messages", [])) or []
    known = {m.id for m in history if getattr(m, "id", None)}
    for command in commands:
        update = command.update
        items = (update.get("messages", []) if isinstance(update, dict) else update) or []
        for m in items:
            if isinstance(m, BaseMessage) and not isinstance(m, ToolMessage) and (
                    m.id is None or m.id not in known):
                raise DecisionNotSupported(
                    "langchain", "after_tool_call", "judge the result", None,
                    f"the tool {name!r} adds {type(m).__name__} to the state beside its "
                    "ToolMessage, which the hooks do not judge; put what the model is to "
                    "read in the ToolMessage (docs/adapters.md, LangChain)")


def _rewrite(result: Any, rewritten: dict[int, ToolMessage]) -> Any:
    """``result`` with each judged ToolMessage replaced by its rewrite."""
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
    if result is content and not any(contexts):
        return message  # unchanged (the usual case)
    return _message(with_context(result, joined(*contexts)), message.name or "",
                    message.tool_call_id, message.status)


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


def _streamed() -> bool:
    """Whether a consumer reads this run's model output as it comes (``stream`` or
    ``astream`` with ``stream_mode="messages"``, ``astream_events``): LangGraph's
    streaming handler hands it the model's reply before after_llm_call can change it."""
    from langchain_core.tracers._streaming import _StreamingCallbackHandler
    from langgraph.config import get_config

    try:
        callbacks = get_config().get("callbacks")
    except RuntimeError:  # not inside a graph run
        return False
    handlers = getattr(callbacks, "handlers", callbacks)
    return isinstance(handlers, list) and any(
        isinstance(h, _StreamingCallbackHandler) for h in handlers)


def _unstreamed() -> None:
    """Refuse a hook's change of a tool's result that a consumer of this run's events
    (``astream_events``) has read already: they hand it each tool's own output
    (``on_tool_end``) before after_tool_call and tool_result_persist see it."""
    from langchain_core.tracers.event_stream import _AstreamEventsCallbackHandler
    from langgraph.config import get_config

    try:
        callbacks = get_config().get("callbacks")
    except RuntimeError:  # not inside a graph run
        return
    handlers = getattr(callbacks, "handlers", callbacks)
    if isinstance(handlers, list) and any(
            isinstance(h, _AstreamEventsCallbackHandler) for h in handlers):
        raise DecisionNotSupported(
            "langchain", "after_tool_call", "modify or block", None,
            "astream_events streamed the tool's own result before the hooks judged it; "
            "stream with astream(stream_mode=\"messages\") or \"updates\", which carry the "
            "result as the hooks left it (docs/adapters.md, LangChain)")


def _ai_message(value: Any) -> AIMessage:
    """A respond (or modified) reply: text, or ``{"text", "tool_calls"}``."""
    if isinstance(value, str):
        return AIMessage(content=value)
    data = value if isinstance(value, dict) else {}
    calls = [{"id": c.get("id") or f"interlock-{i}", "name": c["name"],
              "args": c.get("args") or {}, "type": "tool_call"}
             for i, c in enumerate(data.get("tool_calls") or [])]
    return AIMessage(content=data.get("text") or "", tool_calls=calls)


_OFFERED = "interlock_offered"
"""The ``response_metadata`` key of a reply's offered tools (docs/adapters.md, LangChain)."""


def _refuse_provider_tools(tools: list[Any]) -> None:
    """A dict tool is one the provider runs (LangChain's built-in tools): no hook or
    rule would see its calls, so a model call offering one does not go out."""
    provider = [t for t in tools if isinstance(t, dict)]
    if not provider:
        return
    from interlock.engine.errors import ConfigError

    names = ", ".join(str(t.get("name") or t.get("server_label") or t.get("type") or "?")
                      for t in provider)
    raise ConfigError(f"the agent offers provider-run tools ({names}), whose calls the "
                      "policy cannot gate", field="tools",
                      fix="give create_agent tools that run in the process (BaseTool or "
                          "functions) instead of dict tools (docs/adapters.md, LangChain)")


def _mark_offered(changes: Mapping[str, Any], request: ModelRequest[Any],
                  response: ModelResponse[Any]) -> ModelResponse[Any]:
    """A reply to a model call whose tools a before_llm_call hook narrowed keeps the
    names it was offered, in the state, for the tool calls it makes."""
    if "tools" not in changes:
        return response
    names = [_tool_name(t) for t in request.tools]
    for message in response.result:
        if isinstance(message, AIMessage) and message.tool_calls:
            message.response_metadata[_OFFERED] = names
    return response


def _offered(request: ToolCallRequest, call_id: str) -> list[str] | None:
    """The tools offered to the model call whose reply made this call, when a hook
    narrowed them; None when it offered every tool (or the reply is not found)."""
    state = request.state
    messages = (state.get("messages", []) if isinstance(state, dict)
                else getattr(state, "messages", []))
    for message in reversed(messages or []):
        if isinstance(message, AIMessage) and any(c.get("id") == call_id
                                                  for c in message.tool_calls):
            offered = message.response_metadata.get(_OFFERED)
            return list(offered) if offered is not None else None
    return None


def _error_fields(name: str, args: dict[str, Any], call_id: str, error: str,
                  attempt: int) -> dict[str, Any]:
    return {"tool_call_id": call_id, "tool_name": name, "args": args, "error": error,
            "attempt": attempt}


def _select_fields(request: ModelRequest[Any]) -> dict[str, Any]:
    return {"model": _llm_fields(request, False)["model"]}


def _llm_error_fields(request: ModelRequest[Any], error: Exception,
                      attempt: int) -> dict[str, Any]:
    return {"model": _llm_fields(request, False)["model"], "error": error_text(error),
            "status_code": status_code(error), "attempt": attempt}


def _final(response: ModelResponse[Any]) -> bool:
    """Whether this reply ends the loop: it calls no tool, or it is the structured
    output (a call of the output tool, answered in the same response)."""
    ai = _ai(response)
    return ai is not None and (not ai.tool_calls or response.structured_response is not None)


def _stop_fields(request: ModelRequest[Any], response: ModelResponse[Any]) -> dict[str, Any]:
    ai = _ai(response)
    return {"last_message": as_text(ai.content) if ai is not None else None,
            "prompt": _prompt(request.state) if request.state else None}
