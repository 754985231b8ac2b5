"""Typed, immutable event payloads, generated from the catalog table.

Each catalog entry becomes a frozen ``msgspec.Struct`` subclass of
:class:`Event` (``before_tool_call`` -> ``BeforeToolCall``). Build one with
keyword arguments; a hook that wants a change returns ``modify(...)`` and the
engine makes the changed copy.

Public as :mod:`interlock.events`, which re-exports this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, cast

import msgspec

from interlock.engine.catalog import COMMON, SPECS, TYPES, EventSpec
from interlock.engine.errors import ConfigError


class Event(msgspec.Struct, frozen=True, kw_only=True, gc=False, forbid_unknown_fields=True):
    """Base of every event payload. Fields common to all events live here.

    ``gc=False`` halves construction cost; payloads hold plain JSON-like data
    and never reference themselves, so they cannot form cycles.
    """

    session_id: str = ""
    """Session this event belongs to; stable for the session."""
    turn_id: str | None = None
    """Current turn, where there is one."""
    platform: str = "cli"
    """Where the event came from: cli, api, telegram, ..."""
    cwd: str = ""
    """Working directory of the agent."""
    transcript_path: str | None = None
    """Transcript file, where one exists."""
    parent_session_id: str | None = None
    """Parent session inside a subagent."""
    depth: int = 0
    """Subagent depth; 0 for the top-level agent."""

    spec: ClassVar[EventSpec]
    name: ClassVar[str]

    def replace(self, **changes: Any) -> Event:
        """A copy with ``changes`` applied (fields replaced whole)."""
        return msgspec.structs.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The payload as JSON-compatible builtins."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out


assert tuple(f.name for f in COMMON) == Event.__struct_fields__  # one table, no drift


def _class_name(event: str) -> str:
    return "".join(part.capitalize() for part in event.split("_"))


def _build(spec: EventSpec) -> type[Event]:
    fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
    for f in spec.fields:
        typ = TYPES[f.type]
        fields.append((f.name, typ) if f.required else (f.name, typ, f.default))
    cls = msgspec.defstruct(
        _class_name(spec.name), fields, bases=(Event,), kw_only=True, frozen=True,
        gc=False, forbid_unknown_fields=True, module="interlock.events",
        namespace={"spec": spec, "name": spec.name, "__doc__": spec.doc},
    )
    return cast(type[Event], cls)


EVENT_TYPES: dict[str, type[Event]] = {spec.name: _build(spec) for spec in SPECS}
"""Event name -> payload class."""

globals().update({cls.__name__: cls for cls in EVENT_TYPES.values()})

if TYPE_CHECKING:  # the same classes, declared for type checkers (see engine/event_types.py)
    from interlock.engine.event_types import *  # noqa: F403


def event_type(name: str) -> type[Event]:
    """The payload class of event ``name`` (did-you-mean error when unknown)."""
    try:
        return EVENT_TYPES[name]
    except KeyError:
        from interlock.engine.catalog import spec

        spec(name)  # raises UnknownEventError
        raise


def make(name: str, payload: dict[str, Any] | None = None, *, source: str = "payload",
         **fields: Any) -> Event:
    """Build event ``name`` from a JSON-like payload, with clear errors."""
    cls = event_type(name)
    data = dict(payload or {})
    data.update(fields)
    try:
        return msgspec.convert(data, cls)
    except msgspec.ValidationError as exc:
        field = None
        text = str(exc)
        if "`$." in text:
            field = text.split("`$.", 1)[1].split("`", 1)[0]
        raise ConfigError(text, file=source, field=field,
                          fix=f"see `interlock events {name}` for the fields") from None


def schema(name: str) -> dict[str, Any]:
    """JSON Schema of event ``name``'s payload."""
    out: dict[str, Any] = msgspec.json.schema(event_type(name))
    return out


def type_declarations() -> str:
    """The source of ``interlock/engine/event_types.py``: every event class declared
    statically, so type checkers see ``BeforeToolCall`` and its fields."""
    out = [
        '"""The event classes as type checkers see them, generated from the catalog.',
        "",
        "interlock.events builds these classes from the catalog table when it is",
        "imported; a type checker cannot run that, so it reads these declarations",
        "(imported by interlock.events under TYPE_CHECKING; empty at run time).",
        "Regenerate it after changing the catalog: write the text of",
        "interlock.events.type_declarations() to src/interlock/engine/event_types.py.",
        "tests/engine/test_typed_on.py fails when this file and the catalog disagree.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import TYPE_CHECKING, Any",
        "",
        "if TYPE_CHECKING:",
        "    from interlock.engine.events import Event",
    ]
    for cls in EVENT_TYPES.values():
        out += ["", "", f"    class {cls.__name__}(Event, frozen=True, kw_only=True):",
                f'        """``{cls.spec.name}``."""', ""]
        for f in cls.spec.fields:
            out.append(f"        {f.name}: {f.type}" if f.required
                       else f"        {f.name}: {f.type} = {f.default!r}")
    out += ["", "", "__all__ = [", *(f'    "{n}",' for n in sorted(
        cls.__name__ for cls in EVENT_TYPES.values())), "]", ""]
    return "\n".join(out)


_BY_CLASS_NAME = {cls.__name__: cls for cls in EVENT_TYPES.values()}


def __getattr__(name: str) -> Any:  # keeps mypy quiet about generated names
    # One dict read: the import system asks this module for ``__path__`` on
    # every ``from interlock.events import ...`` inside a function.
    try:
        return _BY_CLASS_NAME[name]
    except KeyError:
        raise AttributeError(name) from None


__all__ = ["EVENT_TYPES", "Event", "event_type", "make", "schema", *sorted(
    cls.__name__ for cls in EVENT_TYPES.values())]
