"""docs/adapters.md's table "Events each adapter fires" says what each adapter's
``FIRES`` holds: an event is fired where its cell is not "no"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = (Path(__file__).parents[2] / "docs" / "adapters.md").read_text()
COLUMNS = {"pydantic_ai": 1, "langchain": 2}


def fired_in_doc(column: int) -> set[str]:
    table = DOC.split("## Events each adapter fires", 1)[1].split("\n\n", 2)[1]
    fired: set[str] = set()
    for row in table.splitlines()[2:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        if cells[0].startswith("every other"):
            continue
        if not cells[column].startswith("no"):
            fired |= set(re.findall(r"`([a-z_]+)`", cells[0]))
    return fired


@pytest.mark.parametrize("module", sorted(COLUMNS))
def test_the_doc_table_lists_exactly_the_events_the_adapter_fires(module):
    adapter = pytest.importorskip(f"interlock.adapters.{module}")
    assert fired_in_doc(COLUMNS[module]) == set(adapter.FIRES)
