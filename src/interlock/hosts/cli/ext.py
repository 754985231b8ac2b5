"""`interlock ext`: list, install, remove, enable, disable and approve extensions."""

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

ASSUME_YES_ENV = "INTERLOCK_ASSUME_YES"


def _project() -> Path:
    """The project found from here, as every command finds it (interlock.hosts.assembly.Project)."""
    from interlock.hosts.assembly import Project

    return Project.discover().root


def _consent(what: str, yes: bool) -> None:
    """Installs and approvals run code later: ask, or require an explicit flag."""
    from interlock.engine.errors import ConfigError

    if yes or os.environ.get(ASSUME_YES_ENV, "") in ("1", "true", "yes"):
        return
    if not sys.stdin.isatty():
        raise ConfigError(f"refusing to {what} without consent in a non-interactive run",
                          fix=f"pass --yes or set {ASSUME_YES_ENV}=1")
    if not typer.confirm(f"{what}?", default=False):
        raise typer.Exit(1)


def list_cmd(as_json: Annotated[bool, typer.Option("--json", help="JSON output.")]
             = False,
             wide: Annotated[bool, typer.Option(
                 "--wide", help="Every column in full, one line per extension.")] = False,
             ) -> None:
    """List extensions, where they come from, and whether they load (approved ones
    are imported to find out, as a host would)."""
    from interlock.hosts.cli._common import print_json, user_errors
    from interlock.hosts.cli._table import render

    with user_errors():
        rows = _status_rows()
        if as_json:
            print_json(rows)
            return
        if not rows:
            typer.echo("no extensions")
            return
        table = [[str(r["name"]), str(r["source"]), str(r["status"]), str(r.get("pin") or "-"),
                  str(r["origin"]), str(r["message"] or "")] for r in rows]
        typer.echo(render(["NAME", "SOURCE", "STATUS", "PIN", "ORIGIN", "MESSAGE"], table,
                          wrap=["ORIGIN", "MESSAGE"], drop=["PIN", "SOURCE"], wide=wide))


def install_cmd(
    source: Annotated[str, typer.Argument(help="A folder, a git URL, a wheel or a package.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Consent without asking.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Replace an installed copy.")] = False,
) -> None:
    """Install an extension and pin it (content hash, commit or version)."""
    from interlock.ext.install import Installer
    from interlock.hosts.cli._common import user_errors
    from interlock.policies._common import interlock_home

    with user_errors():
        installer = Installer(interlock_home())
        _consent(installer.plan(source), yes)
        for pin in installer.install(source, force=force):
            ref = pin.commit or pin.version or ""
            typer.echo(f"installed {pin.name} ({pin.kind}{' ' + ref if ref else ''}, "
                       f"{pin.digest[:23]}...)")


def remove_cmd(
    name: str,
    yes: Annotated[bool, typer.Option(
        "--yes", "-y", help="Accepted as in install; removing runs no code, so it "
                            "never asks.")] = False,
) -> None:
    """Remove an installed extension (and its pin)."""
    from interlock.ext.install import Installer
    from interlock.hosts.cli._common import user_errors
    from interlock.policies._common import interlock_home

    with user_errors():
        pin = Installer(interlock_home()).remove(name)
        typer.echo(f"removed {pin.name}")


def enable_cmd(name: str) -> None:
    """Let an extension load again."""
    from interlock.ext.install import Installer
    from interlock.hosts.cli._common import user_errors
    from interlock.policies._common import interlock_home

    with user_errors():
        _known(name)
        Installer(interlock_home()).set_enabled(name, True)
        typer.echo(f"enabled {name}")


def disable_cmd(name: str) -> None:
    """Stop an extension from loading (its files stay)."""
    from interlock.ext.install import Installer
    from interlock.hosts.cli._common import user_errors
    from interlock.policies._common import interlock_home

    with user_errors():
        _known(name)
        Installer(interlock_home()).set_enabled(name, False)
        typer.echo(f"disabled {name}")


def approve_cmd(
    name: str,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Consent without asking.")] = False,
) -> None:
    """Approve an extension's current content (after a change, or a project extension)."""
    from interlock.ext.install import Installer
    from interlock.hosts.cli._common import user_errors
    from interlock.policies._common import interlock_home

    with user_errors():
        _consent(f"approve extension {name!r} as it is now", yes)
        pin = Installer(interlock_home()).approve(name, project=_project())
        typer.echo(f"approved {pin.name} ({pin.digest[:23]}...)")


def register(app: typer.Typer) -> None:
    ext = typer.Typer(help="Install and manage extensions (hooks, tools, commands, providers).",
                      no_args_is_help=True)
    app.add_typer(ext, name="ext")

    ext.command("list")(list_cmd)
    ext.command("install")(install_cmd)
    ext.command("remove")(remove_cmd)
    ext.command("enable")(enable_cmd)
    ext.command("disable")(disable_cmd)
    ext.command("approve")(approve_cmd)


def _known(name: str) -> None:
    """ConfigError unless ``name`` is an extension this machine has or can find:
    a typo in ``ext disable`` must not leave the extension running while it
    says ``disabled``. Finding runs no extension code."""
    import difflib

    from interlock.engine.dispatch import Engine
    from interlock.engine.errors import ConfigError
    from interlock.ext.install import Installer
    from interlock.ext.loader import ExtensionSet
    from interlock.policies._common import interlock_home

    home = interlock_home()
    names = set(Installer(home).store.all())
    engine = Engine()
    try:
        names.update(cand.name for cand in
                     ExtensionSet(engine, home=home, project=_project()).discover())
    finally:
        engine.close()
    if name in names:
        return
    close = difflib.get_close_matches(name, sorted(names), n=1)
    raise ConfigError(f"no extension named {name!r}", field="name",
                      fix=f"did you mean {close[0]!r}?" if close
                      else "`interlock ext list` shows the extensions there are")


def _status_rows() -> list[dict[str, object]]:
    """Every discoverable extension and its status. Only extensions whose consent holds
    (approved, unchanged) are loaded, as any host would load them, to tell ok from
    failed; no other extension's code runs."""
    from interlock.engine.dispatch import Engine
    from interlock.ext.loader import ExtensionSet
    from interlock.policies._common import interlock_home

    engine = Engine()
    exts = ExtensionSet(engine, home=interlock_home(), project=_project())
    rows: list[dict[str, object]] = []
    seen: set[str] = set()
    try:
        for cand in exts.discover():
            pin, problem, status = exts.consent(cand)
            seen.add(cand.name)
            rows.append({
                "name": cand.name, "source": cand.source.label, "origin": cand.origin,
                "status": status if problem else "ok", "message": problem or "",
                "guards": list(cand.guards),
                "pin": (pin.commit[:12] or pin.version or pin.digest[7:19]) if pin else None,
            })
        # Consent alone says "may load"; an approved extension that crashes while
        # loading must not be listed as ok.
        loaded = {info.name: info for info in exts.load_all()}
        for row in rows:
            info = loaded.get(str(row["name"]))
            if row["status"] == "ok" and info is not None and info.status == "failed":
                row["status"], row["message"] = "failed", info.message
        for key, pin in exts.pins.all().items():
            if pin.name in seen or key.startswith("project-"):
                continue
            rows.append({"name": pin.name, "source": pin.kind, "origin": pin.source,
                         "status": "missing",
                         "message": "pinned but not found; reinstall or `ext remove` it",
                         "guards": pin.guards, "pin": pin.version or pin.digest[7:19]})
    finally:
        exts.close()
        engine.close()
    return rows
