"""`interlock run`: one prompt through the reference agent, non-interactively."""

from pathlib import Path

import typer


def run_cmd(
    prompt: str = typer.Argument(..., help="What the agent should do."),
    model: str = typer.Option(None, "--model", "-m",
                              help="scripted:FILE or openai:NAME (default $INTERLOCK_MODEL)."),
    config: Path = typer.Option(None, "--config", help="Hooks config file to load."),
    base_url: str = typer.Option(None, "--base-url",
                                 help="OpenAI-compatible server (default $OPENAI_BASE_URL)."),
    api_key: str = typer.Option(None, "--api-key", envvar="OPENAI_API_KEY",
                                show_envvar=False, help="API key (default $OPENAI_API_KEY)."),
    session: str = typer.Option(None, "--session", help="Resume this session id."),
    db: Path = typer.Option(None, "--db", help="Sessions database (default: state dir)."),
    export: Path = typer.Option(None, "--export", help="Write the transcript as JSONL."),
    cwd: Path = typer.Option(None, "--cwd", help="Working directory (default: here)."),
    allow: list[str] = typer.Option([], "--allow", help="Permission rule TOOL[:PATTERN]."),
    ask: list[str] = typer.Option([], "--ask", help="Permission rule TOOL[:PATTERN]."),
    deny: list[str] = typer.Option([], "--deny", help="Permission rule TOOL[:PATTERN]."),
    accept_hooks: bool = typer.Option(False, "--accept-hooks",
                                      help="Approve project hooks for this run."),
    max_turns: int = typer.Option(25, "--max-turns",
                                  help="Model turns before the run stops."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show tool calls."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object (status, "
                                 "final text, each blocked/asked/rewritten call) instead "
                                 "of the streamed reply."),
) -> None:
    """Run PROMPT through the agent. Exit 0 when it completed, 1 when blocked,
    stopped or failed (or when an extension's stand-in refused every tool call),
    2 on a usage error. Each blocked, asked or rewritten call gets one stderr line."""
    from interlock.hosts.cli._common import user_errors
    from interlock.hosts.terminal.runner import RunSpec, run_once

    with user_errors():
        spec = RunSpec(model=model, config=config, base_url=base_url, api_key=api_key,
                       session=session, db=db, cwd=cwd, allow=allow, ask=ask, deny=deny,
                       accept_hooks=accept_hooks, max_turns=max_turns, verbose=verbose)
        raise SystemExit(run_once(spec, prompt, export, as_json=as_json))


def register(app: typer.Typer) -> None:
    app.command("run")(run_cmd)
