"""Checked by mypy (``make typecheck``), never run: ``engine.on(EventClass)``
types the handler's ``event``; the string form still takes any handler.

A ``# type: ignore[...]`` here marks a line mypy must reject: with
``warn_unused_ignores`` (strict), it fails if the error goes away.
"""

from __future__ import annotations

from typing import assert_type

from interlock import Engine, block
from interlock.engine.decisions import Decision
from interlock.events import AfterToolCall, BeforeToolCall, Event


def typed_lambda(engine: Engine) -> None:
    engine.on(BeforeToolCall, lambda event: block("no") if event.tool_name == "rm" else None)
    # A lambda's event is a BeforeToolCall: a field it lacks is an error.
    engine.on(BeforeToolCall, lambda event: event.no_such_field)  # type: ignore[attr-defined]
    handle = engine.on(BeforeToolCall, lambda event: None)
    assert_type(handle.hook.events, tuple[str, ...])


def typed_decorator(engine: Engine) -> None:
    @engine.on(BeforeToolCall)
    def guard(event: BeforeToolCall) -> Decision | None:
        assert_type(event.tool_name, str)
        return None

    @engine.on(BeforeToolCall)
    def broad(event: Event) -> None:  # a handler of any event takes this one too
        return None

    @engine.on(AfterToolCall)  # type: ignore[arg-type]
    def wrong(event: BeforeToolCall) -> None:  # the wrong event class
        return None

    @engine.on(BeforeToolCall)  # type: ignore[type-var]
    def not_an_answer(event: BeforeToolCall) -> str:  # hooks answer decisions
        return "allow"


def string_form(engine: Engine) -> None:
    @engine.on("before_tool_call")
    def untyped(event):  # type: ignore[no-untyped-def]
        return None

    engine.on(["before_tool_call", AfterToolCall], lambda event: None)
