"""`interlock events`: the event catalog, its JSON Schemas and docs."""

from typing import Annotated

import typer


def events_cmd(
    name: Annotated[str | None, typer.Argument(help="One event to describe.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON Schemas.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="The docs page.")] = False,
) -> None:
    """List the events hooks can answer, with their payloads and decisions."""
    from interlock.engine import catalog_docs
    from interlock.hosts.cli._common import print_json, user_errors

    with user_errors():
        if as_json:
            print_json(catalog_docs.catalog_json(name))
        elif markdown:
            typer.echo(catalog_docs.markdown())
        else:
            catalog_docs.print_table(name)


def register(app: typer.Typer) -> None:
    app.command("events")(events_cmd)
