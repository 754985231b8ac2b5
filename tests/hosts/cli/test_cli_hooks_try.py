"""`interlock hooks test`: an example payload to start from, a payload on stdin, and
which hooks did not run on the event, and why."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from helpers.cfg import GUARD, World, run, world
from interlock.hosts.cli import build_app

__all__ = ["world"]

HOOKS = '''
[[hooks]]
name = "term"
events = ["before_tool_call"]
matcher = "terminal"
handler = "guard.py"

[[hooks]]
name = "off"
events = ["before_tool_call"]
handler = "guard.py"
enabled = false

[[hooks]]
name = "prompt"
events = ["user_input"]
handler = "guard.py"

[[hooks]]
name = "waiting"
events = ["before_tool_call"]
handler = "guard.py"
on_error = "open"
'''


def _project(world: World) -> None:
    world.write(world.project / "guard.py", GUARD)
    world.config(world.project, HOOKS)
    code, _, err = run(world, "approve", "term")
    assert code == 0, err


def test_example_prints_a_payload_that_test_reads_back(world: World) -> None:
    code, out, _ = run(world, "test", "before_tool_call", "--tool", "terminal", "--example")
    assert code == 0
    example = json.loads(out)
    assert example["tool_name"] == "terminal"
    assert example["args"] == {"command": "ls -la"}
    world.write(world.home / "guard.py", GUARD)
    world.config(world.home, '[[hooks]]\nname = "g"\nevents = ["before_tool_call"]\n'
                             'handler = "guard.py"\n')
    example["args"]["command"] = "rm -rf build"
    payload = world.write(world.root / "p.json", json.dumps(example))
    _, out, _ = run(world, "test", "before_tool_call", "--payload-file", str(payload))
    assert "block by user:g: no rm" in out


def test_example_of_an_unknown_event_suggests_the_name(world: World) -> None:
    code, _, err = run(world, "test", "befor_tool_call", "--example")
    assert code == 2
    assert "did you mean 'before_tool_call'" in err


def test_a_payload_from_stdin(world: World) -> None:
    world.write(world.home / "guard.py", GUARD)
    world.config(world.home, '[[hooks]]\nname = "g"\nevents = ["before_tool_call"]\n'
                             'handler = "guard.py"\n')
    runner = CliRunner()
    result = runner.invoke(build_app(), ["hooks", "test", "before_tool_call", "--payload-file",  # type: ignore[arg-type]
                                         "-", "-C", str(world.root)],
                           input='{"args": {"command": "rm -rf /"}}')
    assert "block by user:g: no rm" in result.stdout
    bad = runner.invoke(build_app(), ["hooks", "test", "before_tool_call", "--payload-file",  # type: ignore[arg-type]
                                      "-", "-C", str(world.root)], input="[1]")
    assert bad.exit_code == 2
    assert "<stdin>: the payload must be a JSON object" in bad.stderr


def test_the_hooks_that_did_not_run_say_why(world: World) -> None:
    _project(world)
    code, out, _ = run(world, "test", "before_tool_call", "--tool", "read_file", "--json")
    assert code == 0
    why = {item["hook"]: item["why"] for item in json.loads(out)["not_run"]}
    assert why["project:term"] == "matcher 'terminal' does not match 'read_file'"
    assert why["project:off"].startswith("disabled")
    assert why["project:prompt"] == "listens to user_input, not before_tool_call"
    assert why["project:waiting"].startswith("not approved")
    _, out, _ = run(world, "test", "before_tool_call", "--tool", "read_file")
    assert "    project:term: matcher 'terminal' does not match 'read_file'" in out
    assert "project:prompt" not in out  # other events are a count in text
    assert "other hook(s) listen to other events" in out


def test_the_project_s_permission_rules_apply_after_the_hooks(world: World) -> None:
    """What every host answers (docs/one-policy.md, Permission rules). Before: a call
    a deny rule refuses everywhere showed `none` here, as if nothing guarded it."""
    world.config(world.project, '[[permissions]]\ntool = "terminal"\npattern = "rm *"\n'
                                'action = "deny"\n')
    payload = world.write(world.root / "p.json", json.dumps(
        {"tool_name": "terminal", "args": {"command": "bash -c 'rm -rf build'"}}))
    code, out, _ = run(world, "test", "before_tool_call", "--payload-file", str(payload))
    assert code == 0
    assert out.splitlines()[0] == "before_tool_call: block by permissions: " \
                                  "a permission rule denies it"
    code, out, _ = run(world, "test", "before_tool_call", "--payload-file", str(payload),
                       "--json")
    assert (json.loads(out)["decision"], json.loads(out)["hook"]) == ("block", "permissions")
    payload.write_text(json.dumps({"tool_name": "terminal", "args": {"command": "ls"}}))
    code, out, _ = run(world, "test", "before_tool_call", "--payload-file", str(payload))
    assert out.splitlines()[0] == "before_tool_call: none"
