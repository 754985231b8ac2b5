"""pydantic-ai's messages as the catalog's fields, and back: what the pydantic-ai
capability (``interlock.adapters.pydantic_ai``) reads and writes."""

from __future__ import annotations

from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestContext, ModelRequestParameters

from interlock.adapters._core import DecisionNotSupported, RunInput, as_text


def _open_calls(messages: list[ModelMessage]) -> set[str]:
    """The ids of the tool calls in the last model response of ``messages`` that no
    result answers yet (a run resumed with DeferredToolResults answers them)."""
    for at in range(len(messages) - 1, -1, -1):
        if isinstance(messages[at], ModelResponse):
            answered = {getattr(p, "tool_call_id", None) for m in messages[at + 1:]
                        for p in m.parts}
            return {p.tool_call_id for p in messages[at].parts
                    if isinstance(p, ToolCallPart)} - answered
    return set()


def _messages(messages: list[ModelMessage]) -> list[dict[str, Any]]:
    """The conversation in the catalog's OpenAI shape (role, content)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, ModelResponse):
            entry: dict[str, Any] = {"role": "assistant", "content": message.text or ""}
            calls = [{"id": p.tool_call_id, "type": "function",
                      "function": {"name": p.tool_name, "arguments": p.args_as_json_str()}}
                     for p in message.parts if isinstance(p, ToolCallPart)]
            if calls:
                entry["tool_calls"] = calls
            out.append(entry)
            continue
        if message.instructions:
            out.append({"role": "system", "content": message.instructions})
        for part in message.parts:
            if isinstance(part, SystemPromptPart):
                out.append({"role": "system", "content": part.content})
            elif isinstance(part, UserPromptPart):
                out.append({"role": "user", "content": as_text(part.content)})
            elif isinstance(part, ToolReturnPart):
                out.append({"role": "tool", "tool_call_id": part.tool_call_id,
                            "content": part.model_response_str()})
    return out


def _response(value: Any, model: str) -> ModelResponse:
    """A respond decision's synthetic reply: ``{"text", "tool_calls"}`` or text."""
    if isinstance(value, str):
        return ModelResponse(parts=[TextPart(value)], model_name=model)
    data = value if isinstance(value, dict) else {}
    parts: list[Any] = [TextPart(data["text"])] if data.get("text") else []
    parts += [ToolCallPart(c["name"], c.get("args") or {}, tool_call_id=c.get("id") or "")
              for c in data.get("tool_calls") or []]
    return ModelResponse(parts=parts or [TextPart("")], model_name=model)


def _outputs(calls: list[dict[str, Any]], params: ModelRequestParameters) -> list[Any]:
    """The calls of output tools among ``calls``: the run's output."""
    names = {t.name for t in params.output_tools}
    return [c for c in calls if c.get("name") in names]


def _apply_input(request_context: ModelRequestContext, original: str, given: RunInput) -> None:
    """user_input's decision on the first request: the prompt part rewritten in place
    (so the run's history holds what the model read), context after it."""
    for message in reversed(request_context.messages):
        if not isinstance(message, ModelRequest):
            continue
        parts = list(message.parts)
        replaced = False
        for i, part in enumerate(parts):
            if isinstance(part, UserPromptPart) and part.content == original:
                parts[i] = UserPromptPart(given.text)
                replaced = True
        if given.text != original and not replaced:
            break  # the model would read the original prompt
        if given.context:
            parts.append(UserPromptPart(given.context))
        message.parts = parts
        return
    if given.text != original or given.context:
        raise DecisionNotSupported(
            "pydantic-ai", "user_input", "modify" if given.text != original else "context", None,
            "the first request holds no prompt part equal to the run's input to "
            "replace (docs/adapters.md, pydantic-ai)")
