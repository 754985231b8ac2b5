"""The tool registry: specs, JSON-schema validation, and what a tool sees.

Arguments are validated against the tool's JSON Schema before any hook sees
them, and again after every hook change (an engine validator on
``before_tool_call``), so a modifier can never hand a tool arguments it would
not accept from the model.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from interlock.engine.dispatch import Engine
from interlock.engine.errors import RegistrationError
from interlock.events import Event
from interlock.models.tooling import ToolSpec

if TYPE_CHECKING:
    from interlock.agent.loop import Agent

_NAME = re.compile(r"^(?:[a-z][a-z0-9_]*|mcp__[A-Za-z0-9_\-]+__[A-Za-z0-9_\-]+)$")
_EXTENSION_NAME = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")
"""What providers accept as a function name; extensions' tools may use all of it."""


class ToolError(Exception):
    """A tool failed in a way the model should hear about (not a crash of ours)."""


@dataclass(slots=True)
class ToolContext:
    """What a tool handler receives beside its arguments."""

    agent: Agent
    tool_call_id: str
    tool_name: str
    changed: list[tuple[str, str]] = field(default_factory=list)
    """(path, created|modified|deleted) the tool wrote: file_changed fires for watched ones."""
    gated_cwd: str | None = None
    """The working directory the call's hooks and permission checks judged it in
    (its before_tool_call payload). The call runs there, whatever a sibling call
    of the same reply did to the agent's directory meanwhile."""

    @property
    def cwd(self) -> str:
        return self.gated_cwd if self.gated_cwd is not None else str(self.agent.cwd)

    def changed_file(self, path: str, change: str = "modified") -> None:
        self.changed.append((path, change))

    async def set_cwd(self, new_cwd: str) -> None:
        await self.agent.change_cwd(new_cwd)


def validation_error(spec: ToolSpec, validator: Draft202012Validator, args: Any) -> str | None:
    """One readable line for the first schema error, or None when valid."""
    errors = sorted(validator.iter_errors(args), key=lambda e: list(e.path))
    if not errors:
        return None
    err = errors[0]
    where = "args" + "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in err.path)
    return f"{where}: {err.message}"


def schema_problem(schema: Any) -> str | None:
    """Why ``schema`` is no valid JSON Schema, or None. A schema of plain JSON is
    checked once per process: checking walks the meta-schema (about 2 ms), and
    every agent and sub-agent registers the same built-in tools."""
    try:
        text = json.dumps(schema, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        return _check(schema)
    if json.loads(text) != schema:  # a tuple for an array: judged as it is
        return _check(schema)
    return _check_json(text)


@functools.lru_cache(maxsize=1024)
def _check_json(text: str) -> str | None:
    return _check(json.loads(text))


def _check(schema: Any) -> str | None:
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return exc.message
    return None


class ToolRegistry:
    """The tools one agent offers the model."""

    def __init__(self, tools: Iterable[ToolSpec] = ()) -> None:
        self._tools: dict[str, ToolSpec] = {}
        self._validators: dict[str, Draft202012Validator] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: ToolSpec) -> None:
        pattern = _NAME if tool.source == "builtin" else _EXTENSION_NAME
        if not pattern.match(tool.name):
            raise RegistrationError(
                f"tool name {tool.name!r} is invalid: use lower_snake_case for built-ins and "
                "mcp__<server>__<tool> for MCP tools")
        problem = schema_problem(tool.schema)
        if problem is not None:
            raise RegistrationError(f"tool {tool.name!r} has an invalid JSON schema: {problem}")
        self._tools[tool.name] = tool
        self._validators[tool.name] = Draft202012Validator(tool.schema)

    def get(self, name: str) -> ToolSpec | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def __iter__(self) -> Any:
        return iter(self._tools.values())

    def subset(self, names: Iterable[str]) -> ToolRegistry:
        return ToolRegistry(self._tools[n] for n in names if n in self._tools)

    def validate(self, name: str, args: Any) -> str | None:
        tool = self._tools.get(name)
        if tool is None:
            return f"unknown tool {name!r}"
        return validation_error(tool, self._validators[name], args)

    def openai_tools(self, names: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """The tools in the OpenAI shape: all of them, or those of ``names``."""
        keep = None if names is None else set(names)
        return [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                  "parameters": t.schema}}
                for t in self if keep is None or t.name in keep]

    def install_validator(self, engine: Engine) -> None:
        """Make the engine re-validate modified before_tool_call args against these schemas."""
        registries = _ENGINE_TOOLS.get(engine)
        if registries is None:
            registries = weakref.WeakSet()
            _ENGINE_TOOLS[engine] = registries

            def check(event: Event) -> None:
                name = getattr(event, "tool_name", "")
                for registry in list(registries):
                    if registry.get(name) is not None:
                        problem = registry.validate(name, getattr(event, "args", {}))
                        if problem is not None:
                            raise ValueError(f"{name} {problem}")
                        return

            engine.add_validator("before_tool_call", check)
        registries.add(self)


_ENGINE_TOOLS: weakref.WeakKeyDictionary[Engine, weakref.WeakSet[ToolRegistry]] = (
    weakref.WeakKeyDictionary())


async def call_handler(tool: ToolSpec, args: dict[str, Any], ctx: ToolContext) -> Any:
    """Run a handler: async ones on the loop, sync ones on a worker thread."""
    if inspect.iscoroutinefunction(tool.handler):
        return await tool.handler(args, ctx)
    import asyncio

    result = await asyncio.to_thread(tool.handler, args, ctx)
    if inspect.isawaitable(result):
        result = await result
    return result
