"""The `interlock` command line.

Each command lives in its own module of this package and exposes
``register(app)``; :data:`COMMANDS` lists them (a static list: scanning the
package with pkgutil cost every start ~15 ms, and a test keeps the list equal to
the package's files). A command imports its heavy dependencies inside the
function that runs it, so `interlock --help` and unrelated commands stay fast.
"""

from __future__ import annotations

import importlib
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the bridge's start; the bridge goes through main()
    from typing import Any

COMMANDS = ("audit", "bridge_install", "chat", "deadletter", "demo", "events", "ext", "hooks",
            "init", "mcp", "policy", "replay", "run", "serve", "status", "store")
NAMES = {"bridge": "bridge_install"}
"""The command a module registers where its name is not the module's."""


def build_app(only: str | None = None) -> object:
    """The whole command tree, or with ``only`` just that top-level command: building
    typer's parameters costs every start about 5 ms per command module, so a
    command's run builds only its own (`--help` and completion build them all)."""
    _import_typer_plain()
    import typer

    from interlock.hosts.cli._help import ABOUT

    app = typer.Typer(
        name="interlock",
        help=ABOUT,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},  # as ruff and uv take
    )

    def _version(value: bool) -> None:
        if value:
            from importlib.metadata import version

            typer.echo(f"interlock {version('interlock')}")
            raise typer.Exit()

    @app.callback()
    def _root(
        version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                     help="Print the version and exit."),
    ) -> None:
        """Lifecycle hooks for LLM agents: watch, rewrite or stop what agents do."""

    for name in COMMANDS if only is None else (NAMES.get(only, only),):
        module = importlib.import_module(f"{__name__}.{name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(app)
    _short_helps(app)
    return app


def _short_helps(app: object) -> None:
    """Each top-level command lists with its summary from the one table that
    `interlock --help` prints without building the tree."""
    import typer.main

    from interlock.hosts.cli._help import SUMMARIES

    for command in app.registered_commands:  # type: ignore[attr-defined]
        name = command.name or typer.main.get_command_name(command.callback.__name__)
        command.short_help = SUMMARIES[name]
    for group in app.registered_groups:  # type: ignore[attr-defined]
        group.short_help = SUMMARIES[group.name or group.typer_instance.info.name]


def _import_typer_plain() -> None:
    """Import typer with its rich help formatting off: rich's help costs about half of
    `interlock --help`'s start and prints ``<bool>`` placeholders and boxes that wrap
    at 80 columns; click's plain help folds to the terminal. The variable is read
    once, at import, and is not left behind for the processes we start."""
    import os

    if "typer" in sys.modules or "TYPER_USE_RICH" in os.environ:
        return
    os.environ["TYPER_USE_RICH"] = "0"
    try:
        import typer.core  # noqa: F401
    finally:
        del os.environ["TYPER_USE_RICH"]


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["bridge"] and args[1:2] != ["install"]:
        # A bridge runs on every host tool call: its import path loads no CLI framework.
        from interlock.hosts.cli._fast import run_bridge

        sys.exit(run_bridge(args[1:]))
    if args in (["--help"], ["-h"]):
        from interlock.hosts.cli._help import print_help

        sys.exit(print_help())
    first = args[0] if args else ""
    known = NAMES.get(first, first) in COMMANDS
    app = build_app(first if known else None)
    command_tree(app)(args=args, prog_name="interlock")


def command_tree(app: object) -> Any:
    """The click command typer builds for ``app``, each option that takes a plain
    value showing its name as the placeholder (``--tool TOOL``), not the type
    typer shows (``--tool <str>``)."""
    import typer.main

    root = typer.main.get_command(app)  # type: ignore[arg-type]
    todo = [root]
    while todo:
        command = todo.pop()
        todo.extend(getattr(command, "commands", {}).values())
        for param in command.params:
            if (param.param_type_name == "option" and param.metavar is None
                    and param.type.name in _PLAIN and param.name):
                param.metavar = param.name.upper()
    return root


_PLAIN = frozenset({"str", "text", "string", "int", "integer", "float"})
