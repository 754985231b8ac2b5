"""Which files an approval pins, read from a command the way the process runs it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from interlock.config.drift import PinSet, read
from interlock.config.pins import command_pins, folder_pins, walk


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    for rel in ("hooks/x.py", "hooks/lib.py", "hooks/data/rules.toml", "rules.toml",
                "top.py", "other/y.py", "pkg/__init__.py", "pkg/main.py", "bin/tool",
                "notes.txt"):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rel)
    (root / "bin" / "tool").chmod(0o755)
    return root


def pins(root: Path, command: str | list[str], *, cwd: Path | None = None,
         env: dict[str, str] | None = None, **kw: str) -> set[str]:
    pinner = command_pins(command, cwd=cwd or root, root=root, env=env or {}, **kw)
    return {str(p.relative_to(root)) if p.is_relative_to(root) else str(p)
            for p in [*pinner.files, *(Path(f"{d}/") for d in pinner.folders)]}


def test_a_python_script_pins_its_folder_tree(root: Path) -> None:
    assert pins(root, ["python3", "hooks/x.py"]) == {
        "hooks/x.py", "hooks/lib.py", "hooks/data/rules.toml", "hooks", "hooks/data"}


def test_a_script_at_the_root_pins_the_root_modules_and_packages(root: Path) -> None:
    got = pins(root, ["python3", "-u", "top.py"])
    assert {"top.py", "pkg/__init__.py", "pkg/main.py", "pkg"} <= got
    assert "other/y.py" not in got  # nothing imports it
    assert "notes.txt" not in got
    assert "." in got  # the root's modules and packages: a planted one is a change
    listing = read(root.resolve()).sha
    (root / "build").mkdir()  # the project grows: a folder, a file that is no module
    (root / "NEWS").write_text("")
    assert read(root.resolve()).sha == listing
    (root / "json").mkdir()  # a package that would shadow the standard library's json
    (root / "json" / "__init__.pyc").write_bytes(b"")
    assert read(root.resolve()).sha != listing
    (root / "top.py").write_text("import other.y\n")  # a namespace package
    assert {"other/y.py", "other"} <= pins(root, ["python3", "top.py"])


def test_dash_m_pins_the_folder_it_runs_in_and_the_hooks_pythonpath(root: Path) -> None:
    # sys.path[0] is the folder -m runs in: its modules, and the package.
    got = pins(root, ["python3", "-m", "x"], cwd=root / "hooks")
    assert {"hooks/x.py", "hooks/lib.py", "hooks"} <= got
    (root / "lib" / "util.py").parent.mkdir()
    (root / "lib" / "util.py").write_text("")
    assert {"lib/util.py", "lib"} <= pins(root, ["python3", "top.py"], pythonpath="lib")
    assert "lib/util.py" not in pins(root, ["node", "x.js"], pythonpath="lib")  # no Python


def test_a_program_on_a_relative_path_entry_is_found_from_where_it_runs(root: Path) -> None:
    assert "bin/tool" in pins(root, ["tool"], path_env="bin:/usr/bin")


def test_words_in_any_position_and_option_values_are_pinned(root: Path) -> None:
    assert pins(root, ["node", "--rules=rules.toml", "notes.txt", "missing.js"]) == {
        "rules.toml", "notes.txt"}


def test_shell_strings_pin_what_sh_c_runs_and_skip_write_targets(root: Path) -> None:
    got = pins(root, "bash -c 'python3 hooks/x.py < rules.toml' >> notes.txt 2>&1")
    assert "hooks/x.py" in got
    assert "rules.toml" in got  # read: pinned
    assert "notes.txt" not in got  # only written


def test_a_log_inside_the_script_folder_is_not_pinned(root: Path) -> None:
    (root / "hooks" / "x.log").write_text("")
    got = pins(root, "python3 hooks/x.py 2>> hooks/x.log")
    assert "hooks/x.py" in got
    assert "hooks/x.log" not in got


def test_env_prefixes_and_python_m_are_followed(root: Path) -> None:
    got = pins(root, "FOO=1 env BAR=2 python3 -m pkg.main")
    assert {"pkg/__init__.py", "pkg/main.py"} <= got


def test_a_program_on_path_inside_the_project_is_pinned_a_system_one_is_not(root: Path
                                                                          ) -> None:
    path = f"{root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    assert pins(root, ["tool", "x"], path_env=path) == {"bin/tool"}
    assert pins(root, ["sh", "-c", "true"], path_env=path) == set()


def test_odd_words_are_not_files(root: Path) -> None:
    assert pins(root, ["python3", "a\0b", "x" * 5000, "'unbalanced"]) == set()
    assert pins(root, "echo 'unbalanced") == set()


def test_a_hook_folder_pins_what_its_links_reach(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "check.sh").write_text("x")
    folder = tmp_path / "hook"
    folder.mkdir()
    (folder / "HOOK.md").write_text("x")
    (folder / "lib").symlink_to(shared, target_is_directory=True)
    (folder / "loop").symlink_to(folder, target_is_directory=True)
    got = folder_pins(folder)
    assert folder / "lib" / "check.sh" in got
    assert shared / "check.sh" in got  # the target itself
    assert len(walk(folder)) == 2  # the loop is read once


def test_a_pin_set_notices_a_same_size_swap_with_the_mtime_put_back(tmp_path: Path) -> None:
    f = tmp_path / "x.py"
    f.write_text("allow = 0\n")
    os.utime(f, ns=(10**9, 10**9))
    pins = PinSet([read(f)])
    assert pins.drifted() is None
    f.write_text("allow = 1\n")
    os.utime(f, ns=(10**9, 10**9))
    assert pins.drifted() == f
    f.write_text("allow = 0\n")
    assert pins.drifted() is None


def test_a_script_run_directly_pins_its_shebang_interpreter_and_imports(root: Path) -> None:
    venv = root / ".venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python3").write_text("#!/bin/sh\n")
    (root / "hooks" / "x.py").write_text(f"#!{venv / 'python3'}\nimport lib\n")
    (root / "hooks" / "x.py").chmod(0o755)
    got = pins(root, "./hooks/x.py")
    assert {".venv/bin/python3", "hooks/x.py", "hooks/lib.py"} <= got
    (root / "hooks" / "x.py").write_text("#!/usr/bin/env python3\nimport lib\n")
    assert "hooks/lib.py" in pins(root, ["./hooks/x.py"])


def test_a_module_cannot_be_unpinned_by_naming_it_as_a_log(root: Path) -> None:
    got = pins(root, "python3 hooks/x.py 2>> hooks/lib.py >> notes.txt")
    assert "hooks/lib.py" in got
    assert "notes.txt" not in got


def test_a_fifo_in_a_hook_folder_or_in_place_of_its_handler_is_a_change_not_a_hang(
        tmp_path: Path) -> None:
    """Reading a FIFO waits for a writer: a hook folder holding one must still list,
    and an approved handler replaced by one is drift that blocks, naming it."""
    import json
    import subprocess
    import sys

    root = tmp_path / "p"
    folder = root / ".interlock" / "hooks" / "g"
    folder.mkdir(parents=True)
    (folder / "HOOK.md").write_text(
        "---\nname: g\nevents: [before_tool_call]\non_error: closed\n---\nguard\n")
    handler = folder / "handler.py"
    handler.write_text("def handle(e):\n    return None\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERLOCK_")}
    env.update(INTERLOCK_HOME=str(tmp_path / "home"), XDG_RUNTIME_DIR=str(tmp_path),
               INTERLOCK_STORE=str(tmp_path / "il.db"))

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "interlock", *args], cwd=root, env=env,
                              capture_output=True, text=True, timeout=60)

    assert cli("hooks", "approve", "--all").returncode == 0
    os.mkfifo(folder / "pipe")
    listed = cli("hooks", "list", "--json")  # a hang here is the TimeoutExpired
    assert listed.returncode == 0, listed.stderr
    hook = next(h for h in json.loads(listed.stdout)["hooks"] if h["name"] == "project:g")
    assert hook["approved"] is False  # a file appeared in the hook folder

    pins = PinSet([read(handler)])
    handler.unlink()
    os.mkfifo(handler)
    assert read(handler).data is not None
    assert pins.drifted() == handler


def test_a_cd_in_the_command_pins_what_runs_from_that_folder(root: Path) -> None:
    """`cd tools && python3 check.py` runs tools/check.py: pinned, with its tree,
    through `sh -c` as well; words before the cd still resolve from where it ran."""
    expected = {"hooks/x.py", "hooks/lib.py", "hooks"}
    assert expected <= pins(root, "cd hooks && python3 x.py")
    assert expected <= pins(root, "cd ./hooks; exec python3 x.py")
    assert expected <= pins(root, ["sh", "-c", "pushd hooks >/dev/null && python3 x.py"])
    assert "rules.toml" in pins(root, "cat rules.toml && cd hooks && python3 x.py")
    assert "pkg/main.py" in pins(root, "cd hooks/ && cd ../pkg && ./main.py")
    assert expected <= pins(root, ["env", "-C", "hooks", "python3", "x.py"])
    assert expected <= pins(root, "env --chdir=hooks python3 x.py")


def test_a_script_reached_through_a_link_pins_the_folder_python_imports_from(
        root: Path) -> None:
    """Python puts the folder of the script's real path first on sys.path: a helper
    beside the link's target is what `import` finds, so it is pinned."""
    (root / "tools").mkdir()
    (root / "tools" / "run.py").symlink_to(root / "hooks" / "x.py")
    assert {"hooks/x.py", "hooks/lib.py", "hooks"} <= pins(root, "python3 tools/run.py")


def test_files_the_hooks_env_names_are_pinned(root: Path) -> None:
    """`BASH_ENV` is sourced by bash, `LD_PRELOAD` loaded into every program,
    `NODE_OPTIONS=--require` run by node: a file the hook's env names runs too."""
    got = pins(root, "bash -c true", env={"BASH_ENV": "rules.toml",
                                          "LD_PRELOAD": f"{root}/bin/tool:/nowhere.so",
                                          "NODE_OPTIONS": "--require ./top.py"})
    assert {"rules.toml", "bin/tool", "top.py"} <= got
    # A log it names, and only writes to, is still no pin (it changes every call).
    assert "notes.txt" not in pins(root, "echo hi >> $LOG", env={"LOG": "notes.txt"},
                                   variables={"LOG": "notes.txt"})


@pytest.mark.parametrize("command", ["uv run hooks/x.py", "poetry run python3 hooks/x.py",
                                     "pipx run hooks/x.py --fast"])
def test_a_python_script_run_by_a_launcher_pins_its_folder_tree(root: Path,
                                                                command: str) -> None:
    """`uv run x.py` runs Python on it as surely as `python3 x.py` does."""
    assert {"hooks/x.py", "hooks/lib.py", "hooks"} <= pins(root, command)


def test_the_pinned_variables_are_every_one_a_dialect_sets_to_the_project_or_plugin() -> None:
    """A script named through ``$CLAUDE_PROJECT_DIR`` (or any such variable) is pinned
    only if the pinner knows the variable: it must list every one a dialect sets."""
    from interlock.config.pins import PLUGIN_VARIABLES, PROJECT_VARIABLES
    from interlock.engine.hooks import Hook, Invocation
    from interlock.events import BeforeToolCall
    from interlock.executors.dialects import DIALECTS

    hook = Hook(name="h", events=("before_tool_call",), fn=lambda e: None)
    invocation = Invocation(event=BeforeToolCall(tool_name="t"), hook=hook, invocation_id="i")
    for name, dialect in DIALECTS.items():
        env = dialect.env(invocation, project_dir="/the/project", plugin_root="/the/plugin")
        assert {k for k, v in env.items() if v == "/the/project"} <= set(PROJECT_VARIABLES), name
        assert {k for k, v in env.items() if v == "/the/plugin"} <= set(PLUGIN_VARIABLES), name
