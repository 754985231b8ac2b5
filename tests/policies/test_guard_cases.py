"""The guard's case table (tests/data/guard_cases.toml), case by case.

Each dangerous case must be blocked with a reason naming its category; each
benign case must pass. The table documents the class of every case.
"""

from __future__ import annotations

import pytest

from helpers.guard_table import CASES, CWD
from interlock.policies.destructive import check


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
