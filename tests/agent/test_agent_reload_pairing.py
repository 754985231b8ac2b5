"""The reference agent judges a tool call by the hooks and the live
``[[permissions]]`` rules of one revision, even when a reload lands in the middle
of it (docs/configuration.md, Live reload; the window: helpers/reload_window.py).
``interlock run``/``chat`` and the chat gateway give it the registry's."""

from __future__ import annotations

import asyncio

import pytest

from helpers.agent import call, make_agent
from helpers.cfg import World, world
from helpers.reload_window import hook_then_rule, mid_reload

__all__ = ["world"]


def test_an_agent_tool_call_during_a_reload_is_judged_by_one_revision(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    reg = hook_then_rule(world)
    work = world.root / "work"
    work.mkdir()
    marker = work / "marker"
    marker.write_text("keep me")
    steps = [{"tool_calls": [call("terminal", command="rm -f marker")]}, {"text": "ok"}]
    kinds: list[str] = []
    agent, _ = make_agent(reg.engine, steps, work, store=False,
                          live_permissions=lambda: reg.permissions, dispatch=reg.dispatch,
                          on_step=lambda kind, data: kinds.append(kind))

    with mid_reload(reg, monkeypatch) as during:
        during(lambda: asyncio.run(agent.run("go")))
    assert marker.exists(), kinds
    assert "blocked" in kinds
    assert "tool_call" not in kinds
