"""A short soak of `interlock serve` with faults injected (bench/soak.py, scaled down):
concurrent clients, a worker killed, a fail-closed hook crashing, a hook hanging, a
store outage and serve SIGKILLed and restarted; every answer is checked against its
right decision and every answered decision must be in the audit log."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from soak import run


@pytest.mark.e2e
def test_a_short_soak_gives_no_wrong_answer_and_loses_no_answered_decision(
        tmp_path: Path) -> None:
    figures = run(tmp_path, seconds=12.0, clients=4, quiet=True)
    assert figures["wrong"] == 0, figures["wrong_examples"]
    assert figures["missing_from_audit"] == 0, figures["missing_examples"]
    assert figures["records_stored"] == figures["records_expected"]
    assert figures["answered"] >= 200, figures  # enough traffic to mean something
    # Every fault was injected, and serve came back and stopped cleanly.
    assert [f.split("s ", 1)[1] for f in figures["faults"]] == [
        "worker killed (1 process)", "store outage begins", "store outage ends",
        "serve SIGKILLed", "serve restarted", "worker killed (1 process)"]
    assert figures["serve_exit"] == 0
