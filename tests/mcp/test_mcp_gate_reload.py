"""The MCP proxy judges a call by the hooks and ``[[permissions]]`` rules of one
revision, even when a live reload lands in the middle of it
(docs/configuration.md, Live reload; the window: helpers/reload_window.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from helpers.cfg import World, world
from helpers.reload_window import hook_then_rule, mid_reload
from interlock.hosts.mcp._gate import Gate, Gated

__all__ = ["world"]


def test_an_mcp_call_during_a_reload_is_judged_by_one_revision(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    reg = hook_then_rule(world, tool="mcp__box__shell")
    gate = Gate(reg.engine, "box", rules=lambda: reg.permissions, dispatch=reg.dispatch)
    ran: list[dict[str, Any]] = []

    async def run(args: dict[str, Any]) -> dict[str, Any]:
        ran.append(args)
        return {"content": [], "isError": False}

    def call() -> Gated:
        return asyncio.run(gate.call("shell", {"command": "rm -rf /"}, run))

    with mid_reload(reg, monkeypatch) as during:
        gated = during(call)
    assert gated.refusal is not None, gated
    assert gated.status == "blocked"
    assert not ran
