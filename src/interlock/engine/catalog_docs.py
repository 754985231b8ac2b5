"""Everything derived from the catalog table for people: JSON, Markdown, tables."""

from __future__ import annotations

from typing import Any

from interlock.engine.catalog import BY_NAME, SPECS, SYSTEMS, EventSpec, spec
from interlock.engine.decisions import Verdict
from interlock.engine.events import schema
from interlock.engine.outcome import outcome_schema


def accepted(s: EventSpec) -> list[str]:
    if s.kind.value == "observe":
        return []
    names = {v.value for v in s.accepts} | {Verdict.STOP.value}
    if s.context:
        names.add("context")
    order = ["block", "modify", "approve", "ask", "respond", "skip", "stop", "retry", "context"]
    return [n for n in order if n in names]


def describe(s: EventSpec) -> dict[str, Any]:
    return {
        "name": s.name,
        "kind": s.kind.value,
        "doc": s.doc,
        "decisions": accepted(s),
        "mutable": list(s.mutable),
        "respond": s.respond,
        "matcher_subject": ("command:NAME" if s.name == "command" else s.subject),
        "fail_closed": s.fail_closed.value,
        "aliases": {k: s.aliases[k] for k in SYSTEMS if k in s.aliases},
        "schema": schema(s.name),
    }


def catalog_json(name: str | None = None) -> dict[str, Any]:
    if name is not None:
        return describe(spec(name))
    return {
        "contract_version": 1,
        "events": [describe(s) for s in SPECS],
        "outcome_schema": outcome_schema(),
    }


def markdown() -> str:
    """The docs page (docs/events.md is this output; a test keeps them equal)."""
    lines = [
        "# Event catalog",
        "",
        "Generated from the one table in `src/interlock/engine/catalog.py` by "
        "`interlock events --markdown`. Do not edit by hand.",
        "",
        "A **gate** event runs before something happens; hooks may change or stop it. "
        "An **observe** event reports what happened; returned decisions are warnings. "
        "`stop` is accepted by every gate event.",
        "",
        "| event | kind | decisions | changeable fields | " + " | ".join(SYSTEMS) + " |",
        "|---|---|---|---|" + "---|" * len(SYSTEMS),
    ]
    for s in SPECS:
        alias = " | ".join(s.aliases.get(k, "") for k in SYSTEMS)
        lines.append(f"| `{s.name}` | {s.kind.value} | {', '.join(accepted(s))} | "
                     f"{', '.join(s.mutable)} | {alias} |")
    lines += ["", "Every event also carries: `session_id`, `turn_id`, `platform`, `cwd`, "
              "`transcript_path`, `parent_session_id`, `depth`.", ""]
    for s in SPECS:
        lines += [f"## `{s.name}` ({s.kind.value})", "", s.doc, ""]
        if s.fields:
            lines += ["| field | type | changeable | description |", "|---|---|---|---|"]
            for f in s.fields:
                default = "" if f.required else f" (default `{f.default!r}`)"
                lines.append(f"| `{f.name}` | `{f.type}` | "
                             f"{'yes' if f.name in s.mutable else ''} | {f.doc}{default} |")
            lines.append("")
        if s.kind.value == "gate":
            lines.append(f"Decisions: {', '.join(accepted(s))}. "
                         f"A failing fail-closed hook: {s.fail_closed.value.replace('_', ' ')}.")
            if s.respond:
                lines.append(f"`respond` value: `{s.respond}`.")
            if s.subject:
                subject = "`command:NAME`" if s.name == "command" else f"`{s.subject}`"
                lines.append(f"String matchers match {subject}.")
            lines.append("")
    return "\n".join(lines)


def print_table(name: str | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if name is not None:
        s = spec(name)
        table = Table(title=f"{s.name} ({s.kind.value}): {s.doc}")
        for col in ("field", "type", "changeable", "description"):
            table.add_column(col)
        for f in s.all_fields():
            table.add_row(f.name, f.type, "yes" if f.name in s.mutable else "", f.doc)
        console.print(table)
        console.print(f"decisions: {', '.join(accepted(s)) or '(observe)'}")
        return
    table = Table(title="Interlock events")
    for col in ("event", "kind", "decisions", "changeable"):
        table.add_column(col)
    for s in SPECS:
        table.add_row(s.name, s.kind.value, ", ".join(accepted(s)), ", ".join(s.mutable))
    console.print(table)


assert set(BY_NAME) == {s.name for s in SPECS}
