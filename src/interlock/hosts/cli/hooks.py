"""`interlock hooks`: see, test, trust and import the configured hooks."""

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from interlock.config.registry import HookEntry
    from interlock.hosts.assembly import Host
    from interlock.hosts.assembly import Project as Where

Project = Annotated[Path | None, typer.Option(
    "--project", "-C", file_okay=False,
    help="Project root (default: the nearest folder holding .interlock/, from here up to "
         "the repository root).")]
Config = Annotated[Path | None, typer.Option("--config", help="Use this config file instead of "
                                             ".interlock/config.toml.", dir_okay=False)]


def _open(project: "Path | Where | None", config: Path | None, *, accept: bool = False,
          lenient: bool = False, extensions: bool | None = False) -> "Host":
    """The project's host (interlock.hosts.assembly), not recording; with ``lenient`` a bad config
    is reported, not fatal; outside any project with no other hooks, a warning."""
    from interlock.hosts.assembly import Host
    from interlock.hosts.assembly import Project as Where

    where = project if isinstance(project, Where) else Where.discover(project)
    host = Host.open(where, config=config, accept_hooks=accept,
                     record=False, timed=True, lenient=lenient, extensions=extensions)
    error = host.registry.last_error
    if error is not None:
        sys.stderr.write(f"interlock: error: {error}\n"
                         "interlock: no valid hook configuration; every gate blocks\n")
    else:
        host.warn_if_unguarded()
    return host


def _close(host: "Host") -> None:
    from interlock.config.registry import close_engine

    if host.extensions is not None:
        host.close()
        return
    close_engine(host.engine, host.registry, timeout=2)


def _approved(e: "HookEntry") -> str:
    return "yes" if e.approved and e.needs_approval else ("n/a" if not e.needs_approval else "no")


def entry_dict(e: "HookEntry") -> dict[str, Any]:
    d = e.definition
    return {
        "name": e.qualified_name, "source": e.source.label, "kind": d.effective_kind.value,
        "events": list(e.declared.events), "matcher": d.matcher, "state": e.state,
        "enabled": e.enabled, "eligible": e.eligible, "why": e.why or None,
        "approved": e.approved, "needs_approval": e.needs_approval,
        "shadows": e.shadows, "shadowed_by": e.shadowed_by,
        "on_error": d.on_error, "dialect": d.dialect, "priority": d.priority,
        "timeout": min(d.timeout, 600.0), "modifies": d.modifies, "background": d.background,
        "shadow": d.shadow, "description": d.description,
        "file": str(e.declared.file), "line": e.declared.line, "digest": e.digest,
    }


def list_cmd(
    project: Project = None, config: Config = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False,
    eligible: Annotated[bool, typer.Option("--eligible",
                                           help="Only hooks eligible here.")] = False,
    wide: Annotated[bool, typer.Option(
        "--wide", help="Every column in full, one line per hook.")] = False,
) -> None:
    """Every configured hook: source, kind, events, state, consent, what it shadows."""
    from interlock.hosts.cli._common import print_json, user_errors
    from interlock.hosts.cli._table import render

    with user_errors():
        host = _open(project, config)
    registry = host.registry
    try:
        entries = [e for e in registry.hooks if e.eligible or not eligible]
        rules = registry.permission_consent
        servers = registry.mcp_consent
        if as_json:
            print_json({"project_root": str(host.project.root),
                        "project_found": host.project.found,
                        "revision": registry.revision,
                        "hooks": [entry_dict(e) for e in entries],
                        "permissions": rules.to_dict() if rules is not None else None,
                        "mcp_servers": servers.to_dict() if servers is not None else None,
                        "withheld": registry.withheld})
            return
        typer.echo(host.project.describe())
        if not entries and not registry.withheld and (rules is None or not rules.declared) \
                and (servers is None or not servers.declared):
            typer.echo("no hooks configured")
            return
        rows = []
        for e in entries:
            state = e.state + (f" [{e.why}]" if e.why else "")
            rows.append([e.qualified_name, e.definition.effective_kind.value,
                         ", ".join(e.declared.events), state, _approved(e), e.shadows or ""])
        if rules is not None and rules.declared:
            rows.append([rules.name, "rules", "-", f"{len(rules.declared)} rule(s), "
                         + rules.state, "yes" if rules.approved else
                         ("n/a" if not rules.needs_approval else "no"), ""])
        if servers is not None and servers.declared:
            rows.append([servers.name, "mcp", "-", servers.state,
                         "yes" if servers.approved else "no", ""])
        for name in registry.withheld:
            what = ("removed deny rules stay in force" if name == "project:permissions"
                    else "blocking")
            rows.append([name, "-", "-", f"{what} (removal needs an operator)", "no", ""])
        typer.echo(render(["NAME", "KIND", "EVENTS", "STATE", "APPROVED", "SHADOWS"], rows,
                          wrap=("EVENTS", "STATE", "SHADOWS"), drop=("KIND",), wide=wide))
    finally:
        _close(host)


def info_cmd(name: Annotated[str, typer.Argument(help="source:name or name.")],
             project: Project = None, config: Config = None,
             as_json: Annotated[bool, typer.Option("--json", help="JSON output.")]
             = False) -> None:
    """Everything about one hook: its definition, state, files and docs."""
    from interlock.hosts.cli._common import print_json, user_errors

    with user_errors():
        host = _open(project, config)
        try:
            e = host.registry.entry(name)
            data = entry_dict(e)
            data.update(command=e.command, files=[str(f) for f in e.files],
                        docs=e.declared.docs or None)
            if as_json:
                print_json(data)
                return
            # The declaring file once, as file:line; what the hook runs under files.
            data["file"] = f"{data['file']}:{data.pop('line')}" if data["line"] \
                else data.pop("line") or data["file"]
            docs = data.pop("docs")
            for key, value in data.items():
                if value not in (None, "", [], {}):
                    shown = ", ".join(value) if key == "files" else value
                    typer.echo(f"{key:>14}: {shown}")
            if docs:
                typer.echo("\n" + docs)
        finally:
            _close(host)


def try_cmd(
    event: Annotated[str, typer.Argument(help="Event name, e.g. before_tool_call.")],
    tool: Annotated[str | None, typer.Option("--tool", help="Tool name.")] = None,
    payload_file: Annotated[Path | None, typer.Option(
        "--payload-file", help="JSON object with payload fields ('-': standard input).",
        dir_okay=False)] = None,
    example: Annotated[bool, typer.Option(
        "--example", help="Print an example payload for EVENT (to edit and pass back with "
                          "--payload-file) and exit.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="The outcome's JSON shape.")]
    = False,
    accept: Annotated[bool, typer.Option(
        "--accept-hooks", help="Approve new or edited hooks first (recorded).")] = False,
    project: Project = None, config: Config = None,
) -> None:
    """Fire one event through the real hooks and print the effective outcome."""
    from interlock.config.doctor import sample_event
    from interlock.hosts.cli._common import print_json, user_errors
    from interlock.hosts.cli._hooks_try import example_payload, not_run, read_payload

    with user_errors():
        if example:
            print_json(example_payload(event, tool))
            return
        payload = read_payload(payload_file) if payload_file is not None else {}
        from interlock.hosts.assembly import Project as Where

        where = Where.discover(project)
        ev = sample_event(event, tool=tool, payload=payload,
                          cwd=str(where.start if project is None else where.root))
        # The extensions `run` and `serve` load apply here too.
        host = _open(where, config, accept=accept, lenient=True, extensions=None)
    try:
        from interlock.hosts.bridge._decide import decided

        outcome = host.engine.emit_sync(ev)
        # The project's [[permissions]] rules after the hooks, as every host that
        # runs no agent of its own applies them (docs/one-policy.md, Permission rules).
        data = decided(outcome, ev, host.rules, engine=host.engine, redact=False)
        skipped = not_run(host, ev, {h["hook"] for h in data.get("hooks") or []})
        if as_json:
            print_json({**data, "not_run": [{"hook": n, "why": w} for n, w in skipped],
                        "project_root": str(host.project.root)})
        else:
            _print_outcome(data)
            _print_not_run(skipped, ev.spec.name)
            typer.echo(host.project.describe(), err=True)
    finally:
        _close(host)
    if host.registry.last_error is not None:
        raise SystemExit(2)


def doctor_cmd(project: Project = None, config: Config = None,
               smoke: Annotated[bool, typer.Option(help="Run each hook once.")] = True,
               as_json: Annotated[bool, typer.Option("--json", help="JSON output.")]
               = False) -> None:
    """Check scripts, consent and drift, requirements, a smoke run and fail-open gates."""
    from interlock.config.doctor import diagnose
    from interlock.hosts.cli._common import print_json, user_errors

    with user_errors():
        host = _open(project, config)
    try:
        report = diagnose(host.registry, smoke=smoke)
    finally:
        host.engine.close(timeout=2)
    sandbox = _sandbox_finding(host.registry)
    failed = any(f.level == "error" for f in [*report.findings, sandbox])
    if as_json:
        print_json({"project_root": str(host.project.root),
                    "findings": [{"hook": f.hook, "level": f.level, "check": f.check,
                                  "message": f.message}
                                 for f in [*report.findings, sandbox]],
                    "problems": report.problems, "ok": not failed})
        raise SystemExit(1 if failed else 0)
    for f in report.findings:
        typer.echo(f"{f.level:5}  {f.hook}  {f.check}: {f.message}")
    if not report.findings:
        typer.echo("no hooks configured")
    typer.echo(f"{sandbox.level:5}  {sandbox.hook}  {sandbox.check}: {sandbox.message}")
    typer.echo(f"{report.problems} problem(s)" if report.problems else "all good")
    raise SystemExit(1 if failed else 0)


def _sandbox_finding(registry: Any) -> Any:
    """Whether the agent's commands are sandboxed here; an error when the config
    requires a sandbox that cannot run."""
    from interlock.agent.sandbox import status
    from interlock.config.doctor import Finding

    found = status()
    mode, network = registry.sandbox
    level = "ok" if found.available else ("error" if mode == "required" else "warn")
    extra = "" if network else "; no network (sandbox_network = false)"
    return Finding("agent", level, "sandbox",
                   f"{found.line().removeprefix('sandbox: ')}{extra}"
                   + ('; sandbox = "required" refuses to start' if level == "error"
                      else ""))


def validate_cmd(project: Project = None, config: Config = None,
                 as_json: Annotated[bool, typer.Option("--json", help="JSON output.")]
                 = False) -> None:
    """Validate every config file and hook folder, and that each hook can run; exit 2
    with file:line on error."""
    from interlock.hosts.cli._common import user_errors

    with user_errors():
        host = _open(project, config)
    registry = host.registry
    try:
        if as_json:
            _validate_json(host)
        if _report_unrunnable(registry.hooks, registry.project_root):
            raise SystemExit(2)
        if host.missing_policy():
            # Nothing would guard an agent here: say so with a failing exit.
            typer.echo(f"interlock: error: {host.project.describe()}, and no user or "
                       "managed hooks are configured (fix: run from the project, pass "
                       "--project, or create .interlock/config.toml)", err=True)
            raise SystemExit(1)
        active = sum(1 for e in registry.hooks if e.state == "active")
        pending = [e.qualified_name for e in registry.hooks
                   if e.enabled and e.shadowed_by is None and not e.approved]
        rules = registry.permission_consent
        if rules is not None and rules.pending:
            pending.append(rules.name)
        typer.echo(f"ok: {len(registry.hooks)} hook(s), {active} active, "
                   f"{len(registry.permissions)} permission rule(s)")
        if pending:
            typer.echo(f"not approved: {', '.join(pending)} "
                       "(run `interlock hooks approve NAME`)")
        typer.echo(host.project.describe())
    finally:
        _close(host)


Fleet = Annotated[bool, typer.Option(
    "--fleet", help="In the fleet's PostgreSQL --store, for every `serve --fleet` replica "
                    "(docs/fleet.md).")]
Store = Annotated[str | None, typer.Option(
    help="With --fleet: the PostgreSQL store URL.", envvar="INTERLOCK_STORE")]


def _shared(host: "Host", fleet: bool, store: str | None) -> Any:
    """With ``fleet``, the host's registry reads and writes the fleet's approvals."""
    if not fleet:
        return None
    from interlock.hosts.fleet.attach import shared_trust

    return shared_trust(store, host.registry)


def approve_cmd(
    name: Annotated[str | None, typer.Argument(help="source:name or name.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every hook waiting.")] = False,
    project: Project = None, config: Config = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False,
    fleet: Fleet = False, store: Store = None,
) -> None:
    """Approve a hook's current definition (pinned to its digest), or a removal.
    A hook that cannot run (hooks validate says why) is refused."""
    from interlock.engine.errors import ConfigError
    from interlock.hosts.cli._common import print_json, user_errors

    with user_errors():
        if (name is None) == (not all_):
            raise ConfigError("give a hook name or --all",
                              fix="interlock hooks approve user:guard")
        host = _open(project, config, lenient=True)
        shared = None
        try:
            if host.registry.last_error is not None:
                raise SystemExit(2)  # _open said why; no revision, so nothing to approve
            shared = _shared(host, fleet, store)
            # A hook that cannot run is not approved: approving a handler that does
            # not compile would make the whole config invalid.
            reg = host.registry
            wanted = ([e for e in reg.hooks if e.needs_approval and not e.approved]
                      if all_ else [e for e in reg.hooks if name in
                                    (e.qualified_name, e.definition.name)][:1])
            broken = [e for e in wanted if _report_unrunnable([e], reg.project_root, refused=True)]
            names: list[str] | None = None if all_ else [name or ""]
            if broken:
                names = [e.qualified_name for e in wanted if e not in broken]
                names += list(reg.withheld) if all_ else []
            done = reg.approve(names) if names is None or names else []
        finally:
            if shared is not None:
                shared.close()
            _close(host)
    if as_json:
        print_json({"approved": done, "refused": [e.qualified_name for e in broken]})
    else:
        typer.echo("approved: " + ", ".join(done) if done else "nothing to approve")
    if broken:
        raise SystemExit(2)


def revoke_cmd(name: Annotated[str, typer.Argument(help="source:name or name.")],
               project: Project = None, config: Config = None, fleet: Fleet = False,
               store: Store = None) -> None:
    """Withdraw a hook's approval (or project:permissions', project:mcp_servers')."""
    from interlock.config.rules import consent_name
    from interlock.hosts.cli._common import user_errors

    with user_errors():
        host = _open(project, config)
        shared = None
        try:
            shared = _shared(host, fleet, store)
            removed = host.registry.revoke(name)
            q = consent_name(name) or host.registry.entry(name).qualified_name
        finally:
            if shared is not None:
                shared.close()
            _close(host)
    typer.echo(f"revoked: {q}" if removed else f"{q} was not approved")


def _toggle(name: str, on: bool, project: Path | None, config: Path | None) -> None:
    from interlock.hosts.cli._common import user_errors

    with user_errors():
        host = _open(project, config)
        try:
            e = host.registry.set_enabled(name, on)
        finally:
            _close(host)
    typer.echo(f"{e.qualified_name}: {e.state}")


def enable_cmd(name: Annotated[str, typer.Argument(help="source:name or name.")],
               project: Project = None, config: Config = None) -> None:
    """Turn a hook on in this project (bundled hooks are off until enabled)."""
    _toggle(name, True, project, config)


def disable_cmd(name: Annotated[str, typer.Argument(help="source:name or name.")],
                project: Project = None, config: Config = None) -> None:
    """Turn a hook off in this project (a managed hook cannot be disabled)."""
    _toggle(name, False, project, config)


def import_cmd(
    path: Annotated[Path, typer.Argument(help="Their config file or folder.")],
    from_: Annotated[str, typer.Option("--from", help="claude|codex|gemini|hermes|moltis")],
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Append to this config file instead of printing.",
        dir_okay=False)] = None,
) -> None:
    """Turn another agent's hook config into Interlock's (TOML)."""
    from interlock.config.importers import import_config, rebase, to_toml
    from interlock.config.parse import read_toml, to_doc, to_hookdef
    from interlock.config.validate import check_hook
    from interlock.hosts.cli._common import user_errors

    with user_errors():
        imported = import_config(from_, path)
        if output is not None:  # its `./` scripts are read from the file's folder
            rebase(imported, from_, path, output.parent)
        text = to_toml(imported, from_, path)
        # What we write must load: check it with the same code as any config.
        target = output or Path("<import>")
        data, locate = read_toml(text, target)
        doc = to_doc(data, target, locate)
        for i, raw in enumerate(doc.hooks):
            check_hook(to_hookdef(raw, target, ("hooks", i), locate), target, ("hooks", i),
                       locate)
    if output is None:
        typer.echo(text, nl=False)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    with output.open("a", encoding="utf-8") as fh:
        if output.stat().st_size:
            fh.write("\n")
        fh.write(text)
    typer.echo(f"wrote {len(imported.hooks)} hook(s) to {output}; review them, then "
               "`interlock hooks approve --all`")


def register(app: typer.Typer) -> None:
    hooks = typer.Typer(help="See, test, trust and import the configured hooks.",
                        no_args_is_help=True)
    app.add_typer(hooks, name="hooks")
    for name, command in (("list", list_cmd), ("info", info_cmd), ("test", try_cmd),
                          ("doctor", doctor_cmd), ("validate", validate_cmd),
                          ("approve", approve_cmd), ("revoke", revoke_cmd),
                          ("enable", enable_cmd), ("disable", disable_cmd),
                          ("import", import_cmd)):
        hooks.command(name)(command)


def _validate_json(host: "Host") -> None:
    """`hooks validate --json`: the counts and every problem as data; exits."""
    from interlock.config.runnable import problems
    from interlock.hosts.cli._common import print_json

    registry = host.registry
    found = [{"hook": e.qualified_name, "file": p.file, "line": p.line, "field": p.field,
              "message": p.message, "fix": p.fix}
             for e in registry.hooks if e.enabled and e.shadowed_by is None
             for p in problems(e, registry.project_root)]
    missing = host.missing_policy()
    print_json({
        "ok": not found and not missing, "project_root": str(host.project.root),
        "project_found": host.project.found, "hooks": len(registry.hooks),
        "active": sum(1 for e in registry.hooks if e.state == "active"),
        "permissions": len(registry.permissions),
        "not_approved": [e.qualified_name for e in registry.hooks
                         if e.enabled and e.shadowed_by is None and not e.approved],
        "problems": found, "no_policy": missing})
    raise SystemExit(2 if found else 1 if missing else 0)


def _report_unrunnable(entries: Any, root: Path, *, refused: bool = False) -> bool:
    """Print why each enabled hook of ``entries`` cannot run; True if any cannot."""
    from interlock.config.runnable import problems

    found = False
    for e in entries:
        if not e.enabled or e.shadowed_by is not None:
            continue
        for problem in problems(e, root):
            found = True
            typer.echo(f"interlock: error: {problem}" +
                       (f" ({e.qualified_name} not approved)" if refused else ""), err=True)
    return found


def _print_not_run(skipped: list[tuple[str, str]], event: str) -> None:
    """The hooks for ``event`` that did not run, and why; the others as a count."""
    elsewhere = sum(1 for _, why in skipped if why.startswith("listens to "))
    shown = [(n, w) for n, w in skipped if not w.startswith("listens to ")]
    if shown:
        typer.echo("  not run:")
    for name, why in shown:
        typer.echo(f"    {name}: {why}")
    if elsewhere:
        typer.echo(f"  ({elsewhere} other hook(s) listen to other events than {event}; "
                   "--json lists them)")


def _print_outcome(data: dict[str, Any]) -> None:
    line = f"{data['event']}: {data['decision']}"
    if data.get("hook"):
        line += f" by {data['hook']}"
    if data.get("reason"):
        line += f": {data['reason']}"
    typer.echo(line)
    if data.get("changes"):
        typer.echo(f"  changes: {data['changes']}")
    for item in data.get("context") or []:
        typer.echo(f"  context from {item['hook']}: {item['text']}")
    for h in data.get("hooks") or []:
        extra = f" ({h['failure']})" if h.get("failure") else ""
        if h.get("error"):
            extra += f": {h['error']}"
        latency = f" {h['latency_ms']:.1f} ms" if h.get("latency_ms") is not None else ""
        typer.echo(f"  {h['hook']}: {h['verdict']} [{h['status']}]{extra}{latency}")
