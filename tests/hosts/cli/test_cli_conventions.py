"""What users of ruff, uv and pre-commit expect of a CLI: --version, completion,
--json on every verb that reports, help on every option, errors that name the fix."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from helpers.cfg import GUARD, World, run, world
from interlock.hosts.cli import build_app

__all__ = ["world"]


def _commands(c: Any, path: list[str]) -> list[tuple[str, Any]]:
    if hasattr(c, "commands"):
        return [x for name, sub in c.commands.items() for x in _commands(sub, [*path, name])]
    return [(" ".join(path), c)]


def test_every_option_of_every_command_has_help() -> None:
    root = typer.main.get_command(build_app())  # type: ignore[arg-type]
    missing = [(name, p.opts) for name, c in _commands(root, []) for p in c.params
               if p.param_type_name == "option" and not p.help]
    assert missing == []


def test_shell_completion_is_on() -> None:
    result = CliRunner().invoke(build_app(), ["--help"])  # type: ignore[arg-type]
    assert "--install-completion" in result.output
    assert "--show-completion" in result.output


def test_reporting_verbs_accept_json(world: World) -> None:
    world.write(world.home / "guard.py", GUARD)
    world.config(world.home, '[[hooks]]\nname = "g"\nevents = ["before_tool_call"]\n'
                             'handler = "guard.py"\n')
    code, out, _ = run(world, "validate", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["ok"] is True
    assert data["hooks"] == 1
    code, out, _ = run(world, "info", "g", "--json")
    assert json.loads(out)["name"] == "user:g"
    code, out, _ = run(world, "doctor", "--json")
    checks = {f["check"] for f in json.loads(out)["findings"]}
    assert {"smoke", "sandbox"} <= checks
    code, out, _ = run(world, "approve", "--all", "--json")
    assert code == 0
    assert json.loads(out) == {"approved": [], "refused": []}


def test_hooks_info_prints_the_declaring_file_once_with_its_line(world: World) -> None:
    script = world.write(world.project / "check.sh", "#!/bin/sh\nexit 0\n", mode=0o755)
    config = world.config(world.project, '[[hooks]]\nname = "c"\n'
                                         'events = ["before_tool_call"]\n'
                                         'command = "./check.sh"\n')
    code, out, _ = run(world, "info", "c")
    assert code == 0
    lines = out.splitlines()
    assert [x.strip() for x in lines if x.strip().startswith("file:")] == [f"file: {config}:1"]
    assert f"files: {script}" in [x.strip() for x in lines]


def test_a_bad_enum_value_names_the_allowed_values(world: World) -> None:
    world.config(world.project, '[[hooks]]\nname = "c"\nevents = ["before_tool_call"]\n'
                                'command = "true"\non_error = "clsoed"\n')
    code, _, err = run(world, "validate")
    assert code == 2
    assert "config.toml:5: on_error:" in err
    assert "use one of: open, closed (did you mean 'closed'?)" in err


def _cli(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    import os

    env = {**os.environ, "INTERLOCK_HOME": str(home), "INTERLOCK_STATE_DIR": str(home / "s"),
           "INTERLOCK_MANAGED": str(home / "managed")}
    return subprocess.run([sys.executable, "-m", "interlock", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_run_json_is_one_object_with_each_decision(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(
        "- text: working\n  tool_calls:\n    - {name: terminal, args: {command: 'ls'}}\n"
        "- text: finished\n")
    proc = _cli(tmp_path, tmp_path / "home", "run", "-m", "scripted:s.yaml", "--deny",
                "terminal", "--json", "hi")
    data = json.loads(proc.stdout)
    assert data["status"] == "completed"
    assert data["text"] == "finished"
    assert [d["kind"] for d in data["decisions"]] == ["blocked"]
    assert data["decisions"][0]["tool"] == "terminal"


def test_serve_token_list_accepts_json(tmp_path: Path) -> None:
    proc = _cli(tmp_path, tmp_path / "home", "serve", "token", "list", "--json",
                "--project", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert isinstance(json.loads(proc.stdout), list | dict)


@pytest.mark.slow
def test_ext_list_says_failed_for_an_extension_that_cannot_load(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ext = tmp_path / "broken"
    ext.mkdir()
    (ext / "extension.toml").write_text('name = "broken"\nmodule = "broken"\n')
    (ext / "broken.py").write_text("raise RuntimeError('cannot load')\n")
    assert _cli(tmp_path, home, "ext", "install", str(ext), "--yes").returncode == 0
    proc = _cli(tmp_path, home, "ext", "list", "--json")
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert rows["broken"]["status"] == "failed"
    assert "cannot load" in rows["broken"]["message"]
    removed = _cli(tmp_path, home, "ext", "remove", "broken", "--yes")
    assert removed.returncode == 0, removed.stderr
    assert "removed broken" in removed.stdout


def test_the_static_command_list_is_every_command_module() -> None:
    import interlock.hosts.cli as cli

    package = Path(cli.__file__).parent
    modules = sorted(p.stem for p in package.glob("*.py") if not p.stem.startswith("_"))
    assert list(cli.COMMANDS) == modules
    for name in modules:
        source = (package / f"{name}.py").read_text(encoding="utf-8")
        assert "def register(app" in source, name


def test_help_is_plain_and_loads_neither_rich_nor_pkgutil() -> None:
    # A command's help comes from the command tree (top-level --help is test_cli_help.py's).
    probe = ("import sys\nfrom interlock.hosts.cli import main\ntry:\n"
             "    main(['hooks', 'list', '--help'])\n"
             "except SystemExit:\n    pass\n"
             "import os\nprint('env:', os.environ.get('TYPER_USE_RICH'))\n"
             "print('loaded:', sorted(m for m in ('rich', 'pkgutil') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, env={**__import__("os").environ, "COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip().endswith("loaded: []")
    assert "<bool>" not in proc.stdout
    assert "╭" not in proc.stdout
    assert max(len(line) for line in proc.stdout.splitlines()) <= 80
    assert "env: None" in proc.stdout  # not left behind for the processes we start


@pytest.mark.parametrize("args", [["-h"], ["hooks", "-h"], ["hooks", "test", "-h"]])
def test_dash_h_is_help_as_in_ruff_and_uv(args: list[str], tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "interlock", *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: interlock")
    long = subprocess.run([sys.executable, "-m", "interlock", *args[:-1], "--help"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert done.stdout == long.stdout


def test_no_help_shows_a_type_placeholder_for_a_value() -> None:
    """`--tool <str>` says nothing; `--tool TOOL` says what goes there."""
    import re

    from interlock.hosts.cli import command_tree

    root = command_tree(build_app())
    shown = []
    for name, command in _commands(root, []):
        ctx = command.context_class(command, info_name=name)
        shown += [(name, record[0]) for p in command.params
                  if (record := p.get_help_record(ctx)) is not None
                  and re.search(r"<(str|int|float|text|integer)>", record[0])]
    assert shown == []
    done = subprocess.run([sys.executable, "-m", "interlock", "hooks", "test", "--help"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert "--tool TOOL" in done.stdout
