"""`interlock mcp`: put the project's policy in front of MCP servers (docs/mcp.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def _need_sdk() -> None:
    from interlock.engine.errors import ConfigError, install_extra

    try:
        import mcp  # noqa: F401
    except ImportError:
        raise ConfigError("the MCP commands need the official MCP SDK",
                          fix=install_extra("mcp")) from None


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Gate MCP servers with the project's policy.",
                        no_args_is_help=True)
    app.add_typer(group, name="mcp")

    @group.command("proxy", context_settings={"allow_extra_args": True,
                                              "ignore_unknown_options": True})
    def proxy_cmd(
        ctx: typer.Context,
        url: Annotated[str | None, typer.Option(
            "--url", help="The server's streamable HTTP URL (instead of a command).")] = None,
        name: Annotated[str | None, typer.Option(
            "--name", help="The server's name in mcp__<server>__<tool> (default: the "
                           "command's file name, or the URL's host).")] = None,
        project: Annotated[Path | None, typer.Option(
            "--project", help="The project root (default: found from here).")] = None,
        config: Annotated[Path | None, typer.Option(
            "--config", help="A hooks config file instead of the project's.")] = None,
        cwd: Annotated[str | None, typer.Option(
            "--cwd", help="The folder the server command starts in (default: here; the "
                          "project is still found from here).")] = None,
    ) -> None:
        """Serve MCP on stdio in front of a server: `interlock mcp proxy -- CMD ARGS...`
        or `interlock mcp proxy --url URL`. Every tool call, resource read and prompt
        get runs the policy first."""
        import anyio

        from interlock.engine.errors import ConfigError
        from interlock.hosts.cli._common import user_errors

        with user_errors():
            _need_sdk()
            from interlock.hosts.mcp.proxy import Upstream, run_proxy, server_name_for

            command = tuple(ctx.args)
            if (url is None) == (not command):
                raise ConfigError("give the server as a command after -- or as --url, "
                                  "not both and not neither", field="interlock mcp proxy",
                                  fix="interlock mcp proxy -- npx -y some-server, or "
                                      "interlock mcp proxy --url http://127.0.0.1:8000/mcp")
            upstream = Upstream(command=command, url=url, cwd=cwd)
            anyio.run(lambda: run_proxy(upstream, name=name or server_name_for(upstream),
                                        project=project, config=config))

    @group.command("wrap")
    def wrap_cmd(
        agent: Annotated[str, typer.Argument(help="claude, codex or gemini.")],
        undo: Annotated[bool, typer.Option(
            "--undo", help="Put back the entries as they were before wrapping.")] = False,
        user: Annotated[bool, typer.Option(
            "--user", help="The agent's user config instead of the project's.")] = False,
        project: Annotated[Path | None, typer.Option(
            "--project", help="The project root (default: found from here).")] = None,
    ) -> None:
        """Route an agent's MCP servers through `interlock mcp proxy` (--undo: back)."""
        from interlock.hosts.assembly import Project
        from interlock.hosts.cli._common import user_errors
        from interlock.hosts.mcp.wrap import claude_local_tables, config_file
        from interlock.hosts.mcp.wrap import undo as undo_file
        from interlock.hosts.mcp.wrap import wrap as wrap_file

        with user_errors():
            root = Project.discover(project).root
            path = config_file(agent, root, user=user)
            places: list[tuple[Path, tuple[str, ...] | None, str]] = [(path, None, str(path))]
            if agent == "claude" and not user:
                # `claude mcp add`'s default scope: this project's tables (its own and its
                # subfolders') in the user file.
                user_file = config_file(agent, root, user=True)
                places += [(user_file, local, f"{user_file} (local scope of {local[1]})")
                           for local in claude_local_tables(user_file, root)]
            reports = [(undo_file(agent, p, table=t) if undo else wrap_file(agent, p, table=t),
                        where) for p, t, where in places]
        verb = "restored" if undo else "wrapped"
        for report, where in reports:
            for name in report.changed:
                typer.echo(f"{verb} {name} in {where}")
            for name in report.already:
                typer.echo(f"{name} already goes through the proxy ({where})")
            for name, why in report.skipped.items():
                typer.echo(f"interlock: {'not restored' if undo else 'NOT GATED'}: {name} in "
                           f"{where}: {why}", err=True)
        if not any(r.changed or r.already or r.skipped for r, _ in reports):
            typer.echo(f"no MCP servers to {'restore' if undo else 'wrap'} in "
                       f"{' or '.join(where for _, _, where in places)}")
        if any(r.skipped for r, _ in reports):
            raise typer.Exit(1)
