"""A Python handler that compiles but cannot be loaded fails only its own hook,
under its own on_error (docs/configuration.md, Validation and reloads)."""

from __future__ import annotations

import logging

import pytest

from helpers.cfg import GUARD, World, run, world
from interlock import Verdict
from interlock.testing import RecordingSink, fire

__all__ = ["world"]

CONFIG = """
[[hooks]]
name = "broken"
events = ["before_tool_call"]
handler = "broken.py"
on_error = "%s"

[[hooks]]
name = "guard"
events = ["before_tool_call"]
handler = "guard.py"
"""

BROKEN = {
    "import": ("import os\nimport nonexistent_mod_xyz\n\ndef handle(event):\n    return None\n",
               "ModuleNotFoundError: No module named 'nonexistent_mod_xyz'", ":2"),
    "name": ("x = undefined_name\n\ndef handle(event):\n    return None\n",
             "NameError: name 'undefined_name' is not defined", ":1"),
}


def _setup(world: World, what: str, on_error: str) -> None:
    world.config(world.project, CONFIG % on_error)
    world.write(world.project / "broken.py", BROKEN[what][0])
    world.write(world.project / "guard.py", GUARD)


def _tool(reg, command: str) -> object:
    return fire(reg.engine, "before_tool_call", tool_name="terminal", args={"command": command})


@pytest.mark.parametrize("what", sorted(BROKEN))
def test_a_fail_closed_handler_that_does_not_import_blocks_only_what_it_gates(
        world: World, what: str) -> None:
    _setup(world, what, "closed")
    reg = world.registry(accept=True)
    reg.load()  # the config as a whole is valid
    assert reg.last_error is None
    by = {e.qualified_name: e for e in reg.hooks}
    assert by["project:guard"].state == "active"
    assert by["project:broken"].state.startswith("blocking (handler failed to load")
    out = _tool(reg, "ls")
    assert out.verdict is Verdict.BLOCK
    assert out.hook is not None
    assert out.hook.name == "broken"
    _, error, line = BROKEN[what]
    assert error in (out.reason or "")
    assert f"{world.project / 'broken.py'}{line}" in (out.reason or "")
    # No other gate is touched: user_input is not one the hook gates.
    assert fire(reg.engine, "user_input", text="hi").verdict is Verdict.NONE


def test_a_fail_open_handler_that_does_not_import_is_skipped_visibly(
        world: World, caplog: pytest.LogCaptureFixture) -> None:
    _setup(world, "import", "open")
    sink = RecordingSink()
    reg = world.registry(accept=True, sink=sink)
    with caplog.at_level(logging.WARNING, logger="interlock.registry"):
        reg.load()
    assert reg.last_error is None
    assert "nonexistent_mod_xyz" in caplog.text
    by = {e.qualified_name: e for e in reg.hooks}
    assert by["project:broken"].state.startswith("failing (handler failed to load")
    assert _tool(reg, "ls").verdict is Verdict.NONE
    assert _tool(reg, "rm x").verdict is Verdict.BLOCK  # the other hook still guards
    failures = [f for f in sink.failures if f.hook == "project:broken"]
    assert len(failures) == 2  # one per call: never silently dropped
    assert all("nonexistent_mod_xyz" in f.error and not f.fail_closed for f in failures)


def test_fixing_the_handler_brings_the_hook_back(world: World) -> None:
    _setup(world, "import", "closed")
    reg = world.registry(accept=True)
    reg.load()
    assert _tool(reg, "ls").verdict is Verdict.BLOCK
    world.write(world.project / "broken.py", "def handle(event):\n    return None\n")
    assert reg.reload().ok
    assert _tool(reg, "ls").verdict is Verdict.NONE


def test_cli_after_approval_lists_tests_and_validates_with_the_import_error(
        world: World) -> None:
    _setup(world, "import", "closed")
    code, out, err = run(world, "approve", "--all")
    assert code == 0, err
    code, out, err = run(world, "list")
    assert code == 0, err
    assert "no valid hook configuration" not in err
    assert "handler failed to load" in out
    code, out, err = run(world, "test", "before_tool_call", "--tool", "terminal")
    assert "no-valid-config" not in out + err
    assert "block by project:broken" in out or "block by broken" in out
    code, out, err = run(world, "validate")
    assert code == 2
    assert f"{world.project / 'broken.py'}:2" in err
    assert "nonexistent_mod_xyz" in err


def test_a_handler_without_handle_is_refused_by_validate_and_approve(world: World) -> None:
    world.config(world.project, CONFIG % "closed")
    world.write(world.project / "broken.py", "def hande(event):\n    return None\n")
    world.write(world.project / "guard.py", GUARD)
    code, out, err = run(world, "validate")
    assert code == 2
    assert f"{world.project / 'broken.py'}: handler: " in err
    assert "defines no handle(event) function" in err
    code, out, err = run(world, "approve", "--all")
    assert code == 2
    assert "(project:broken not approved)" in err
    assert out.strip() == "approved: project:guard"


@pytest.mark.parametrize("text", [
    "def handle(event):\n    return None\n",
    "async def handle(event):\n    return None\n",
    "from os.path import join as handle\n",
    "handle = print\n",
    "if True:\n    def handle(event):\n        return None\n",
    "try:\n    from x import handle\nexcept ImportError:\n    def handle(event): pass\n",
])
def test_the_static_check_accepts_each_way_of_defining_handle(world: World, text: str) -> None:
    world.config(world.project, CONFIG % "closed")
    world.write(world.project / "broken.py", text)
    world.write(world.project / "guard.py", GUARD)
    _, _, err = run(world, "validate")
    assert "defines no handle" not in err
