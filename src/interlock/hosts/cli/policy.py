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


def _replayed(a: Any, b: Any, transcript: Path) -> tuple[int, list[dict[str, Any]]]:
    """Gate events of ``transcript`` decided differently by ``a`` and ``b``."""
    from interlock.agent.replay import read_events
    from interlock.engine.catalog import BY_NAME, Kind
    from interlock.engine.invoke import replay_mode
    from interlock.events import make

    count = 0
    changed: list[dict[str, Any]] = []
    for lineno, record in read_events(transcript):
        spec = BY_NAME.get(record["name"])
        if spec is None or spec.kind is Kind.OBSERVE:
            continue
        count += 1
        out = []
        for host in (a, b):
            event = make(record["name"], record["payload"], source=f"{transcript}:{lineno}")
            with replay_mode():
                out.append(host.engine.emit_sync(event).to_record(event))
        if out[0].decision != out[1].decision or out[0].changes != out[1].changes:
            subject = record["payload"].get(spec.subject) if spec.subject else None
            changed.append({"line": lineno, "event": record["name"], "subject": subject,
                            "a": out[0].decision, "b": out[1].decision,
                            "hook_b": out[1].hook, "reason_b": out[1].reason})
    return count, changed


def _diff(cache: Any, a: str, b: str, transcript: Path | None) -> dict[str, Any]:
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
            if transcript is not None:
                count, changed = _replayed(host_a, host_b, transcript)
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
    as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False,
) -> None:
    """Hooks added, removed and changed, permission rules, and replayed decisions."""
    import os
    import shutil
    import tempfile

    from interlock.hosts.cli._common import print_json, user_errors
    from interlock.hosts.fleet.policy import PolicyRepo, parse

    with user_errors():
        url, _ = parse(repo)
        work = Path(tempfile.mkdtemp(prefix="interlock-policy-diff-"))
        # Approvals given for this look go to a throwaway state dir, not the user's.
        saved = os.environ.get("INTERLOCK_STATE_DIR")
        os.environ["INTERLOCK_STATE_DIR"] = str(work / "state")
        try:
            report = _diff(PolicyRepo(url, work / "cache"), a, b, transcript)
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
    if transcript is not None:
        for d in report["decisions_changed"]:
            subject = f" {d['subject']}" if d["subject"] else ""
            typer.echo(f"  line {d['line']} {d['event']}{subject}: {d['a']} -> {d['b']}"
                       + (f" by {d['hook_b']}" if d["b"] != d["a"] and d["hook_b"] else ""))
        typer.echo(f"{report['replayed']} gate events replayed, "
                   f"{len(report['decisions_changed'])} decided differently")


def register(app: typer.Typer) -> None:
    policy_app = typer.Typer(help="Policies served from a git repository (docs/fleet.md).",
                             no_args_is_help=True)
    app.add_typer(policy_app, name="policy")

    policy_app.command("diff")(diff)
