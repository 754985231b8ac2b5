"""`interlock demo`: the offline demo (no network, no API key)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command("demo")
    def demo_cmd() -> None:
        """Fire a short scripted run's events through three policy hooks and show each step."""
        from interlock.demo import run_demo

        raise SystemExit(run_demo())
