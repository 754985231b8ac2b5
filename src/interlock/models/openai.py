"""An OpenAI-compatible chat-completions client (vLLM, llama.cpp, Ollama, hosted).

Base URL and key come from arguments, else ``OPENAI_BASE_URL`` /
``OPENAI_API_KEY`` (default base ``https://api.openai.com/v1``). Tool calls
whose arguments are not valid JSON are passed on marked as malformed
(:data:`MALFORMED`), so the agent can tell the model instead of crashing.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from typing import Any

import httpx

from interlock.engine.redact import redact
from interlock.models.tooling import ModelError, ModelRequest, ModelResponse, ToolCall

MALFORMED = "__interlock_malformed_arguments__"
"""Key of a tool call's args when the model sent arguments that are not a JSON object."""

DEFAULT_BASE_URL = "https://api.openai.com/v1"


def _parse_args(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if raw in (None, ""):
        return {}
    try:
        value = json.loads(raw)
    except (TypeError, json.JSONDecodeError):
        return {MALFORMED: str(raw)}
    return value if isinstance(value, dict) else {MALFORMED: str(raw)}


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class OpenAIModel:
    """A ModelProvider speaking ``POST {base_url}/chat/completions``."""

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 120.0, transport: httpx.AsyncBaseTransport | None = None
                 ) -> None:
        self.name = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL")
                         or DEFAULT_BASE_URL).rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY", "")
        self.timeout = timeout
        self._transport = transport

    def _client(self) -> httpx.AsyncClient:
        headers = {"content-type": "application/json"}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        # trust_env=False: a model endpoint named explicitly is never rerouted
        # through a proxy from the environment.
        return httpx.AsyncClient(base_url=self.base_url, headers=headers,
                                 timeout=self.timeout, transport=self._transport,
                                 trust_env=False)

    def _body(self, request: ModelRequest, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"model": request.model or self.name,
                                "messages": request.messages, **request.params}
        if request.tools:
            body["tools"] = request.tools
        if stream:
            body["stream"] = True
        return body

    @staticmethod
    def _error(response: httpx.Response, text: str) -> ModelError:
        detail = text[:500]
        try:
            err = json.loads(text).get("error")
            if isinstance(err, dict):
                detail = str(err.get("message", detail))
            elif isinstance(err, str):
                detail = err
        except (ValueError, AttributeError):
            pass
        return ModelError(f"model server answered HTTP {response.status_code}: {redact(detail)}",
                          status_code=response.status_code, retry_after=_retry_after(response))

    async def complete(self, request: ModelRequest) -> ModelResponse:
        try:
            async with self._client() as client:
                response = await client.post("/chat/completions",
                                             json=self._body(request, False))
        except httpx.HTTPError as exc:
            raise ModelError(f"cannot reach the model server at {self.base_url}: "
                             f"{redact(str(exc)) or type(exc).__name__}") from None
        if response.status_code >= 400:
            raise self._error(response, response.text)
        try:
            data = response.json()
            choice = data["choices"][0]
            message = choice["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise ModelError("model server sent a malformed chat completion: "
                             f"{redact(response.text[:300])!r}") from None
        calls = []
        for i, tc in enumerate(message.get("tool_calls") or []):
            fn = tc.get("function") or {}
            calls.append(ToolCall(id=str(tc.get("id") or f"call_{i}"),
                                  name=str(fn.get("name") or ""),
                                  args=_parse_args(fn.get("arguments"))))
        usage = {k: v for k, v in (data.get("usage") or {}).items() if isinstance(v, int)}
        return ModelResponse(text=message.get("content") or "", tool_calls=calls,
                             finish_reason=choice.get("finish_reason"), usage=usage)

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ModelResponse]:
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        finish: str | None = None
        usage: dict[str, int] = {}
        try:
            async with self._client() as client, client.stream(
                    "POST", "/chat/completions", json=self._body(request, True)) as response:
                if response.status_code >= 400:
                    raise self._error(response, (await response.aread()).decode(errors="replace"))
                async for line in response.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    try:
                        chunk = json.loads(data)
                    except json.JSONDecodeError:
                        raise ModelError("model server sent a malformed stream chunk: "
                                         f"{redact(data[:200])!r}") from None
                    if isinstance(chunk.get("usage"), dict):
                        usage = {k: v for k, v in chunk["usage"].items() if isinstance(v, int)}
                    for choice in chunk.get("choices") or []:
                        delta = choice.get("delta") or {}
                        if delta.get("content"):
                            text.append(delta["content"])
                            yield delta["content"]
                        for tc in delta.get("tool_calls") or []:
                            slot = calls.setdefault(int(tc.get("index", 0)),
                                                    {"id": "", "name": "", "arguments": ""})
                            fn = tc.get("function") or {}
                            slot["id"] = tc.get("id") or slot["id"]
                            slot["name"] += fn.get("name") or ""
                            slot["arguments"] += fn.get("arguments") or ""
                        finish = choice.get("finish_reason") or finish
        except httpx.HTTPError as exc:
            raise ModelError(f"cannot reach the model server at {self.base_url}: "
                             f"{redact(str(exc)) or type(exc).__name__}") from None
        tool_calls = [ToolCall(id=s["id"] or f"call_{i}", name=s["name"],
                               args=_parse_args(s["arguments"]))
                      for i, s in sorted(calls.items())]
        yield ModelResponse(text="".join(text), tool_calls=tool_calls, finish_reason=finish,
                            usage=usage)
