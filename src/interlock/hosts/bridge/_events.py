"""Host payload -> catalog event. Used by the server and by in-process bridges.

This imports the catalog and the payload classes, so the bridge's fast path
(a server is up) never imports it: the server maps the payload instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from interlock.hosts.bridge._common import BridgeError

if TYPE_CHECKING:
    from interlock.events import Event


def catalog_name(system: str, host_event: str) -> str:
    from interlock.engine.catalog import from_alias

    found = from_alias(system, host_event)
    if not found:
        raise BridgeError(f"{system} event {host_event!r} has no Interlock event; "
                          f"see `interlock events` for the {system} names it maps")
    return found[0].name


def build_event(system: str, payload: Any) -> Event:
    """The catalog event for ``system``'s hook ``payload`` (raises BridgeError/ConfigError)."""
    from interlock.engine.catalog import spec
    from interlock.events import make
    from interlock.hosts.bridge import host

    if not isinstance(payload, dict):
        raise BridgeError(f"the {system} hook input must be a JSON object, "
                          f"got {type(payload).__name__}")
    try:
        name, fields = host(system).to_event(payload)
    except (TypeError, ValueError, AttributeError, KeyError) as exc:
        # A field of the wrong type (say, "loop_count": "many"): the input is
        # bad, not the server.
        raise BridgeError(f"the {system} hook input has a malformed field: "
                          f"{type(exc).__name__}: {exc}") from None
    allowed = _FIELDS.get(name)
    if allowed is None:
        allowed = _FIELDS[name] = frozenset(f.name for f in spec(name).all_fields())
    data = {k: v for k, v in fields.items() if k in allowed and v is not None}
    return make(name, data, source=f"{system} hook input")


_FIELDS: dict[str, frozenset[str]] = {}
"""Event name -> the names of its payload's fields (the catalog does not change)."""
