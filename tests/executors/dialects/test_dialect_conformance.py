"""The conformance table in docs/dialects.md is generated from the bridges'
own answers and tables, and says what each agent really gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from interlock.hosts.bridge import HOSTS, host
from interlock.hosts.bridge.conformance import applies, markdown, rows

DOC = Path(__file__).resolve().parents[3] / "docs" / "dialects.md"


def test_docs_hold_the_generated_table() -> None:
    text = DOC.read_text()
    start = text.index("## Conformance")
    end = text.find("\n## ", start + 1)
    section = text[start:] if end == -1 else text[start:end]
    assert section.rstrip("\n") == markdown(), (
        "regenerate: python -c 'from interlock.hosts.bridge import conformance as c; "
        "print(c.markdown())'")


@pytest.mark.parametrize("system", HOSTS)
def test_every_host_event_has_a_row(system: str) -> None:
    from interlock.engine.catalog import SPECS, names_in

    mod = host(system)
    listed = {r[0] for r in rows(system)}
    mapped = {n for spec in SPECS for n in names_in(system, spec)}
    assert mapped | mod.UNMAPPED_OBSERVE | mod.UNMAPPED_GATE == listed


@pytest.mark.parametrize("system", HOSTS)
def test_no_rewrite_is_ever_silently_passed(system: str) -> None:
    # Every rewrite is applied, denied, or refused at install: never "no effect".
    for host_event, _event, what, status in rows(system):
        if what.startswith("modify "):
            assert status.split(":")[0].split(" ")[0] in (
                "supported", "expressed", "denied", "refused"), (host_event, what, status)


def test_result_rewrites_per_host() -> None:
    table = {(s, r[0], r[2]): r[3] for s in HOSTS for r in rows(s)}
    assert table["codex", "PostToolUse", "modify result"].startswith("expressed as")
    assert table["gemini", "AfterTool", "modify result"].startswith("expressed as")
    assert table["claude", "PostToolUse", "modify result"].startswith("supported")
    assert table["hermes", "post_tool_call", "modify result"] == "refused at install"
    assert table["moltis", "AfterToolCall", "modify result"] == "refused at install"
    assert table["moltis", "ToolResultPersist", "modify result"].startswith("supported")
    assert not applies("hermes", "post_tool_call", "after_tool_call", "result")
