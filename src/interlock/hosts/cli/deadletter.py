"""`interlock deadletter list|show|resolve`: failures that were recorded durably."""

from typing import Annotated, Any

import typer

from interlock.hosts.cli._store import STORE_HELP

Store = Annotated[str | None, typer.Option(help=STORE_HELP, envvar="INTERLOCK_STORE")]
Ident = Annotated[int, typer.Argument(metavar="ID", help="The dead letter's ID.")]


def list_cmd(
    unresolved: Annotated[bool, typer.Option("--unresolved",
                                             help="Only those not resolved yet.")] = False,
    hook: Annotated[str | None, typer.Option(help="Only this hook (source:name).")] = None,
    limit: Annotated[int, typer.Option(help="The newest N; 0 for all.")] = 50,
    wide: Annotated[bool, typer.Option(
        "--wide", help="Every column in full, one line per dead letter.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False,
    store: Store = None,
) -> None:
    """List dead letters, oldest first."""
    import msgspec

    from interlock.hosts.cli._common import print_json, user_errors
    from interlock.hosts.cli._store import missing, open_backend, when
    from interlock.hosts.cli._table import render

    with user_errors():
        backend = open_backend(store)
        letters = [] if backend is None else backend.dead_letters(
            unresolved=unresolved, hook=hook, limit=limit)
        if backend is not None:
            backend.close()
    if as_json:
        print_json(msgspec.to_builtins(letters))
        return
    if backend is None:
        typer.echo(missing(store))
        return
    if not letters:
        typer.echo("no dead letters" + (" unresolved" if unresolved else ""))
        return
    rows = [[str(d.id), when(d.at), d.hook, d.event, d.mode, str(d.attempts),
             "closed" if d.fail_closed else "open",
             f"resolved by {d.resolved_by}" if d.resolved_at else "unresolved",
             " ".join(d.error.split()) or "-"] for d in letters]
    typer.echo(render(["ID", "AT", "HOOK", "EVENT", "MODE", "TRIES", "ON_ERROR", "STATE",
                       "ERROR"], rows, wrap=("ERROR", "STATE"),
                      drop=("TRIES", "ON_ERROR", "AT", "STATE"), wide=wide))


def show_cmd(ident: Ident,
             as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False,
             store: Store = None) -> None:
    """One dead letter in full: every field, the whole error."""
    import textwrap

    import msgspec

    from interlock.engine.errors import ConfigError
    from interlock.hosts.cli._common import print_json, user_errors
    from interlock.hosts.cli._store import missing, open_backend, when
    from interlock.hosts.cli._table import width

    with user_errors():
        backend = open_backend(store)
        if backend is None:
            raise ConfigError(missing(store), field="ID", fix="check --store / $INTERLOCK_STORE")
        try:
            found = backend.dead_letters(before=ident + 1, limit=1)
        finally:
            backend.close()
        letter: Any = found[0] if found and found[0].id == ident else None
        if letter is None:
            raise ConfigError(f"no dead letter with ID {ident}", field="ID",
                              fix="run `interlock deadletter list` for the IDs")
    data = msgspec.to_builtins(letter)
    if as_json:
        print_json(data)
        return
    for key in ("at", "resolved_at"):
        data[key] = when(data[key]) if data[key] is not None else None
    data["on_error"] = "closed" if data.pop("fail_closed") else "open"
    error = data.pop("error")
    for key, value in data.items():
        if value not in (None, ""):
            typer.echo(f"{key:>17}: {value}")
    typer.echo(f"{'error':>17}:")
    for line in error.splitlines() or ["-"]:
        typer.echo(textwrap.fill(line, max((width() or 100) - 4, 20), initial_indent="    ",
                                 subsequent_indent="    ", break_on_hyphens=False))


def resolve_cmd(
    ident: Ident,
    note: Annotated[str | None, typer.Option(help="Why it is resolved.")] = None,
    by: Annotated[str | None, typer.Option(help="Who resolved it (default: $USER).")
                  ] = None,
    store: Store = None,
) -> None:
    """Mark a dead letter operator-resolved. The record is kept."""
    import os
    import time

    from interlock.engine.errors import ConfigError
    from interlock.engine.redact import redact
    from interlock.hosts.cli._common import user_errors
    from interlock.hosts.cli._store import missing, open_backend

    with user_errors():
        backend = open_backend(store)
        if backend is None:
            raise ConfigError(missing(store), field="ID",
                              fix="check --store / $INTERLOCK_STORE")
        try:
            who = by or os.environ.get("USER") or "operator"
            done = backend.resolve(ident, by=who, note=redact(note) if note else None,
                                   at=time.time())
            known = done or backend.exists(ident)
        finally:
            backend.close()
        if not known:
            raise ConfigError(f"no dead letter with ID {ident}", field="ID",
                              fix="run `interlock deadletter list` for the IDs")
    typer.echo(f"dead letter {ident} resolved" if done
               else f"dead letter {ident} was already resolved")


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="List, show and resolve dead letters (every hook failure, "
                             "recorded).", no_args_is_help=True)
    app.add_typer(group, name="deadletter")
    group.command("list")(list_cmd)
    group.command("show")(show_cmd)
    group.command("resolve")(resolve_cmd)
