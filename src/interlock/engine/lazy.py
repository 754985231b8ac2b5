"""Names a package exports but imports only when first read (PEP 562).

``interlock``, ``interlock.agent`` and ``interlock.executors`` keep their
public names while importing the modules behind them on first use: a bridge
call or ``from interlock import block`` pays only for what it reads
(docs/one-policy.md, Speed). Each package's ``__getattr__`` and ``__dir__``
are one-line calls into the two functions here.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


def attribute(namespace: dict[str, Any], table: Mapping[str, str], name: str) -> object:
    """``name`` from the module ``table`` says holds it, kept in the package's
    ``namespace`` so the next read is a plain global; AttributeError for a name
    the table does not have."""
    module = table.get(name)
    if module is None:
        raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    namespace[name] = value
    return value


def names(namespace: dict[str, Any], table: Mapping[str, str]) -> list[str]:
    """What ``dir()`` lists for the package: its globals and its lazy names."""
    return sorted({*namespace, *table})
