"""Bundled hooks through the registry: discovered by default, off until
enabled, configured with options from config."""

from __future__ import annotations

import json

import pytest

from helpers.cfg import World, run, world
from interlock import Engine
from interlock.config.registry import Registry
from interlock.events import make

__all__ = ["world"]

ENABLE = """
[[hooks]]
name = "destructive-guard"
enabled = true
"""


@pytest.fixture
def shipped(world: World, monkeypatch: pytest.MonkeyPatch) -> World:
    monkeypatch.delenv("INTERLOCK_BUNDLED")  # the package's own bundled/ folder
    return world


def _registry(world: World) -> Registry:
    engine = Engine()
    world.engines.append(engine)
    return Registry(engine, project_root=world.root, home=world.home, managed=world.managed)


def _rm_root(world: World) -> list[str]:
    payload = world.write(world.root / "p.json", '{"args": {"command": "rm -rf /"}}')
    return ["before_tool_call", "--tool", "terminal", "--payload-file", str(payload), "--json"]


def test_bundled_hooks_are_listed_and_off_until_enabled(shipped: World) -> None:
    code, out, _ = run(shipped, "test", *_rm_root(shipped))
    assert code == 0
    assert json.loads(out)["decision"] == "none"
    code, out, _ = run(shipped, "list")
    assert "bundled:destructive-guard" in out


def test_enabling_destructive_guard_in_project_config_blocks_rm_rf_root(shipped: World) -> None:
    shipped.config(shipped.project, ENABLE)
    code, out, err = run(shipped, "test", *_rm_root(shipped))
    assert code == 0, err
    data = json.loads(out)
    assert data["decision"] == "block"
    assert data["hook"] == "bundled:destructive-guard"


def test_options_reach_configure(shipped: World) -> None:
    # The guard's `tools` option says which of the tools it matches are terminals.
    shipped.config(shipped.home, ENABLE + 'options = { tools = ["shell"] }\n')
    reg = _registry(shipped)
    reg.load()
    (entry,) = [e for e in reg.hooks if e.qualified_name == "bundled:destructive-guard"]
    assert entry.options == {"tools": ["shell"]}
    assert entry.state == "active"
    hit = make("before_tool_call", {"tool_name": "shell", "args": {"command": "rm -rf /"}})
    assert reg.engine.emit_sync(hit).verdict.value == "block"
    other = make("before_tool_call", {"tool_name": "terminal", "args": {"command": "rm -rf /"}})
    assert reg.engine.emit_sync(other).verdict.value == "none"


def test_project_options_on_a_bundled_hook_need_approval(shipped: World) -> None:
    # An empty tool list would turn the guard into a no-op: a repository
    # may not do that to a trusted hook without the user's consent.
    shipped.config(shipped.project, ENABLE + "options = { tools = [] }\n")
    reg = _registry(shipped)
    reg.load()
    (entry,) = [e for e in reg.hooks if e.qualified_name == "bundled:destructive-guard"]
    assert entry.needs_approval
    assert not entry.approved
    ev = make("before_tool_call", {"tool_name": "terminal", "args": {"command": "ls"}})
    outcome = reg.engine.emit_sync(ev)
    assert outcome.verdict.value == "block"  # unapproved and fail-closed: a refusal
    assert "unapproved" in (outcome.reason or "")
    assert reg.approve(["bundled:destructive-guard"]) == ["bundled:destructive-guard"]
    assert reg.engine.emit_sync(ev).verdict.value == "none"


def test_bad_options_are_a_config_error_naming_the_option(shipped: World) -> None:
    shipped.config(shipped.home, """
        [[hooks]]
        name = "rate-limit"
        enabled = true
        options = { rate = "fast" }
        """)
    code, _out, err = run(shipped, "validate")
    assert code == 2
    assert "rate-limit" in err
    assert "options" in err


def test_options_on_a_command_hook_are_refused(world: World) -> None:
    world.config(world.home, """
        [[hooks]]
        name = "c"
        events = ["before_tool_call"]
        command = "true"
        options = { x = 1 }
        """)
    code, _out, err = run(world, "validate")
    assert code == 2
    assert "config.toml:5" in err
    assert "takes no options" in err


def test_the_users_options_beat_the_projects(shipped: World) -> None:
    shipped.config(shipped.project, ENABLE + 'options = { tools = ["bash"] }\n')
    shipped.config(shipped.home, ENABLE + 'options = { tools = ["shell"] }\n')
    reg = _registry(shipped)
    reg.load()
    (entry,) = [e for e in reg.hooks if e.qualified_name == "bundled:destructive-guard"]
    assert entry.options == {"tools": ["shell"]}
    assert not entry.needs_approval  # the user's word, not the repository's
