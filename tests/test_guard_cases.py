"""The guard's case table (tests/data/guard_cases.toml), case by case.

Each dangerous case must be blocked with a reason naming its category; each
benign case must pass. The table documents the class of every case.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from interlock.policies.destructive import check

DATA = Path(__file__).parent / "data"
CWD = "/home/alice/project"


def _cases() -> list[tuple[str, str, str, str | None, str]]:
    table = tomllib.loads((DATA / "guard_cases.toml").read_text())
    out = []
    for group in table["group"]:
        for command in group["commands"]:
            out.append((group["class"], group["expect"], group.get("home", "/home/alice"),
                        group.get("category"), command.replace("{data}", str(DATA))))
    return out


CASES = _cases()


def test_the_table_is_big_enough_on_both_sides():
    dangerous = [c for c in CASES if c[1] == "block"]
    benign = [c for c in CASES if c[1] == "allow"]
    assert len(dangerous) >= 150, len(dangerous)
    assert len(benign) >= 150, len(benign)
    commands = [c[4] for c in CASES]
    assert len(set(commands)) == len(commands), "a command is listed twice"


@pytest.mark.parametrize(("klass", "expect", "home", "category", "command"), CASES,
                         ids=[f"{c[1]}:{c[4][:50]}" for c in CASES])
def test_case(klass, expect, home, category, command):
    finding = check(command, home=home, cwd=CWD)
    if expect == "allow":
        assert finding is None, f"[{klass}] {command!r} was blocked: {finding}"
        return
    assert finding is not None, f"[{klass}] {command!r} was allowed"
    if category is not None:
        assert finding.category == category, f"[{klass}] {command!r}: {finding}"
