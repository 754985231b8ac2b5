"""`interlock serve` reports how late its event loop ran (docs/reliability.md,
Stalls): a hook that holds the loop shows up as loop lag in status and metrics,
which is how an operator tells a blocked loop from a starved machine."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from helpers.serve import Serve
from interlock.hosts.server.looplag import WINDOW, LoopLag

pytestmark = pytest.mark.e2e

CONFIG = textwrap.dedent("""\
    [[hooks]]
    name = "slow"
    events = ["before_tool_call"]
    handler = "slow.py"
    """)
SLOW = textwrap.dedent("""\
    import time

    def handle(event):
        if event.args.get("command") == "hold the loop":
            time.sleep(0.8)  # a sync hook runs on the server's loop: it holds it
        return None
    """)


def test_a_hook_that_holds_the_loop_shows_as_loop_lag(tmp_path: Path) -> None:
    serve = Serve(tmp_path, CONFIG, files={"slow.py": SLOW}).start()
    try:
        serve.event({"tool_name": "terminal", "args": {"command": "ls"}})
        code, before = serve.request("GET", "/v1/status")
        assert code == 200, before
        assert before["event_loop_lag"]["max_s"] < 0.5
        serve.event({"tool_name": "terminal", "args": {"command": "hold the loop"}})
        code, after = serve.request("GET", "/v1/status")
        assert code == 200, after
        assert after["event_loop_lag"]["max_s"] >= 0.6
        assert after["event_loop_lag"]["recent_max_s"] >= 0.6
        code, text = serve.request("GET", "/metrics")
        assert code == 200
        line = next(ln for ln in text.splitlines()
                    if ln.startswith("interlock_event_loop_lag_max_seconds "))
        assert float(line.split()[1]) >= 0.6
    finally:
        assert serve.stop() == 0


def test_the_recent_lag_forgets_after_two_windows() -> None:
    lag = LoopLag()
    start = lag._window_start
    lag.note(0.9, start + 1)
    assert lag.status()["event_loop_lag"] == {"max_s": 0.9, "recent_max_s": 0.9}
    lag.note(0.01, start + WINDOW + 1)  # next window: the last one still counts
    assert lag.status()["event_loop_lag"]["recent_max_s"] == 0.9
    lag.note(0.02, start + 2 * WINDOW + 2)  # two windows on: forgotten
    assert lag.status()["event_loop_lag"] == {"max_s": 0.9, "recent_max_s": 0.02}
