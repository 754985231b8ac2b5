"""A second look at exits nobody chose, outside the engine's hook calls.

A listener on the extension bus runs extension code: its ``sys.exit()`` must
count as that listener's failure (counted, reported), never end the bus's
loop thread, which would silently stop every later delivery to every
subscriber.
"""

from __future__ import annotations

import pytest

from interlock._extbus import EventBus


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
