"""A Python hook's crash names the file and line of the hook's own frame."""

from __future__ import annotations

import inspect
import json

from helpers.cfg import World, run, world
from interlock import Engine
from interlock.testing import fire

__all__ = ["world"]

HANDLER = """\
def helper(args):
    return args["cmd"]


def handle(event):
    return helper(event.args)
"""


def test_hooks_test_shows_the_handler_file_and_line(world: World) -> None:
    handler = world.write(world.home / "pyguard.py", HANDLER)
    world.config(world.home, '[[hooks]]\nname = "pyguard"\nevents = ["before_tool_call"]\n'
                             'handler = "pyguard.py"\n')
    code, out, _ = run(world, "test", "before_tool_call", "--tool", "terminal", "--json")
    assert code == 0
    error = json.loads(out)["hooks"][0]["error"]
    assert f"raised KeyError: 'cmd' (at {handler.resolve()}:2)" in error
    code, out, _ = run(world, "test", "before_tool_call", "--tool", "terminal")
    assert f"(at {handler.resolve()}:2)" in out


def test_the_engine_failure_text_names_the_raising_line() -> None:
    engine = Engine()

    def broken(event):
        return {"a": 1}["b"]

    line = inspect.getsourcelines(broken)[1] + 1
    engine.on("before_tool_call", broken, name="broken")
    try:
        outcome = fire(engine, "before_tool_call", tool_name="terminal")
        error = outcome.to_dict(None)["hooks"][0]["error"]
    finally:
        engine.close()
    assert error.endswith(f"(at {__file__}:{line})")
