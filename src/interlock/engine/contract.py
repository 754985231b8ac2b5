"""The payload contract: what a modify may change, and immutability.

A ``modify`` replaces whole named fields that the event lets hooks change, and
the result is re-validated (catalog types, then host validators such as a
tool's JSON schema). A hook that mutates the payload in place has broken the
contract; it is detected by comparing against a private copy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import msgspec

from interlock.engine.catalog import TYPES, EventSpec
from interlock.engine.errors import ContractError, HookFailure
from interlock.engine.events import Event
from interlock.engine.hooks import Hook

Validator = Callable[[Event], None]
"""Raises ValueError when a changed payload is invalid (e.g. args vs a tool schema)."""

CONTAINER_TYPES = frozenset({"dict[str, Any]", "list[dict[str, Any]]", "list[str]", "Any"})


_SCALARS = frozenset({str, int, float, bool, type(None)})


def copy_payload(value: Any) -> Any:
    """A private deep copy of JSON-like data (dicts and lists), cheaply.

    Scalars are shared (immutable); a flat dict, the usual tool args, costs one
    C-level copy.
    """
    cls = type(value)
    if cls is dict:
        scalars = _SCALARS
        for v in value.values():
            if type(v) not in scalars:
                return {k: copy_payload(v) for k, v in value.items()}
        return value.copy()
    if cls is list:
        return [copy_payload(v) for v in value]
    return value


def container_fields(spec: EventSpec) -> tuple[str, ...]:
    """The fields of an event a hook could mutate in place."""
    return tuple(f.name for f in spec.fields if f.type in CONTAINER_TYPES)


def apply_changes(
    spec: EventSpec, event: Event, changes: Mapping[str, Any],
    validators: Iterable[Validator] = (),
) -> Event:
    """Apply a modify, re-validating the result."""
    fields = {f.name: f for f in spec.fields}
    typed: dict[str, Any] = {}
    for name, value in changes.items():
        if name == "tool_name":
            raise ContractError("modify may never change tool_name")
        if name not in spec.mutable:
            allowed = ", ".join(spec.mutable) or "none"
            raise ContractError(
                f"modify names {name!r}, which {spec.name} does not let hooks change "
                f"(changeable: {allowed})"
            )
        try:
            typed[name] = msgspec.convert(value, TYPES[fields[name].type], strict=True)
        except msgspec.ValidationError as exc:
            raise ContractError(f"modify of {name!r} is invalid: {exc}") from None
    new = event.replace(**typed)
    for validator in validators:
        try:
            validator(new)
        except (ValueError, TypeError) as exc:
            raise ContractError(f"the changed {spec.name} payload is invalid: {exc}") from None
    return new

def check_mutation(
    hook: Hook, event: Event, snaps: list[tuple[str, Any]], failure: HookFailure | None
) -> tuple[Event, HookFailure | None]:
    """Compare the payload with its private copy; restore it if a hook mutated it."""
    for name, snap in snaps:
        if getattr(event, name) != snap:
            return restore(hook, event, snaps, name)
    return event, failure


def rebuilt(event: Event, snaps: list[tuple[str, Any]]) -> Event:
    """``event`` with its snapshotted fields put back from their private copies."""
    return event.replace(**{n: copy_payload(v) for n, v in snaps})


def restore(hook: Hook, event: Event, snaps: list[tuple[str, Any]], name: str
            ) -> tuple[Event, ContractError]:
    """The payload rebuilt from its private copy, and the contract error to report."""
    return rebuilt(event, snaps), ContractError(
        f"hook {hook.qualified_name} changed {name!r} in place; payloads are immutable: "
        "return modify(...) from a modifier instead"
    )
