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
# extensions, framework adapters): `interlock init --examples` copies them here.

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
    examples: Annotated[bool, typer.Option(
        "--examples", help="Instead, copy Interlock's examples (every kind of hook, an "
                           "extension, the framework adapters) into DIRECTORY/"
                           "interlock-examples.")] = False,
) -> None:
    """Write a commented .interlock/config.toml: two safe starter hooks and the
    bundled destructive-command guard."""
    from interlock.engine.errors import ConfigError
    from interlock.hosts.cli._common import user_errors

    if examples:
        with user_errors():
            out = copy_examples(directory / "interlock-examples")
        typer.echo(f"wrote {out} (start with its README.md)")
        return
    target = directory / ".interlock" / "config.toml"
    with user_errors():
        if target.exists() and not force:
            raise ConfigError("a config already exists here", file=str(target),
                              fix="edit it, or pass --force to replace it")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(STARTER, encoding="utf-8")
    typer.echo(f"wrote {target}\nnext: interlock hooks approve --all")


def examples_dir() -> Path | None:
    """The examples: inside the installed package (the wheel carries them as
    ``interlock/_examples``), or beside ``src/`` in a checkout."""
    import interlock

    package = Path(interlock.__file__).resolve().parent
    for candidate in (package / "_examples", package.parents[1] / "examples"):
        if (candidate / "README.md").is_file():
            return candidate
    return None


def copy_examples(target: Path) -> Path:
    import shutil

    from interlock.engine.errors import ConfigError

    source = examples_dir()
    if source is None:
        raise ConfigError("this install of Interlock carries no examples",
                          fix="install from the wheel or a checkout (README.md, Install)")
    if target.exists():
        raise ConfigError("the folder already exists", file=str(target),
                          fix="remove it, or name another DIRECTORY")
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return target


def register(app: typer.Typer) -> None:
    app.command("init")(init_cmd)
