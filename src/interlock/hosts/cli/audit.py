"""`interlock audit`: every hook decision, queryable."""

from __future__ import annotations

from typing import Annotated

import typer

from interlock.hosts.cli._store import STORE_HELP

OPERATOR_ACTION = "operator_action"
"""The audit rows of people's actions in the web console (not a catalog event)."""


def register(app: typer.Typer) -> None:
    @app.command("audit")
    def audit_cmd(
        session: Annotated[str | None, typer.Option(help="Only this session ID.")] = None,
        hook: Annotated[str | None, typer.Option(
            help="Only this hook: source:name, or a bare name for any source.")] = None,
        verdict: Annotated[str | None, typer.Option(
            help="Only this verdict (block, modify, approve, ask, respond, skip, stop, "
                 "retry, none).")] = None,
        event: Annotated[str | None, typer.Option(help="Only this event.")] = None,
        since: Annotated[str | None, typer.Option(
            help="From this time: 30m, 2h, 7d ago, or an ISO time.")] = None,
        until: Annotated[str | None, typer.Option(help="Before this time (same forms).")
                         ] = None,
        limit: Annotated[int, typer.Option(help="The newest N; 0 for all.")] = 100,
        as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False,
        store: Annotated[str | None, typer.Option(help=STORE_HELP,
                                                  envvar="INTERLOCK_STORE")] = None,
    ) -> None:
        """Show audit records (one per hook per dispatch), oldest first."""
        import msgspec

        from interlock.engine.decisions import Verdict
        from interlock.engine.errors import ConfigError
        from interlock.hosts.cli._common import print_json, user_errors
        from interlock.hosts.cli._store import clip, missing, open_backend, parse_time, table, when
        from interlock.store import AuditQuery

        with user_errors():
            if verdict is not None and verdict not in {v.value for v in Verdict}:
                raise ConfigError(f"unknown verdict {verdict!r}", field="--verdict",
                                  fix="use one of " + ", ".join(v.value for v in Verdict))
            if event is not None and event != OPERATOR_ACTION:
                from interlock.engine.catalog import spec

                spec(event)  # did-you-mean for a misspelt event
            query = AuditQuery(session=session, hook=hook, verdict=verdict, event=event,
                               since=parse_time(since, "--since"),
                               until=parse_time(until, "--until"), limit=limit)
            backend = open_backend(store)
            rows = [] if backend is None else backend.audit(query)
            if backend is not None:
                backend.close()
        if as_json:
            print_json(msgspec.to_builtins(rows))
            return
        if backend is None:
            typer.echo(missing(store))
            return
        if not rows:
            typer.echo("no audit records match")
            return
        table_rows = [[when(r.at), r.session_id or "-", r.event, r.hook, r.verdict, r.status,
                       "-" if r.latency_ms is None else f"{r.latency_ms:.2f}",
                       clip(r.reason or r.error, 50)] for r in rows]
        typer.echo(table(["AT", "SESSION", "EVENT", "HOOK", "VERDICT", "STATUS", "MS",
                          "REASON"], table_rows))
