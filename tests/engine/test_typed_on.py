"""``engine.on(EventClass)``: registration by class, and the declarations
type checkers read (tests/typecheck/engine_on.py holds what mypy must see)."""

from __future__ import annotations

from pathlib import Path

import pytest

import interlock
from interlock import Engine, block
from interlock.events import AfterToolCall, BeforeToolCall, type_declarations


def test_a_hook_registered_by_class_runs_on_that_event_only() -> None:
    engine = Engine()
    handle = engine.on(BeforeToolCall, lambda event: block(f"no {event.tool_name}"))
    assert handle.hook.events == ("before_tool_call",)
    assert engine.emit_sync(BeforeToolCall(tool_name="rm")).reason == "no rm"
    assert not engine.emit_sync(AfterToolCall(tool_name="rm")).hooks


def test_the_decorator_takes_classes_and_names_together() -> None:
    engine = Engine()

    @engine.on([BeforeToolCall, "after_tool_call"], name="both")
    def both(event: object) -> None:
        return None

    assert engine.hooks[0].events == ("before_tool_call", "after_tool_call")
    assert both(None) is None  # returned unchanged


def test_a_class_that_is_not_an_event_is_refused_clearly() -> None:
    with pytest.raises(TypeError, match="event names or event classes"):
        Engine().on(dict, lambda event: None)  # type: ignore[call-overload]


def test_the_static_event_declarations_match_the_catalog() -> None:
    path = Path(interlock.__file__).parent / "engine" / "event_types.py"
    assert path.read_text() == type_declarations(), (
        "src/interlock/engine/event_types.py is stale: write the text of "
        "interlock.events.type_declarations() to it")
