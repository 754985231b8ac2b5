"""injection-filter: flags instruction-override text in tool results and chat."""

from __future__ import annotations

from typing import Any

from interlock.engine.decisions import Decision
from interlock.events import Event
from interlock.policies.injection import Action, InjectionFilter

_filter = InjectionFilter()


def configure(options: dict[str, Any]) -> None:
    """Options: action (wrap | block | flag), threshold (score, default 3)."""
    global _filter
    _filter = InjectionFilter(action=Action(options.get("action", "wrap")),
                              threshold=int(options.get("threshold", 3)))


def handle(event: Event) -> Decision | None:
    return _filter.check(event)
