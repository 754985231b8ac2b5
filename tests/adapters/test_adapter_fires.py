"""docs/adapters.md's table "Events each adapter fires" says what each adapter's FIRES
holds, and the Claude Agent SDK adapter answers every hook event the SDK accepts."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest

from interlock.engine.catalog import BY_NAME

pytestmark = pytest.mark.slow  # each case imports an agent framework: about a second

ROOT = Path(__file__).resolve().parents[2]
COLUMNS = {"pydantic-ai": "interlock.adapters.pydantic_ai",
           "LangChain": "interlock.adapters.langchain",
           "OpenAI Agents SDK": "interlock.adapters.openai_agents",
           "Claude Agent SDK": "interlock.adapters.claude_agent_sdk"}


def _table() -> tuple[list[str], list[list[str]]]:
    section = (ROOT / "docs" / "adapters.md").read_text().split(
        "## Events each adapter fires", 1)[1]
    lines = [line for line in section.split("\n\n", 2)[1].splitlines() if line.startswith("|")]
    rows = [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines]
    return rows[0], rows[2:]


@pytest.mark.parametrize("column", sorted(COLUMNS))
def test_the_docs_table_says_what_the_adapter_fires(column: str) -> None:
    module = pytest.importorskip(COLUMNS[column])
    header, rows = _table()
    at = header.index(column)
    said: set[str] = set()
    for row in rows:
        if row[0].startswith("every other"):
            named = set(BY_NAME) - said - set().union(*(
                re.findall(r"`(\w+)`", r[0]) for r in rows if r is not row))
        else:
            named = set(re.findall(r"`(\w+)`", row[0]))
            assert named <= set(BY_NAME), row[0]
        fired = not row[at].startswith("no")
        assert (named <= module.FIRES) if fired else not (named & module.FIRES), (
            f"{column}: the row for {sorted(named)} says {row[at]!r}, FIRES says "
            f"{sorted(named & module.FIRES)}")
        said |= named


def test_the_claude_adapter_answers_every_hook_event_the_sdk_accepts() -> None:
    pytest.importorskip("claude_agent_sdk")
    from claude_agent_sdk.types import HookEvent

    from interlock.adapters.claude_agent_sdk import EVENTS, FIRES
    from interlock.engine.catalog import from_alias

    accepted = {name for literal in typing.get_args(HookEvent)
                for name in typing.get_args(literal)}
    assert set(EVENTS) == accepted
    assert {from_alias("claude", name)[0].name for name in EVENTS} == FIRES
