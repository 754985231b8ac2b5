"""`interlock status`: dead letters, breakers and recent hook activity at a glance,
and the store's health: the file's, and (when `interlock serve` runs for the
project) the server's writer: write errors, backlog, last commit. Exits 1 when
the store is unhealthy."""

from pathlib import Path
from typing import Annotated, Any

import typer

from interlock.hosts.cli._store import STORE_HELP


def status_cmd(
    since: Annotated[str, typer.Option(
        help="Window for hook activity: 30m, 24h, 7d, or an ISO time.")] = "24h",
    as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False,
    store: Annotated[str | None, typer.Option(help=STORE_HELP,
                                              envvar="INTERLOCK_STORE")] = None,
    project: Annotated[Path, typer.Option(
        help="Project whose running `interlock serve` is asked for its store's "
             "health (over its Unix socket).")] = Path("."),
) -> None:
    """Summarise the store: unresolved dead letters, open breakers, hook activity,
    and its health; exit 1 when it is unhealthy."""
    from interlock.hosts.cli._common import print_json, user_errors
    from interlock.hosts.cli._store import missing, open_backend, parse_time

    with user_errors():
        window = parse_time(since, "--since")
        assert window is not None
        backend = open_backend(store)
        if backend is None:
            summary: dict[str, Any] = {"store": None, "note": missing(store)}
        else:
            try:
                summary = _summary(backend, window)
            finally:
                backend.close()
        summary["server_store"] = _server_store(project)
    if as_json:
        print_json(summary)
    else:
        typer.echo(_render(summary, since))
    health = summary["server_store"]
    if health is not None and not health.get("ok", True):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("status")(status_cmd)


def _server_store(project: Path) -> dict[str, Any] | None:
    """The running server's store health (``GET /v1/status`` on the project's socket,
    where the peer-uid check admits us), or None when no server answers."""
    import http.client
    import json
    import socket

    from interlock.hosts.server.paths import socket_path

    path = socket_path(project.resolve())
    if not path.exists():
        return None

    class Conn(http.client.HTTPConnection):
        def connect(self) -> None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(self.timeout)
            sock.connect(str(path))
            self.sock = sock

    conn = Conn("localhost", timeout=5.0)
    try:
        conn.request("GET", "/v1/status")
        resp = conn.getresponse()
        data = json.loads(resp.read())
    except (OSError, ValueError):
        return None  # a stale socket: no server
    finally:
        conn.close()
    store = data.get("store") if isinstance(data, dict) else None
    return store if isinstance(store, dict) else None


def _summary(backend: Any, since: float) -> dict[str, Any]:
    hooks: dict[str, dict[str, Any]] = {}
    for hook, verdict, count, mean, last in backend.audit_summary(since):
        h = hooks.setdefault(hook, {"executions": 0, "verdicts": {}, "last_at": 0.0,
                                    "latency_sum": 0.0, "latency_n": 0})
        h["executions"] += count
        h["verdicts"][verdict] = count
        h["last_at"] = max(h["last_at"], last)
        if mean is not None:
            h["latency_sum"] += mean * count
            h["latency_n"] += count
    for h in hooks.values():
        n = h.pop("latency_n")
        total = h.pop("latency_sum")
        h["latency_mean_ms"] = round(total / n, 3) if n else None
    letters = [{"hook": h, "mode": m, "total": n, "unresolved": u, "last_at": a}
               for h, m, n, u, a in backend.dead_letter_summary()]
    import msgspec

    return {
        "store": backend.location,
        "created_at": backend.created_at(),
        "counts": backend.counts(),
        "dead_letters": letters,
        "hooks": hooks,
        "breakers": msgspec.to_builtins(backend.breakers()),
        "dead_letter_overflow": [{"hook": h, "mode": m, "count": n, "first_at": f,
                                  "last_at": la} for h, m, n, f, la in backend.overflow()],
    }


def _render(summary: dict[str, Any], since: str) -> str:
    from interlock.hosts.cli._store import table, when

    out = _render_health(summary.get("server_store"))
    if summary.get("store") is None:
        return "\n".join([str(summary["note"]), *out])
    counts = summary["counts"]
    out = [f"store: {summary['store']} (created {when(summary.get('created_at'))})",
           f"dead letters: {counts['unresolved']} unresolved of {counts['dead_letters']}; "
           f"audit records: {counts['audit']}", *out]
    open_breakers = [b for b in summary["breakers"] if b["state"] != "closed"]
    if open_breakers:
        out.append("\nbreakers not closed:")
        out.append(table(["HOOK", "STATE", "FAILURES", "OPENS", "NEXT PROBE"],
                         [[b["hook"], b["state"], str(b["failures"]), str(b["opens"]),
                           when(b["retry_at"])] for b in open_breakers]))
    if summary["dead_letter_overflow"]:
        out.append("\nfloods: failures counted past the cap, not stored one by one:")
        out.append(table(["HOOK", "MODE", "COUNTED", "FIRST", "LAST"],
                         [[o["hook"], o["mode"], str(o["count"]), when(o["first_at"]),
                           when(o["last_at"])] for o in summary["dead_letter_overflow"]]))
    pending = [d for d in summary["dead_letters"] if d["unresolved"]]
    if pending:
        out.append("\nunresolved dead letters (`interlock deadletter list --unresolved`):")
        out.append(table(["HOOK", "MODE", "UNRESOLVED", "LAST"],
                         [[d["hook"], d["mode"], str(d["unresolved"]), when(d["last_at"])]
                          for d in pending]))
    if summary["hooks"]:
        out.append(f"\nhook activity (since {since}):")
        rows = []
        for name, h in sorted(summary["hooks"].items()):
            v = h["verdicts"]
            mean = h["latency_mean_ms"]
            rows.append([name, str(h["executions"]), str(v.get("block", 0)),
                         str(sum(n for k, n in v.items() if k not in ("none", "block"))),
                         "-" if mean is None else f"{mean:.2f}", when(h["last_at"])])
        out.append(table(["HOOK", "RUNS", "BLOCKS", "OTHER DECISIONS", "MEAN MS", "LAST"],
                         rows))
    else:
        out.append(f"\nno hook activity since {since}")
    return "\n".join(out)


def _render_health(health: dict[str, Any] | None) -> list[str]:
    from interlock.hosts.cli._store import when

    if health is None:
        return ["store health: no server running for this project (nothing queued)"]
    if health.get("ok"):
        head = "store health: ok"
    else:
        head = "store health: UNHEALTHY (" + "; ".join(health.get("problems") or []) + ")"
    age = health.get("oldest_unwritten_age_s") or 0.0
    out = [head,
           f"  server's writer ({health.get('backend')}): backlog {health.get('backlog')} "
           f"(oldest {age:.1f} s), write errors {health.get('write_errors')}, "
           f"last commit {when(health.get('last_commit_at'))}"]
    pruned = health.get("pruned") or {}
    if any(pruned.values()):
        out.append(f"  pruned since start: {pruned.get('audit', 0)} audit rows, "
                   f"{pruned.get('payloads', 0)} payloads, {pruned.get('dead_letters', 0)} "
                   f"resolved dead letters (retention; last {when(health.get('last_prune_at'))})")
    return out
