"""`interlock init`: a commented starter config for this project."""

from pathlib import Path
from typing import Annotated

import typer

# Two starter hooks that cannot break anything (one keeps .env files from the shell, one
# hides secrets from the model) and the bundled destructive-command guard.
STARTER = """\
# Interlock hooks for this project. Fields: docs/configuration.md.
# Project hooks run only once approved (approvals are pinned to their content):
#
#   interlock hooks approve --all
#   interlock hooks list
#   echo '{"args": {"command": "cat .env"}}' > call.json
#   interlock hooks test before_tool_call --tool terminal --payload-file call.json
#
# More kinds of hooks (Python, workers, hook folders, Claude Code scripts,
# extensions): the examples/ folder of the Interlock repository.

[[hooks]]                         # a shell command per call: the request is one JSON
name = "no-env-files"             # line on stdin; exit 2 blocks with stderr as the reason
description = "Keep .env files away from the agent's shell"
events = ["before_tool_call"]
matcher = "terminal"              # the agent's shell tool
command = '''
grep -Eq "[.]env([^a-zA-Z]|$)" || exit 0
echo ".env files hold secrets; ask the user for the one value you need" >&2
exit 2'''
on_error = "closed"               # if the hook itself fails, the call is blocked
timeout = 5

[[hooks]]                         # bundled: hides API keys and tokens from the model
name = "secret-redaction"
enabled = true

[[hooks]]                         # bundled: blocks commands that destroy what cannot
name = "destructive-guard"        # be got back (rm -rf ~, git reset --hard on main, ...)
enabled = true                    # its options: docs/guard.md
"""


def init_cmd(
    directory: Annotated[Path, typer.Argument(
        help="Project root to write .interlock/config.toml in.", file_okay=False)]
    = Path("."),
    force: Annotated[bool, typer.Option(
        "--force", help="Overwrite an existing .interlock/config.toml.")] = False,
) -> None:
    """Write a commented .interlock/config.toml: two safe starter hooks and the
    bundled destructive-command guard."""
    from interlock.engine.errors import ConfigError
    from interlock.hosts.cli._common import user_errors

    target = directory / ".interlock" / "config.toml"
    with user_errors():
        if target.exists() and not force:
            raise ConfigError("a config already exists here", file=str(target),
                              fix="edit it, or pass --force to replace it")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(STARTER, encoding="utf-8")
    typer.echo(f"wrote {target}\nnext: interlock hooks approve --all")


def register(app: typer.Typer) -> None:
    app.command("init")(init_cmd)
