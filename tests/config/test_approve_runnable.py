"""Every approval path (the CLI, --accept-hooks / INTERLOCK_ACCEPT_HOOKS, the
registry as the console calls it) refuses a hook that cannot run, with the
reason, and approves the rest (docs/configuration.md, Validation and reloads)."""

from __future__ import annotations

import logging

import pytest

from helpers.cfg import World, world
from interlock import ConfigError, Verdict
from interlock.testing import fire

__all__ = ["world"]

CONFIG = """
[[hooks]]
name = "gone"
events = ["before_tool_call"]
command = "./scripts/gone.sh"

[[hooks]]
name = "no-handle"
events = ["user_input"]
handler = "scripts/none.py"
on_error = "open"

[[hooks]]
name = "fine"
events = ["before_tool_call"]
handler = "scripts/fine.py"
"""

FINE = """
from interlock import block

def handle(event):
    return block("fine says no")
"""


def _setup(world: World) -> None:
    world.config(world.project, CONFIG)
    world.write(world.project / "scripts" / "fine.py", FINE)
    world.write(world.project / "scripts" / "none.py", "def hande(event):\n    return None\n")


def _tool(reg) -> object:
    return fire(reg.engine, "before_tool_call", tool_name="terminal", args={"command": "ls"})


@pytest.mark.parametrize("how", ["argument", "env"])
def test_accept_hooks_refuses_the_hooks_that_cannot_run_and_says_why(
        world: World, how: str, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    _setup(world)
    if how == "env":
        monkeypatch.setenv("INTERLOCK_ACCEPT_HOOKS", "1")
    with caplog.at_level(logging.WARNING, logger="interlock.registry"):
        reg = world.registry(accept=how == "argument")
        reg.load()
    assert reg.last_error is None
    approved = {e.qualified_name: e.approved for e in reg.hooks}
    assert approved == {"project:gone": False, "project:no-handle": False,
                        "project:fine": True}
    assert "not approving project:gone" in caplog.text
    assert "gone.sh does not exist" in caplog.text
    assert "defines no handle(event) function" in caplog.text
    assert not reg.trust.approved(reg.entry("gone").key, reg.entry("gone").digest)
    # The rest of the config works; the refused fail-closed one blocks as unapproved.
    out = _tool(reg)
    assert out.verdict is Verdict.BLOCK
    assert "unapproved" in (out.reason or "")
    assert fire(reg.engine, "user_input", text="hi").verdict is Verdict.NONE


def test_registry_approve_refuses_a_named_hook_that_cannot_run(world: World) -> None:
    """What the console's approve button calls."""
    _setup(world)
    reg = world.registry()
    reg.load()
    with pytest.raises(ConfigError) as info:
        reg.approve(["gone"], by="console:admin")
    assert "gone.sh does not exist" in str(info.value)
    assert info.value.file == str(world.project / "config.toml")
    assert not reg.entry("gone").approved
    assert reg.approve(["fine"], by="console:admin") == ["project:fine"]
    assert _tool(reg).verdict is Verdict.BLOCK


def test_registry_approve_all_approves_what_can_run_and_logs_the_rest(
        world: World, caplog: pytest.LogCaptureFixture) -> None:
    _setup(world)
    reg = world.registry()
    reg.load()
    with caplog.at_level(logging.WARNING, logger="interlock.registry"):
        done = reg.approve()
    assert done == ["project:fine"]
    assert "gone.sh does not exist" in caplog.text
    assert {e.qualified_name for e in reg.hooks if e.approved} == {"project:fine"}
