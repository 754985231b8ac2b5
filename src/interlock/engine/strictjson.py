"""JSON that means one thing: duplicate keys and non-JSON constants are refused.

A hook's answer ``{"decision": "block", "decision": "approve"}`` is read by
most decoders as its last key, and by a person (or another tool) as its
first; an answer that two readers understand differently is not an answer
(docs/wire-contract.md). Standard library only: the bridge decodes its
server's answer with this on its fast path.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class AmbiguousJSON(ValueError):
    """The document repeats a key in one object, or uses NaN/Infinity."""


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise AmbiguousJSON(f"duplicate key {key!r} in one JSON object")
            seen.add(key)
    return obj


def _constant(name: str) -> Any:
    raise AmbiguousJSON(f"{name} is not JSON")


def _float(text: str) -> float:
    value = float(text)
    if value - value != 0:  # inf: ``1e999`` is Infinity by another spelling
        raise AmbiguousJSON(f"{text} is out of range (it would read as Infinity)")
    return value


def loads(data: str | bytes | bytearray) -> Any:
    """``json.loads``, refusing duplicate keys at any depth, NaN, Infinity and
    numbers too large to be finite (ValueError subclasses)."""
    return json.loads(data, object_pairs_hook=_unique, parse_constant=_constant,
                      parse_float=_float)
