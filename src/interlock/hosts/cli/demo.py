"""`interlock demo`: the offline demo (no network, no API key)."""

import typer


def demo_cmd() -> None:
    """Run the reference agent on a scripted session with three policy hooks, offline."""
    from interlock.hosts.demo import run_demo

    raise SystemExit(run_demo())


def register(app: typer.Typer) -> None:
    app.command("demo")(demo_cmd)
