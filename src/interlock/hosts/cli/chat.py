"""`interlock chat`: an interactive session with slash commands."""

from pathlib import Path

import typer


def chat_cmd(
    model: str = typer.Option(None, "--model", "-m",
                              help="scripted:FILE or openai:NAME (default $INTERLOCK_MODEL)."),
    config: Path = typer.Option(None, "--config", help="Hooks config file to load."),
    base_url: str = typer.Option(None, "--base-url",
                                 help="OpenAI-compatible server (default $OPENAI_BASE_URL)."),
    api_key: str = typer.Option(None, "--api-key", envvar="OPENAI_API_KEY",
                                show_envvar=False, help="API key (default $OPENAI_API_KEY)."),
    session: str = typer.Option(None, "--session", help="Resume this session id."),
    db: Path = typer.Option(None, "--db", help="Sessions database (default: state dir)."),
    allow: list[str] = typer.Option([], "--allow", help="Permission rule TOOL[:PATTERN]."),
    deny: list[str] = typer.Option([], "--deny", help="Permission rule TOOL[:PATTERN]."),
    accept_hooks: bool = typer.Option(False, "--accept-hooks",
                                      help="Approve project hooks for this session."),
) -> None:
    """Chat with the agent. /new /reset /model NAME /compact /help; /exit or Ctrl-D quits."""
    from interlock.hosts.cli._common import user_errors
    from interlock.hosts.terminal.chat import chat
    from interlock.hosts.terminal.runner import RunSpec

    with user_errors():
        spec = RunSpec(model=model, config=config, base_url=base_url, api_key=api_key,
                       session=session, db=db, allow=allow, deny=deny,
                       accept_hooks=accept_hooks, verbose=True)
        raise SystemExit(chat(spec))


def register(app: typer.Typer) -> None:
    app.command("chat")(chat_cmd)
