"""An adapter judges a tool call by the hooks and ``[[permissions]]`` rules of one
revision of its live host, even when a reload lands in the middle of it
(docs/configuration.md, Live reload; the window: helpers/reload_window.py)."""

from __future__ import annotations

import asyncio

import pytest

from helpers.cfg import World, world
from helpers.reload_window import hook_then_rule, mid_reload
from interlock.adapters import _core
from interlock.adapters._core import Policy, ToolGate
from interlock.hosts.assembly import Host, Project

__all__ = ["world"]


def live_policy(world: World, monkeypatch: pytest.MonkeyPatch) -> tuple[Policy, Host]:
    """A policy on the project's shared live host, whose registry is about to move
    its deny from a hook into a rule."""
    reg = hook_then_rule(world)
    root = world.root.resolve()
    host = Host(reg.engine, reg, None, project=Project(root, found=True, start=root),
                home=world.home, use_entry_points=False)
    monkeypatch.setitem(_core._hosts, root, host)
    return Policy("testing", project=root), host


@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
def test_a_tool_call_during_a_reload_is_judged_by_one_revision(
        world: World, monkeypatch: pytest.MonkeyPatch, sync: bool) -> None:
    policy, host = live_policy(world, monkeypatch)
    args = {"command": "rm -rf /"}

    def gate() -> ToolGate:
        if sync:
            return policy.before_tool_sync("terminal", args)
        return asyncio.run(policy.before_tool("terminal", args))

    with mid_reload(host.registry, monkeypatch) as during:
        answer = during(gate)
    assert answer.action == "block", answer
