"""`interlock demo`: the offline demo (no network, no API key)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command("demo")
    def demo_cmd() -> None:
        """Run the reference agent on a scripted session with three policy hooks, offline."""
        from interlock.hosts.demo import run_demo

        raise SystemExit(run_demo())
