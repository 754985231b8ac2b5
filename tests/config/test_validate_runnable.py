"""`hooks validate` and `hooks approve` catch hooks that cannot run, as doctor does:
missing or non-executable scripts, handlers that are missing or do not compile."""

from __future__ import annotations

import json

from helpers.cfg import World, run, world

__all__ = ["world"]

BROKEN = """
[[hooks]]
name = "gone"
events = ["before_tool_call"]
command = "./scripts/gone.sh"

[[hooks]]
name = "gone-arg"
events = ["before_tool_call"]
command = ["python3", "./scripts/gone.py"]

[[hooks]]
name = "not-exec"
events = ["before_tool_call"]
command = "./scripts/plain.sh"

[[hooks]]
name = "bad-syntax"
events = ["before_tool_call"]
handler = "scripts/bad.py"

[[hooks]]
name = "no-handler"
events = ["before_tool_call"]
handler = "scripts/none.py"

[[hooks]]
name = "fine"
events = ["before_tool_call"]
command = "./scripts/fine.sh"
"""


def _setup(world: World) -> None:
    world.config(world.project, BROKEN)
    world.write(world.project / "scripts" / "plain.sh", "#!/bin/sh\nexit 0\n", mode=0o644)
    world.write(world.project / "scripts" / "fine.sh", "#!/bin/sh\nexit 0\n", mode=0o755)
    world.write(world.project / "scripts" / "bad.py",
                "from interlock import block\n\ndef handle(event)\n    return None\n")


def test_validate_reports_each_hook_that_cannot_run_with_file_line_field_and_fix(
        world: World) -> None:
    _setup(world)
    code, out, err = run(world, "validate")
    assert code == 2
    assert not out.startswith("ok")
    config = world.project / "config.toml"
    assert f"{config}:1: command: hook 'gone': " in err
    assert "gone.sh does not exist" in err
    assert f"{config}:6: command: hook 'gone-arg': " in err
    assert "gone.py does not exist" in err
    assert f"{config}:11: command: hook 'not-exec': " in err
    assert "plain.sh is not executable (fix: chmod +x" in err
    assert f"{world.project / 'scripts' / 'bad.py'}:3: handler: the handler does not compile" in err
    assert f"{config}:21: handler: hook 'no-handler': handler file" in err
    assert "'fine'" not in err


def test_approve_refuses_the_hooks_that_cannot_run_and_approves_the_rest(world: World) -> None:
    _setup(world)
    code, out, err = run(world, "approve", "--all")
    assert code == 2
    assert out.strip() == "approved: project:fine"
    for name in ("gone", "gone-arg", "not-exec", "bad-syntax", "no-handler"):
        assert f"(project:{name} not approved)" in err
    code, out, _ = run(world, "list", "--json")
    approved = {h["name"]: h["approved"] for h in json.loads(out)["hooks"]}
    assert approved["project:fine"] is True
    assert not any(approved[f"project:{n}"] for n in ("gone", "bad-syntax", "not-exec"))

    code, out, err = run(world, "approve", "bad-syntax")
    assert code == 2
    assert "nothing to approve" in out
    assert "does not compile" in err


def test_validate_passes_once_the_scripts_are_fixed(world: World) -> None:
    world.config(world.project, BROKEN.split('[[hooks]]\nname = "fine"')[0].split(
        "[[hooks]]\nname = \"gone-arg\"")[0])
    code, _, err = run(world, "validate")
    assert code == 2
    world.write(world.project / "scripts" / "gone.sh", "#!/bin/sh\nexit 0\n", mode=0o755)
    code, out, err = run(world, "validate")
    assert code == 0, err
    assert out.startswith("ok: 1 hook(s)")


MISSING_FORMS = """
[[hooks]]
name = "py-script"
events = ["before_tool_call"]
command = ["python3", "hooks/no_rm.py"]

[[hooks]]
name = "py-opts"
events = ["before_tool_call"]
command = ["python3", "-X", "utf8", "-u", "hooks/gone.py", "--flag"]

[[hooks]]
name = "sh-line"
events = ["before_tool_call"]
command = "bash hooks/gone.sh --quiet"

[[hooks]]
name = "no-binary"
events = ["before_tool_call"]
command = "nonexistent-binary-xyz"

[[hooks]]
name = "no-binary-list"
events = ["before_tool_call"]
command = ["nonexistent-binary-xyz", "arg"]

[[hooks]]
name = "fine-script"
events = ["before_tool_call"]
command = ["python3", "hooks/there.py"]

[[hooks]]
name = "fine-module"
events = ["before_tool_call"]
command = ["python3", "-m", "json.tool"]

[[hooks]]
name = "fine-inline"
events = ["before_tool_call"]
command = "bash -c 'cat >/dev/null'"

[[hooks]]
name = "fine-shell"
events = ["before_tool_call"]
command = "cd hooks && exit 0"

[[hooks]]
name = "fine-var"
events = ["before_tool_call"]
command = "$HOME/bin/guard.sh"

[[hooks]]
name = "fine-cwd"
events = ["before_tool_call"]
command = ["sh", "local.sh"]
cwd = "hooks"
"""


def test_validate_finds_a_missing_script_after_an_interpreter_and_a_missing_program(
        world: World) -> None:
    """Relative script words resolve from where the hook runs (the project root, or
    its cwd), as the executor runs them; the first word must be a file or on PATH."""
    world.config(world.project, MISSING_FORMS)
    world.write(world.root / "hooks" / "there.py", "print('{}')\n")
    world.write(world.project / "hooks" / "local.sh", "exit 0\n")  # cwd: from .interlock/
    code, _, err = run(world, "validate")
    assert code == 2
    config = world.project / "config.toml"
    assert f"{config}:1: command: hook 'py-script': {world.root / 'hooks' / 'no_rm.py'} " \
           "does not exist" in err
    assert f"hook 'py-opts': {world.root / 'hooks' / 'gone.py'} does not exist" in err
    assert f"hook 'sh-line': {world.root / 'hooks' / 'gone.sh'} does not exist" in err
    assert "hook 'no-binary': nonexistent-binary-xyz is not a file and not on PATH" in err
    assert "hook 'no-binary-list': nonexistent-binary-xyz is not a file" in err
    assert "relative paths start from the project root" in err
    assert "fine" not in err


def test_approve_refuses_a_missing_script_after_an_interpreter(world: World) -> None:
    world.config(world.project, MISSING_FORMS.split('[[hooks]]\nname = "py-opts"')[0])
    code, _, err = run(world, "approve", "--all")
    assert code == 2
    assert "no_rm.py does not exist" in err
    assert "(project:py-script not approved)" in err


def test_a_program_on_a_relative_path_entry_is_found_from_the_hooks_cwd(
        world: World) -> None:
    """A relative entry of the hook's own env.PATH is looked up from where its process
    runs, as the executor and the approval pins do: the hook can run, so it is fine."""
    world.config(world.project, """
[[hooks]]
name = "own-tool"
events = ["before_tool_call"]
command = "guard-tool"
env = { PATH = "tools:/usr/bin:/bin" }
""")
    world.write(world.root / "tools" / "guard-tool", "#!/bin/sh\nexit 0\n", mode=0o755)
    code, _, err = run(world, "validate")
    assert "not on PATH" not in err
    assert code == 0, err
