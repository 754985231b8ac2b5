"""`interlock replay`: re-evaluate a recorded session through the current hooks."""

from pathlib import Path

import typer


def replay_cmd(
    transcript: Path = typer.Argument(..., help="A JSONL transcript (run --export)."),
    config: Path = typer.Option(None, "--config", help="Hooks config file to load."),
    accept_hooks: bool = typer.Option(False, "--accept-hooks",
                                      help="Approve project hooks for this replay."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    check: bool = typer.Option(False, "--check",
                               help="Exit 1 when any decision would differ."),
) -> None:
    """Re-run every recorded gate event through the current hooks, without running any
    tool or model, and report each decision that would now differ."""
    from dataclasses import asdict

    from interlock.agent.replay import read_events, replay
    from interlock.hosts.assembly import Host, Project
    from interlock.hosts.cli._common import print_json, user_errors

    with user_errors():
        # A replay re-judges old calls: a dry run, so nothing is audited.
        host = Host.open(Project.discover(), config=config, accept_hooks=accept_hooks,
                         record=False)
        try:
            report = replay(host.engine, read_events(transcript), source=str(transcript))
        finally:
            host.close()
    diffs = report.differences or []
    if as_json:
        print_json({"evaluated": report.evaluated, "skipped_observe": report.skipped_observe,
                    "differences": [asdict(d) for d in diffs]})
    else:
        for d in diffs:
            typer.echo(d.describe())
        typer.echo(f"{report.evaluated} gate events re-evaluated, {len(diffs)} would now "
                   f"differ ({report.skipped_observe} observe events not re-fired)")
    raise SystemExit(1 if check and diffs else 0)


def register(app: typer.Typer) -> None:
    app.command("replay")(replay_cmd)
