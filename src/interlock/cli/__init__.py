"""The `interlock` command line.

Each command lives in its own module of this package and exposes
``register(app)``. Modules are discovered, so a new command is a new file and
never an edit to another command's file. A command imports its heavy
dependencies inside the function that runs it, so `interlock --help` and
unrelated commands stay fast.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys


def build_app() -> object:
    import typer

    app = typer.Typer(
        name="interlock",
        help="Lifecycle hooks for LLM agents: watch, rewrite or stop what agents do.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
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

    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(app)
    return app


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["bridge"] and args[1:2] != ["install"]:
        # The bridge's import path loads no CLI framework (DESIGN.md, Performance).
        from interlock.cli._fast import run_bridge

        sys.exit(run_bridge(args[1:]))
    app = build_app()
    app(args=args, prog_name="interlock")  # type: ignore[operator]
