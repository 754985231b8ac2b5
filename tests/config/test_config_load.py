"""Config files, HOOK.md folders and their errors (file, line, field, fix)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from helpers.cfg import GUARD, World, world
from interlock import ConfigError, Verdict
from interlock.config.refs import resolve_command
from interlock.engine.errors import FailureMode
from interlock.testing import RecordingSink, fire

__all__ = ["world"]


def rm(reg_engine) -> object:
    return fire(reg_engine, "before_tool_call", tool_name="terminal", args={"command": "rm -rf x"})


def test_user_hook_folder_with_python_handler_runs_in_process(world: World) -> None:
    folder = world.home / "hooks" / "no-rm"
    world.write(folder / "HOOK.md", """
        +++
        description = "Refuses rm"
        events = ["before_tool_call"]
        handler = "handler.py"
        matcher = "terminal"
        +++
        # no-rm
        Blocks rm in terminal commands.
        """)
    world.write(folder / "handler.py", GUARD)
    reg = world.registry()
    reg.load()
    [entry] = reg.hooks
    assert entry.qualified_name == "user:no-rm"
    assert entry.state == "active"
    assert entry.declared.docs.startswith("# no-rm")
    out = rm(reg.engine)
    assert out.verdict is Verdict.BLOCK
    assert out.reason == "no rm"
    ok = fire(reg.engine, "before_tool_call", tool_name="read_file", args={"command": "rm"})
    assert ok.verdict is Verdict.NONE  # matcher is anchored on the tool name


def test_yaml_front_matter_and_hook_yaml_with_handler(world: World) -> None:
    a = world.home / "hooks" / "a"
    world.write(a / "HOOK.md", """
        ---
        events: [before_tool_call]
        handler: handler.py
        ---
        docs
        """)
    world.write(a / "handler.py", GUARD)
    b = world.home / "hooks" / "b"
    world.write(b / "HOOK.yaml", "events: [user_input]\n")
    world.write(b / "handler.py", """
        async def handle(event):
            from interlock import context
            return context("hello from b")
        """)
    reg = world.registry()
    reg.load()
    assert sorted(e.qualified_name for e in reg.hooks) == ["user:a", "user:b"]
    assert rm(reg.engine).verdict is Verdict.BLOCK
    out = fire(reg.engine, "user_input", text="hi")
    assert out.context_text()
    assert "hello from b" in out.context_text()


def _err(world: World, text: str, name: str = "config.toml") -> ConfigError:
    world.config(world.home, text, name)
    with pytest.raises(ConfigError) as info:
        world.registry().load()
    return info.value


def test_unknown_event_gets_did_you_mean_with_file_and_line(world: World) -> None:
    err = _err(world, """
        [[hooks]]
        name = "guard"
        handler = "g.py"
        events = ["before_tool_cal"]
        """)
    assert err.file
    assert err.file.endswith("config.toml")
    assert err.line == 4
    assert err.field == "events[0]"
    assert err.fix
    assert "before_tool_call" in err.fix
    assert "unknown event" in str(err)


def test_another_systems_event_name_points_at_ours(world: World) -> None:
    err = _err(world, """
        [[hooks]]
        name = "guard"
        command = "true"
        events = ["PreToolUse"]
        """)
    assert err.fix
    assert "before_tool_call" in err.fix


def test_dialect_event_names_are_accepted_for_that_dialect(world: World) -> None:
    world.config(world.home, """
        [[hooks]]
        name = "m"
        command = "true"
        dialect = "moltis"
        events = ["BeforeToolCall"]
        """)
    reg = world.registry()
    reg.load()
    assert reg.hooks[0].declared.events == ("before_tool_call",)


def test_unknown_field_did_you_mean(world: World) -> None:
    err = _err(world, """
        [[hooks]]
        name = "guard"
        events = ["before_tool_call"]
        handler = "g.py"
        timout = 5
        """)
    assert err.line == 5
    assert err.field == "timout"
    assert err.fix
    assert "'timeout'" in err.fix


def test_wrong_type_names_line_field_and_fix(world: World) -> None:
    err = _err(world, """
        [[hooks]]
        name = "one"
        events = ["before_tool_call"]
        handler = "g.py"

        [[hooks]]
        name = "two"
        events = ["before_tool_call"]
        handler = "g.py"
        timeout = "ten"
        """)
    assert err.line == 10
    assert err.field == "timeout"
    assert err.fix == "write a number without quotes"


def test_yaml_errors_have_lines(world: World) -> None:
    err = _err(world, """
        hooks:
          - name: guard
            events: [before_tool_call]
            handler: g.py
            on_error: sometimes
        """, "config.yaml")
    assert err.line == 5
    assert err.field == "on_error"


def test_toml_syntax_error_has_line(world: World) -> None:
    err = _err(world, """
        [[hooks]]
        name = "guard
        """)
    assert err.line == 2
    assert "TOML" in err.message


def test_missing_command_and_handler_says_how(world: World) -> None:
    err = _err(world, """
        [[hooks]]
        name = "guard"
        events = ["before_tool_call"]
        """)
    assert err.field == "command"
    assert err.fix
    assert "command" in err.fix


def test_modifies_on_event_without_mutable_fields(world: World) -> None:
    err = _err(world, """
        [[hooks]]
        name = "g"
        events = ["task_created"]
        command = "true"
        modifies = true
        """)
    assert err.field == "modifies"
    assert err.line == 5


def test_timeout_default_and_cap(world: World) -> None:
    world.config(world.home, """
        [[hooks]]
        name = "slow"
        events = ["before_tool_call"]
        command = "true"
        timeout = 5000

        [[hooks]]
        name = "plain"
        events = ["before_tool_call"]
        command = "true"
        """)
    reg = world.registry(accept=True)
    reg.load()
    hooks = {e.definition.name: e.hook for e in reg.hooks}
    # The timeout bounds one attempt (the reliability wrapper's policy); the
    # engine's outer bound is the whole budget plus a grace second.
    from interlock.reliability import GRACE

    assert hooks["slow"] is not None
    assert hooks["slow"].executor.policy.timeout == 600  # type: ignore[union-attr]
    assert hooks["slow"].timeout == 600 + GRACE
    assert hooks["plain"] is not None
    assert hooks["plain"].executor.policy.timeout == 60  # type: ignore[union-attr]
    assert hooks["plain"].timeout == 60 + GRACE


def test_requirements_use_real_os_names(world: World) -> None:
    other = "windows" if sys.platform != "win32" else "linux"
    here = "macos" if sys.platform == "darwin" else "linux"
    world.config(world.home, f"""
        [[hooks]]
        name = "elsewhere-closed"
        events = ["before_tool_call"]
        handler = "g.py"
        requires = {{ os = ["{other}"] }}

        [[hooks]]
        name = "elsewhere-open"
        events = ["before_tool_call"]
        handler = "g.py"
        on_error = "open"
        requires = {{ os = ["{other}"], bins = ["no-such-binary-xyz"], env = ["NO_SUCH_VAR_XYZ"] }}

        [[hooks]]
        name = "here"
        events = ["user_input"]
        handler = "g.py"
        requires = {{ os = ["{here}"] }}
        """)
    world.write(world.home / "g.py", "def handle(event):\n    return None\n")
    sink = RecordingSink()
    reg = world.registry(sink=sink)
    reg.load()
    by = {e.definition.name: e for e in reg.hooks}
    assert by["here"].eligible
    assert by["here"].state == "active"
    closed, opened = by["elsewhere-closed"], by["elsewhere-open"]
    assert not closed.eligible
    assert other in closed.why
    assert closed.state.startswith("blocking")
    assert not opened.eligible
    assert opened.hook is None
    assert "no-such-binary-xyz" in opened.why
    assert "NO_SUCH_VAR_XYZ" in opened.why
    out = rm(reg.engine)
    assert out.verdict is Verdict.BLOCK  # an ineligible fail-closed hook blocks what it guards
    assert sink.failures[-1].mode is FailureMode.INELIGIBLE


def test_unknown_os_name_is_an_error(world: World) -> None:
    err = _err(world, """
        [[hooks]]
        name = "g"
        events = ["before_tool_call"]
        handler = "g.py"
        requires = { os = ["mac"] }
        """)
    assert err.field == "requires.os[0]"


def test_relative_paths_resolve_from_the_declaring_folder(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "check.sh").write_text("#!/bin/sh\n")
    (tmp_path / "data.json").write_text("{}")
    cmd, files = resolve_command("./scripts/check.sh --data ./data.json | jq .", tmp_path)
    assert isinstance(cmd, str)
    assert cmd.startswith(str(tmp_path / "scripts" / "check.sh"))
    assert str(tmp_path / "data.json") in cmd
    assert cmd.endswith("| jq .")
    assert set(files) == {tmp_path / "scripts" / "check.sh", tmp_path / "data.json"}
    argv, _ = resolve_command(["python3", "./data.json", "./missing"], tmp_path)
    assert argv == ["python3", str(tmp_path / "data.json"), "./missing"]


def test_handler_import_error_names_the_file_and_line(world: World) -> None:
    folder = world.home / "hooks" / "bad"
    world.write(folder / "HOOK.yaml", "events: [user_input]\n")
    world.write(folder / "handler.py", "x = 1\nraise RuntimeError('boom')\n")
    reg = world.registry()
    reg.load()  # one hook that does not load fails that hook, not the config
    [entry] = reg.hooks
    assert entry.load_error is not None
    assert entry.load_error.file == str(folder / "handler.py")
    assert entry.load_error.line == 2
    assert "boom" in str(entry.load_error)


def test_duplicate_names_in_one_place(world: World) -> None:
    err = _err(world, """
        [[hooks]]
        name = "g"
        events = ["user_input"]
        handler = "g.py"

        [[hooks]]
        name = "g"
        events = ["user_input"]
        handler = "g.py"
        """)
    assert err.line == 6
    assert "twice" in err.message


def test_permissions_are_read_in_source_order(world: World) -> None:
    world.config(world.managed, """
        [[permissions]]
        tool = "terminal"
        pattern = "rm *"
        action = "deny"
        """)
    world.config(world.project, """
        [[permissions]]
        tool = "terminal"
        pattern = "git *"
        action = "allow"
        """)
    reg = world.registry(accept=True)  # a project's allow rule applies once approved
    reg.load()
    rules = reg.permissions
    assert [r.action for r in rules] == ["deny", "allow"]
    assert rules[0].source.startswith("managed:")
    assert rules[1].matches("terminal", "git status")
    assert not rules[1].matches("terminal", "rm -rf /")
    assert not rules[1].matches("read_file", "git x")


def test_another_agents_layout_points_at_import(world: World) -> None:
    err = _err(world, """
        hooks:
          pre_tool_call:
            - command: ./scan.sh
        """, "config.yaml")
    assert err.line == 1
    assert err.fix
    assert "interlock hooks import" in err.fix


def test_a_matcher_on_an_event_without_a_subject_names_the_field(world: World) -> None:
    err = _err(world, """
        [[hooks]]
        name = "greet"
        handler = "g.py"
        events = ["session_start"]
        matcher = "terminal"
        """)
    assert err.field == "matcher"
    assert err.file is not None
    assert err.file.endswith("config.toml")
    assert "session_start has none" in str(err)
    assert err.fix
    assert "fields" in err.fix
