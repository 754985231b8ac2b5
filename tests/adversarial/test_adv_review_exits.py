"""A second look at exits nobody chose, outside the engine's hook calls.

A listener on the extension bus runs extension code: its ``sys.exit()`` must
count as that listener's failure (counted, reported), never end the bus's
loop thread, which would silently stop every later delivery to every
subscriber.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from interlock import Engine, Hook, OnError
from interlock.executors import WorkerExecutor
from interlock.ext.bus import EventBus
from interlock.testing import fire


@pytest.mark.parametrize("raised", [SystemExit(0), KeyboardInterrupt(), GeneratorExit()])
def test_a_bus_listener_that_exits_fails_alone_and_delivery_goes_on(
        raised: BaseException) -> None:
    bus = EventBus()
    got: list[object] = []
    errors: list[BaseException] = []
    bus.on_error = lambda sub, message, exc: errors.append(exc)

    def quitter(message: object) -> None:
        raise raised

    bus.subscribe("t", quitter, subscriber="quitter")
    bus.subscribe("t", lambda m: got.append(m.data), subscriber="keeper")
    try:
        bus.publish("t", 1)
        assert bus.drain(10)
        bus.publish("t", 2)
        assert bus.drain(10), "the bus stopped delivering"
        assert got == [1, 2]
        assert [type(e) for e in errors] == [type(raised)] * 2
        assert [s["errors"] for s in bus.stats() if s.get("subscriber") == "quitter"] == [2]
    finally:
        bus.close()


QUITTING_WORKER = """\
import os, sys
from interlock.worker import run

def handle(request):
    if request["payload"]["args"]["command"] == "exit":
        sys.exit(0)
    os._exit(0)

run(handle)
"""


@pytest.mark.parametrize("command", ["exit", "os-exit"])
def test_a_worker_hook_that_exits_is_a_crash_and_blocks(command: str, tmp_path: Path) -> None:
    script = tmp_path / "worker.py"
    script.write_text(QUITTING_WORKER)
    ex = WorkerExecutor([sys.executable, str(script)], hook_name="w", cwd=tmp_path, timeout=20)
    eng = Engine()
    eng.register(Hook(name="w", events=("before_tool_call",), executor=ex,
                      on_error=OnError.CLOSED))
    try:
        out = fire(eng, "before_tool_call", tool_name="terminal", args={"command": command})
        assert out.blocked, out
        assert "did not answer" in (out.reason or "")
    finally:
        ex.close()  # the engine does not own an executor registered by hand
        eng.close()
    assert ex.pid is None, "the worker outlived its executor's close()"


def test_a_judge_answer_with_a_repeated_decision_is_a_contract_failure() -> None:
    # Read as its last key, this block is "none"; read as its first, a block.
    from interlock.engine.errors import ContractError
    from interlock.executors.prompt import parse_answer

    with pytest.raises(ContractError, match="duplicate key"):
        parse_answer('{"decision": "block", "reason": "exfiltration", "decision": "none"}')
    with pytest.raises(ContractError, match="not JSON"):
        parse_answer('{"decision": "block", "reason": NaN}')


@pytest.mark.parametrize("doc", ['{"a": [{"b": 1, "b": 2}]}', '[1, {"x": 1, "x": 2}]',
                                 '{"\\u0061": 1, "a": 2}', '{"delay": 1e999}',
                                 '{"delay": -1e999}', '{"delay": NaN}'])
def test_strict_json_refuses_nested_duplicates_and_infinity_by_any_spelling(doc: str) -> None:
    from interlock.engine.strictjson import AmbiguousJSON, loads

    with pytest.raises(AmbiguousJSON):
        loads(doc)
    assert loads('{"delay": 1.5e3, "n": -0.0}') == {"delay": 1500.0, "n": -0.0}
