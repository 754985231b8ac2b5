"""Shared contracts between the agent runtime and extensions: tools, slash
commands, model providers, and the permission rules on tools that config
files declare and the agent enforces.

The reference agent (``interlock.agent``) consumes these; extensions produce
them through ``ctx.register_tool`` / ``register_command`` /
``register_provider``. Keeping them here lets both sides depend on one small
module instead of on each other.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from interlock.models.permission import PermissionRule as PermissionRule

ToolHandler = Callable[[dict[str, Any], Any], Any | Awaitable[Any]]
"""``handler(args, ctx)`` -> a JSON-able result; ``ctx`` is the agent's ToolContext."""

CommandHandler = Callable[[str, Any], str | Awaitable[str | None] | None]
"""``handler(arguments, ctx)`` -> reply text (or None); ``ctx`` is the agent's CommandContext."""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the model can call."""

    name: str
    """Plain for built-ins (``terminal``); ``mcp__<server>__<tool>`` for MCP tools."""
    description: str
    schema: dict[str, Any]
    """JSON Schema of the arguments object; arguments are validated against it,
    before the tool runs and again after a hook modifies them."""
    handler: ToolHandler
    needs_approval: bool = False
    """Ask for permission (permission_request, then a person or policy) before running."""
    writes_files: bool = False
    """Writes files (file_changed fires; checkpoints run before it)."""
    read_only: bool = False
    """Safe inside read-only sub-agents (agent hooks)."""
    source: str = "builtin"
    """builtin, or the extension that registered it."""


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """A slash command (``/name arguments``)."""

    name: str
    description: str
    handler: CommandHandler
    source: str = "builtin"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call requested by a model."""

    id: str
    name: str
    args: dict[str, Any]


@dataclass(slots=True)
class ModelRequest:
    model: str
    messages: list[dict[str, Any]]
    """OpenAI chat-completions shape."""
    tools: list[dict[str, Any]] = field(default_factory=list)
    """OpenAI ``tools`` shape (``{"type": "function", "function": {...}}``)."""
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class ModelResponse:
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    """prompt_tokens, completion_tokens, when the provider says."""


class ModelError(Exception):
    """A model call failed (HTTP error, malformed reply, script exhausted)."""

    def __init__(self, message: str, *, status_code: int | None = None,
                 retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.retry_after = retry_after


class ModelProvider(Protocol):
    """Anything that answers a chat request: scripted, OpenAI-compatible, an extension's."""

    async def complete(self, request: ModelRequest) -> ModelResponse: ...

    def stream(self, request: ModelRequest) -> AsyncIterator[str | ModelResponse]:
        """Yield text deltas, then the final ModelResponse last."""
        ...


ProviderFactory = Callable[[str], ModelProvider]
"""``factory(model_name)`` -> a provider; registered under a prefix such as ``openai``."""
