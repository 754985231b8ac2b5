"""`interlock bridge install <agent>`: point an agent's hooks at `interlock bridge`.

(`interlock bridge <agent>` itself runs on the fast path, without typer:
see cli/__init__.py and interlock.hosts.bridge.)
"""

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    bridge_app = typer.Typer(
        help="Bridges for Claude Code, Codex, Gemini CLI, Cursor, Hermes, Moltis.",
        no_args_is_help=True)
    app.add_typer(bridge_app, name="bridge")

    @bridge_app.command("install")
    def install_cmd(
        agent: Annotated[str, typer.Argument(
            help="claude | codex | gemini | cursor | hermes | moltis")],
        project: Annotated[Path | None, typer.Option(
            help="Project root (default: found from here, as every command finds it).")] = None,
        timeout: Annotated[int, typer.Option(
            help="The agent's hook timeout, seconds; the bridge denies 3 s before it.")] = 30,
        user: Annotated[bool, typer.Option(
            help="Write the user-level config instead of the project's.")] = False,
        path: Annotated[Path | None, typer.Option(help="Write this file instead.")] = None,
        server: Annotated[str | None, typer.Option(
            help="Evaluate on this remote policy server (https://...), or `env`: the one "
                 "INTERLOCK_SERVER names at each call, among those the user's "
                 "servers.toml lists (docs/fleet.md).")]
            = None,
        token_file: Annotated[Path | None, typer.Option(
            help="With --server: the 0600 file holding this machine's token.")] = None,
        pin: Annotated[str | None, typer.Option(
            help="With --server: sha256:HEX of the server's certificate or public key.")]
            = None,
        ca: Annotated[Path | None, typer.Option(
            help="With --server: the CA file that signed the server's certificate.")] = None,
        fallback_local: Annotated[list[str] | None, typer.Option(
            help="With --server: an agent event the local policy answers while the server "
                 "is unreachable (repeatable); others deny.")] = None,
    ) -> None:
        """Write the agent's hook config (merged) so it calls the bridge."""
        from interlock.hosts.assembly import Project
        from interlock.hosts.bridge.install import install
        from interlock.hosts.cli._common import user_errors

        with user_errors():
            where = Project.discover(project)
            remote = None
            if server is not None or token_file is not None:
                from interlock.engine.errors import ConfigError
                from interlock.hosts.bridge.install import RemoteArgs

                if server is None or (token_file is None and server != "env"):
                    raise ConfigError("a remote server needs both --server and --token-file",
                                      field="--server" if server is None else "--token-file",
                                      fix="or --server env: the user's servers.toml "
                                          "lists them")
                remote = RemoteArgs(server, token_file.resolve() if token_file else None,
                                    pin=pin,
                                    ca=ca.resolve() if ca else None,
                                    fallback_local=tuple(fallback_local or ()))
            plan = install(agent, where.root, timeout=timeout, user=user, path=path,
                           remote=remote)
        typer.echo(f"{where.describe()}\nwrote {plan.path}\n  command: {plan.command}\n"
                   "  (each event runs it inside a /bin/sh guard: a bridge that cannot start "
                   "denies)\n"
                   f"  timeout: {plan.timeout}s (bridge deadline {plan.deadline}s)")
        from interlock.hosts.bridge.install import TRUST_STEPS, duplicates

        steps = TRUST_STEPS.get(agent, ())
        if steps:
            typer.echo("before the agent runs these hooks:")
            for step in steps:
                typer.echo("  - " + step.replace("PROJECT", str(where.root)))
        for warning in duplicates(agent, plan.path, where.root):
            typer.echo(f"interlock bridge install: warning: {warning}", err=True)
