"""A command's run builds only its own part of the CLI, and pays for nothing it does
not use (bench/cli.py measures the times)."""

from __future__ import annotations

import subprocess
import sys

import typer.main

import interlock.hosts.cli as cli


def _top_level(app: object) -> set[str]:
    return set(typer.main.get_command(app).commands)  # type: ignore[arg-type,attr-defined]


def test_each_command_builds_alone_under_its_own_name() -> None:
    reverse = {module: name for name, module in cli.NAMES.items()}
    everything = _top_level(cli.build_app())
    for module in cli.COMMANDS:
        name = reverse.get(module, module)
        assert _top_level(cli.build_app(name)) == {name}
    assert everything == {reverse.get(m, m) for m in cli.COMMANDS}


def test_hooks_list_imports_neither_pydantic_nor_rich(tmp_path) -> None:
    code = ("import sys\nfrom interlock.hosts.cli import main\n"
            "try:\n    main(['hooks', 'list', '-C', sys.argv[1]])\n"
            "finally:\n    print(sorted({m.split('.')[0] for m in sys.modules} "
            "& {'pydantic', 'rich'}), file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                          text=True, timeout=60)
    assert done.stderr.strip().splitlines()[-1] == "[]", done.stderr


def test_commands_are_module_level_functions() -> None:
    # Still closures, in areas other work is changing now: serve's options, the
    # bridges' install, the MCP proxy.
    pending = {"serve", "bridge", "mcp"}

    def callbacks(command, path):
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                yield from callbacks(sub, [*path, name])
        elif command.callback is not None:
            yield " ".join(path), command.callback

    root = typer.main.get_command(cli.build_app())  # type: ignore[arg-type]
    nested = [name for name, fn in callbacks(root, [])
              if name.split()[0] not in pending
              and "<locals>" in getattr(fn, "__qualname__", "")]
    assert nested == []
