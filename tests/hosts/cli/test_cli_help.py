"""`interlock --help` is printed from a table without building the command tree;
the tree takes its summaries from the same table, and these tests keep the two
equal (bench/cli.py measures the start)."""

from __future__ import annotations

import os
import subprocess
import sys

import typer.main

import interlock.hosts.cli as cli
from interlock.hosts.cli import _help


def _tree():
    group = typer.main.get_command(cli.build_app())  # type: ignore[arg-type]
    ctx = group.context_class(group, **group.context_settings)
    return group, ctx


def test_the_table_lists_every_command_and_option_the_tree_has() -> None:
    group, ctx = _tree()
    listed = {name: group.get_command(ctx, name).get_short_help_str(10_000)
              for name in group.list_commands(ctx)}
    assert listed == _help.SUMMARIES
    assert list(listed) == list(_help.SUMMARIES)
    options = {param.get_help_record(ctx)[0]: param.help for param in group.get_params(ctx)}
    assert options == _help.OPTIONS
    assert group.help == _help.ABOUT


def _run(args: list[str], columns: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run([sys.executable, "-c", "from interlock.hosts.cli import main; main()",
                           *args], capture_output=True, text=True, env=env, timeout=60)


def test_fast_help_reads_as_the_trees_own_help_and_loads_no_framework() -> None:
    code = ("import sys\nfrom interlock.hosts.cli import main\n"
            "try:\n    main(['--help'])\n"
            "finally:\n    print(sorted({m.split('.')[0] for m in sys.modules} "
            "& {'typer', 'click', 'rich', 're'}), file=sys.stderr)\n")
    fast = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "80"}, timeout=60)
    assert fast.returncode == 0
    assert fast.stderr.strip().splitlines()[-1] == "[]", fast.stderr
    tree = _run([], 80)  # no arguments: the tree prints its help (on stderr, exit 2)
    assert tree.stdout + tree.stderr == fast.stdout
    assert "store       Check, export and repair" in fast.stdout


def test_fast_help_folds_to_the_terminal() -> None:
    for columns in (50, 64, 80, 120):
        text = _help.render(max(min(columns, 80) - 2, 50))
        assert max(len(line) for line in text.splitlines()) <= max(min(columns, 80) - 2, 50)
        words = " ".join(text.split())
        for summary in _help.SUMMARIES.values():
            assert " ".join(summary.split()) in words
