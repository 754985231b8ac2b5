"""`interlock audit`: every hook decision, queryable, and followed live."""

from typing import Annotated, Any

import typer

from interlock.hosts.cli._store import STORE_HELP

OPERATOR_ACTION = "operator_action"
"""The audit rows of people's actions in the web console (not a catalog event)."""

HEADERS = ["AT", "SESSION", "EVENT", "HOOK", "VERDICT", "STATUS", "MS", "REASON"]
FOLLOW_POLL = 0.5
"""Seconds between two reads of the store under ``--follow``."""


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
    follow: Annotated[bool, typer.Option(
        "--follow", "-f", help="Then keep printing new records as they are written "
                               "(Ctrl-C stops).")] = False,
    wide: Annotated[bool, typer.Option(
        "--wide", help="Every column in full, one line per record.")] = False,
    as_json: Annotated[bool, typer.Option(
        "--json", help="JSON output (with --follow: one JSON object per line).")] = False,
    store: Annotated[str | None, typer.Option(help=STORE_HELP,
                                              envvar="INTERLOCK_STORE")] = None,
) -> None:
    """Show audit records (one per hook per dispatch), oldest first."""
    import msgspec

    from interlock.engine.decisions import Verdict
    from interlock.engine.errors import ConfigError
    from interlock.hosts.cli._common import print_json, user_errors
    from interlock.hosts.cli._store import missing, open_backend, parse_time
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
        if backend is not None and not follow:
            backend.close()
    if follow:
        _follow(backend, query, rows, store, wide=wide, as_json=as_json)
        return
    if as_json:
        print_json(msgspec.to_builtins(rows))
        return
    if backend is None:
        typer.echo(missing(store))
        return
    if not rows:
        typer.echo("no audit records match")
        return
    typer.echo(_table(rows, wide=wide))


def _cells(rows: list[Any]) -> list[list[str]]:
    from interlock.hosts.cli._store import when

    return [[when(r.at), r.session_id or "-", r.event, r.hook, r.verdict, r.status,
             "-" if r.latency_ms is None else f"{r.latency_ms:.2f}",
             " ".join((r.reason or r.error or "-").split())] for r in rows]


_TYPICAL = ["2026-01-01 00:00:00", "s-0123456789ab", "before_tool_call",
            "project:a-typical-hook", "approve", "superseded", "12.34",
            "a reason of a few words"]
"""A record of typical widths: the followed log's columns fit it too."""
_WRAP = ("REASON",)
_DROP = ("SESSION", "MS", "STATUS", "AT")


def _table(rows: list[Any], *, wide: bool) -> str:
    from interlock.hosts.cli._table import render

    return render(HEADERS, _cells(rows), wrap=_WRAP, drop=_DROP, wide=wide)


def _follow(backend: Any, query: Any, rows: list[Any], store: str | None, *, wide: bool,
            as_json: bool) -> None:
    """Print ``rows``, then each record written after them, polling the store (SQLite
    or PostgreSQL alike) every FOLLOW_POLL seconds until Ctrl-C. A store that does not
    exist yet is waited for."""
    import dataclasses
    import json
    import sys
    import time

    import msgspec

    from interlock.hosts.cli._store import open_backend
    from interlock.hosts.cli._table import Layout, fit, more_rows
    from interlock.store import AuditQuery

    # The columns are laid out once, from the first records (or from a typical
    # one), and kept: rows that arrive later line up under the header printed.
    layout: Layout | None = None

    def show(batch: list[Any], header: bool) -> None:
        nonlocal layout
        if as_json:
            for r in batch:
                typer.echo(json.dumps(msgspec.to_builtins(r)))
            return
        if not batch:
            return
        cells = _cells(batch)
        if layout is None:
            layout = fit(HEADERS, [*cells, _TYPICAL], wrap=_WRAP, drop=_DROP, wide=wide,
                         fill=True)
        typer.echo(more_rows(HEADERS, cells, layout, header=header))

    show(rows, True)
    if rows:
        last = rows[-1].id
    else:  # nothing shown: from the newest record on (all of a store that appears later)
        newest = [] if backend is None else backend.audit(AuditQuery(limit=1))
        last = newest[-1].id if newest else 0
    header = not rows
    try:
        while True:
            if backend is None:
                backend = open_backend(store)
            if backend is not None:
                batch = backend.audit(dataclasses.replace(query, after=last, limit=0))
                if batch:
                    show(batch, header)
                    header = False
                    last = batch[-1].id
            sys.stdout.flush()
            time.sleep(FOLLOW_POLL)
    except KeyboardInterrupt:
        pass
    finally:
        if backend is not None:
            backend.close()


def register(app: typer.Typer) -> None:
    app.command("audit")(audit_cmd)
