"""How command-line hosts get their engine: through the registry when it is
installed (its permission rules become the agent's policy), never silently
without the policy asked for."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass

import pytest

from agent_helpers import isolated_home  # noqa: F401 - autouse fixture
from interlock import ConfigError, Engine
from interlock.agent import PermissionRule
from interlock.agent.host import open_host_engine, parse_rules


@dataclass
class _Rule:  # the registry's own rule type has the same three fields
    tool: str
    pattern: str
    action: str


def test_the_registry_opens_the_engine_and_supplies_permission_rules(monkeypatch, tmp_path):
    seen = {}
    engine = Engine()

    def open_engine(root, *, config=None, accept_hooks=False, sinks=()):
        seen.update(root=root, config=config, accept_hooks=accept_hooks)
        return engine, types.SimpleNamespace(permissions=[_Rule("terminal", "git *", "allow")])

    fake = types.ModuleType("interlock.registry")
    fake.open_engine = open_engine  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "interlock.registry", fake)
    got, rules = open_host_engine(tmp_path, config=tmp_path / "c.toml", accept_hooks=True)
    engine.close()
    assert got is engine
    assert seen == {"root": tmp_path, "config": tmp_path / "c.toml", "accept_hooks": True}
    assert rules == [PermissionRule("terminal", "git *", "allow")]


def test_config_without_the_registry_is_an_error_not_a_run_without_policy(monkeypatch,
                                                                          tmp_path):
    monkeypatch.setitem(sys.modules, "interlock.registry", None)  # import fails
    with pytest.raises(ConfigError, match="--config needs the hook registry"):
        open_host_engine(tmp_path, config=tmp_path / "c.toml")
    engine, rules = open_host_engine(tmp_path)  # no --config: extensions only
    engine.close()
    assert rules == []


def test_permission_flags_parse_into_rules():
    assert parse_rules(["terminal:git *"], ["write_file"], ["mcp__gh__*:*"]) == [
        PermissionRule("terminal", "git *", "allow"), PermissionRule("write_file", "*", "ask"),
        PermissionRule("mcp__gh__*", "*", "deny")]
    with pytest.raises(ConfigError, match="unknown permission action 'maybe'"):
        PermissionRule("x", "*", "maybe")
