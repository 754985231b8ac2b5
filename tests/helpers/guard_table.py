"""The guard's case table (tests/data/guard_cases.toml), loaded once for the tests."""

from __future__ import annotations

import tomllib
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"
CWD = "/home/alice/project"


def load() -> list[tuple[str, str, str, str | None, str]]:
    """(class, expect, home, category, command) for every case."""
    table = tomllib.loads((DATA / "guard_cases.toml").read_text())
    out = []
    for group in table["group"]:
        for command in group["commands"]:
            out.append((group["class"], group["expect"], group.get("home", "/home/alice"),
                        group.get("category"), command.replace("{data}", str(DATA))))
    return out


CASES = load()
