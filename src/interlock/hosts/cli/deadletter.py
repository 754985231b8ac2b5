"""`interlock deadletter list|resolve`: failures that were recorded durably."""

from __future__ import annotations

from typing import Annotated

import typer

from interlock.hosts.cli._store import STORE_HELP


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="List and resolve dead letters (every hook failure, recorded).",
                        no_args_is_help=True)
    app.add_typer(group, name="deadletter")

    @group.command("list")
    def list_cmd(
        unresolved: Annotated[bool, typer.Option("--unresolved",
                                                 help="Only those not resolved yet.")] = False,
        hook: Annotated[str | None, typer.Option(help="Only this hook (source:name).")] = None,
        limit: Annotated[int, typer.Option(help="The newest N; 0 for all.")] = 50,
        as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False,
        store: Annotated[str | None, typer.Option(help=STORE_HELP,
                                                  envvar="INTERLOCK_STORE")] = None,
    ) -> None:
        """List dead letters, oldest first."""
        import msgspec

        from interlock.hosts.cli._common import print_json, user_errors
        from interlock.hosts.cli._store import clip, missing, open_backend, table, when

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
                 clip(d.error)] for d in letters]
        typer.echo(table(["ID", "AT", "HOOK", "EVENT", "MODE", "TRIES", "ON_ERROR", "STATE",
                          "ERROR"], rows))

    @group.command("resolve")
    def resolve_cmd(
        ident: Annotated[int, typer.Argument(metavar="ID", help="The dead letter's ID.")],
        note: Annotated[str | None, typer.Option(help="Why it is resolved.")] = None,
        by: Annotated[str | None, typer.Option(help="Who resolved it (default: $USER).")
                      ] = None,
        store: Annotated[str | None, typer.Option(help=STORE_HELP,
                                                  envvar="INTERLOCK_STORE")] = None,
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
