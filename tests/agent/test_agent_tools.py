"""The tool registry refuses a tool whose JSON schema is invalid (docs/agent.md), and
checks each schema once, not once per agent."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from interlock.agent.builtin_tools import builtin_tools
from interlock.agent.tools import ToolRegistry
from interlock.engine.errors import RegistrationError
from interlock.models.tooling import ToolSpec


def _handler(args: Any, ctx: Any) -> Any:
    return None


def test_an_invalid_schema_is_refused_by_every_registry() -> None:
    bad = ToolSpec("bad", "x", {"type": "objectish"}, _handler)
    for _ in range(2):
        with pytest.raises(RegistrationError, match="'bad' has an invalid JSON schema"):
            ToolRegistry([bad])


def test_a_schema_is_judged_as_it_is_not_as_its_json_reads() -> None:
    """A tuple is no JSON array to the validator: the same schema with a list passing
    first must not let it through."""
    ToolRegistry([ToolSpec("listed", "x", {"type": "object", "required": ["a"]}, _handler)])
    with pytest.raises(RegistrationError, match="'tupled' has an invalid JSON schema"):
        ToolRegistry([ToolSpec("tupled", "x", {"type": "object", "required": ("a",)},
                               _handler)])


def test_each_schema_is_checked_once_not_once_per_agent(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every agent and sub-agent registers the built-in tools, and checking a schema
    walks the meta-schema: about 2 ms each, 18 ms of every agent's start."""
    checked: list[Any] = []
    check = Draft202012Validator.check_schema

    def counted(schema: Any, *args: Any, **kwargs: Any) -> None:
        checked.append(schema)
        check(schema, *args, **kwargs)

    monkeypatch.setattr(Draft202012Validator, "check_schema", counted)
    tools = builtin_tools()
    ToolRegistry(tools)
    first = len(checked)
    ToolRegistry(tools)
    ToolRegistry(builtin_tools())
    assert len(checked) == first
