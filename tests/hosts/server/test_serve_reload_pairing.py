"""A decision's hooks and ``[[permissions]]`` rules are of one revision, even when a
live reload lands in the middle of a call (docs/configuration.md, Live reload).

Each test moves a deny from a hook into a rule, and holds the reload between
its hooks swap and its rules swap while a call is judged: the next revision's
hooks (no deny) with the last one's rules (no deny) would allow what neither
revision allows.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from helpers.cfg import World, world
from helpers.reload_window import hook_then_rule, mid_reload
from interlock.events import make
from interlock.hosts.server.app import create_app
from interlock.hosts.server.auth import TokenStore

__all__ = ["world"]

RM = {"tool_name": "terminal", "args": {"command": "rm -rf /"}, "session_id": "s1",
      "cwd": "/"}


def test_serve_judges_a_call_during_a_reload_by_one_revision(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    reg = hook_then_rule(world)
    app = create_app(reg.engine, project_root=world.root, tokens=TokenStore(), reloader=reg,
                     rules=lambda: reg.permissions, dispatch=reg.dispatch)

    def evaluate() -> dict[str, Any]:
        answer = asyncio.run(app.state.api.evaluate(make("before_tool_call", RM)))
        return dict(json.loads(answer.body))

    with mid_reload(reg, monkeypatch) as during:
        record = during(evaluate)
    assert record["decision"] == "block", record
    assert reg.permissions  # the deny did move into a rule
    assert [h.name for h in reg.engine.hooks] == ["note"]


def test_serve_bridge_answers_a_call_during_a_reload_by_one_revision(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    reg = hook_then_rule(world)
    app = create_app(reg.engine, project_root=world.root, tokens=TokenStore(), reloader=reg,
                     rules=lambda: reg.permissions, dispatch=reg.dispatch)
    payload = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                          "tool_input": {"command": "rm -rf /"}, "session_id": "s1",
                          "cwd": "/"}).encode()

    def bridge() -> str:
        answer = asyncio.run(app.state.api.host_reply("claude", payload))
        return bytes(answer.body).decode()

    with mid_reload(reg, monkeypatch) as during:
        body = during(bridge)
    assert '"deny"' in body, body


def test_the_chat_gateway_s_agents_pair_the_hooks_and_rules_as_the_registry_does(
        world: World) -> None:
    # Its agents are the reference agent (tests/agent/test_agent_reload_pairing.py).
    from interlock.hosts.server.gateway import build_gateway

    reg = hook_then_rule(world)
    script = world.root / "chat.yaml"
    script.write_text("- text: hello\n")
    gateway = build_gateway(reg.engine, project_root=world.root, model=f"scripted:{script}",
                            registry=reg)
    assert gateway.agent_options["dispatch"] == reg.dispatch
