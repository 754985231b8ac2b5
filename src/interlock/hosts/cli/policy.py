"""`interlock policy diff A B`: what changes between two revisions of a policy repository."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer


def _open(repo: Any, ref: str) -> tuple[str, Any]:
    """(commit, host) of the policy at ``ref``; nothing recorded, its hooks approved for this
    look only (naming the revision is the approval, as for `serve --policy`)."""
    from interlock.hosts.assembly import Host

    repo.fetch()
    commit = repo.resolve(ref)
    return commit, Host.open(repo.extract(commit), record=False, accept_hooks=True,
                             extensions=None)


def _hooks(host: Any) -> dict[str, str]:
    return {f"{h.source.label}:{h.name}": h.digest for h in host.engine.hooks}


def _rules(host: Any) -> set[tuple[str, str, str]]:
    return {(r.tool, r.pattern, r.action) for r in host.registry.permissions}


Record = tuple[str, str, dict[str, Any]]
"""(where it came from, event name, payload) of one gate event to replay."""


def _transcript(path: Path) -> list[Record]:
    from interlock.agent.replay import read_events

    return [(f"line {lineno}", r["name"], r["payload"]) for lineno, r in read_events(path)]


def _audited(store_url: str | None, since: float, limit: int) -> tuple[list[Record], int]:
    """The kept payloads of gate events since ``since``, and how many audited gate
    dispatches have none (kept only with `serve --audit-payloads`)."""
    import json

    from interlock.store import open_store

    store = open_store(store_url)
    try:
        rows = store.payloads(since, limit)
        total = store.gate_dispatches(since)
    finally:
        store.close()
    records = [(f"dispatch {d}", e, json.loads(p)) for _at, d, e, p in rows]
    return records, max(total - len(records), 0) if len(rows) < limit else 0


def _replayed(a: Any, b: Any, records: list[Record]) -> tuple[int, list[dict[str, Any]]]:
    """Gate events of ``records`` decided differently by ``a`` and ``b``."""
    from interlock.engine.catalog import BY_NAME, Kind
    from interlock.engine.invoke import replay_mode
    from interlock.events import make

    count = 0
    changed: list[dict[str, Any]] = []
    for where, name, payload in records:
        spec = BY_NAME.get(name)
        if spec is None or spec.kind is Kind.OBSERVE:
            continue
        count += 1
        out = []
        for host in (a, b):
            event = make(name, payload, source=where)
            with replay_mode():
                out.append(host.engine.emit_sync(event).to_record(event))
        if out[0].decision != out[1].decision or out[0].changes != out[1].changes:
            subject = payload.get(spec.subject) if spec.subject else None
            changed.append({"where": where, "event": name, "subject": subject,
                            "a": out[0].decision, "b": out[1].decision,
                            "hook_b": out[1].hook, "reason_b": out[1].reason})
    return count, changed


def _diff(cache: Any, a: str, b: str, records: list[Record] | None) -> dict[str, Any]:
    commit_a, host_a = _open(cache, a)
    try:
        commit_b, host_b = _open(cache, b)
        try:
            hooks_a, hooks_b = _hooks(host_a), _hooks(host_b)
            rules_a, rules_b = _rules(host_a), _rules(host_b)
            report: dict[str, Any] = {
                "a": commit_a, "b": commit_b,
                "hooks_added": sorted(set(hooks_b) - set(hooks_a)),
                "hooks_removed": sorted(set(hooks_a) - set(hooks_b)),
                "hooks_changed": sorted(n for n in set(hooks_a) & set(hooks_b)
                                        if hooks_a[n] != hooks_b[n]),
                "rules_added": [list(r) for r in sorted(rules_b - rules_a)],
                "rules_removed": [list(r) for r in sorted(rules_a - rules_b)],
            }
            if records is not None:
                count, changed = _replayed(host_a, host_b, records)
                report["replayed"] = count
                report["decisions_changed"] = changed
        finally:
            host_b.close()
    finally:
        host_a.close()
    return report


def diff(
    a: Annotated[str, typer.Argument(help="The revision served now (commit, tag, branch).")],
    b: Annotated[str, typer.Argument(help="The revision to compare it with.")],
    repo: Annotated[str, typer.Option(
        help="The policy repository (a path or git+https URL).")] = ".",
    transcript: Annotated[Path | None, typer.Option(
        help="Replay this transcript's gate events (`interlock run --export`) through "
             "both revisions and list the decisions that differ.")] = None,
    audit: Annotated[bool, typer.Option(
        "--audit", help="Replay the recent gate events the store kept (`serve "
                        "--audit-payloads`) instead.")] = False,
    store: Annotated[str | None, typer.Option(
        help="With --audit: the store (default: $INTERLOCK_STORE, else the state dir's).",
        envvar="INTERLOCK_STORE")] = None,
    since: Annotated[str, typer.Option(
        help="With --audit: from this time (30m, 2h, 7d ago, or an ISO time).")] = "24h",
    limit: Annotated[int, typer.Option(help="With --audit: the newest N events.")] = 1000,
    as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False,
) -> None:
    """Hooks added, removed and changed, permission rules, and replayed decisions."""
    import os
    import shutil
    import tempfile

    from interlock.engine.errors import ConfigError
    from interlock.hosts.cli._common import print_json, user_errors
    from interlock.hosts.fleet.policy import PolicyRepo, parse

    with user_errors():
        records: list[Record] | None = None
        missing = 0
        if transcript is not None and audit:
            raise ConfigError("give --transcript or --audit, not both", field="--audit",
                              fix="replay one source at a time")
        if transcript is not None:
            records = _transcript(transcript)
        elif audit:
            from interlock.hosts.cli._store import parse_time

            records, missing = _audited(store, parse_time(since, "--since") or 0.0, limit)
        url, _ = parse(repo)
        work = Path(tempfile.mkdtemp(prefix="interlock-policy-diff-"))
        # Approvals given for this look go to a throwaway state dir, not the user's.
        saved = os.environ.get("INTERLOCK_STATE_DIR")
        os.environ["INTERLOCK_STATE_DIR"] = str(work / "state")
        try:
            report = _diff(PolicyRepo(url, work / "cache"), a, b, records)
            if audit:
                report["without_payload"] = missing
        finally:
            if saved is None:
                os.environ.pop("INTERLOCK_STATE_DIR", None)
            else:
                os.environ["INTERLOCK_STATE_DIR"] = saved
            shutil.rmtree(work, ignore_errors=True)
    if as_json:
        print_json(report)
        return
    typer.echo(f"policy {report['a'][:12]} -> {report['b'][:12]}")
    for key, mark in (("hooks_added", "+"), ("hooks_removed", "-"), ("hooks_changed", "~")):
        for name in report[key]:
            typer.echo(f"  {mark} hook {name}")
    for key, mark in (("rules_added", "+"), ("rules_removed", "-")):
        for tool, pattern, action in report[key]:
            typer.echo(f"  {mark} rule {action} {tool} {pattern!r}")
    if records is not None:
        for d in report["decisions_changed"]:
            subject = f" {d['subject']}" if d["subject"] else ""
            typer.echo(f"  {d['where']} {d['event']}{subject}: {d['a']} -> {d['b']}"
                       + (f" by {d['hook_b']}" if d["b"] != d["a"] and d["hook_b"] else ""))
        typer.echo(f"{report['replayed']} gate events replayed, "
                   f"{len(report['decisions_changed'])} decided differently")
    if report.get("without_payload"):
        typer.echo(f"{report['without_payload']} audited gate events had no payload to "
                   "replay: run `interlock serve --audit-payloads` to keep them")


def register(app: typer.Typer) -> None:
    policy_app = typer.Typer(help="Policies served from a git repository (docs/fleet.md).",
                             no_args_is_help=True)
    app.add_typer(policy_app, name="policy")

    policy_app.command("diff")(diff)
