"""``inspect.iscoroutinefunction`` without importing ``inspect`` for it.

``inspect`` brings ``ast``, ``dis``, ``tokenize`` and ``linecache`` (~11 ms);
the engine asks this question of every hook it registers, so its modules do
not import ``inspect`` to answer it (docs/one-policy.md, Speed).

The answer is ``inspect``'s own whenever ``inspect`` is loaded. Before, it is
the same test made here (``inspect._has_code_flag`` of Python 3.11 to 3.13):
through ``functools.partialmethod`` (3.13), bound methods and
``functools.partial`` to a function, or a function-like object (a Cython
function), whose code has ``CO_COROUTINE``. Nothing can carry
``inspect.markcoroutinefunction``'s mark (3.12+) before ``inspect`` is
loaded. A test holds the two equal.
"""

from __future__ import annotations

import functools
import sys
from types import CodeType, FunctionType, MethodType

CO_COROUTINE = 0x80
"""``inspect.CO_COROUTINE``: the code of an ``async def`` (not an async generator's)."""

_UNWRAP_PARTIALMETHOD = getattr(functools, "_unwrap_partialmethod", None)
"""What 3.13's ``inspect`` unwraps first (absent before)."""
_PARTIALMETHOD_FIRST = sys.version_info >= (3, 13)


def iscoroutinefunction(obj: object) -> bool:
    """Whether ``obj`` is a coroutine function, as ``inspect.iscoroutinefunction``."""
    inspect = sys.modules.get("inspect")
    if inspect is not None:
        return bool(inspect.iscoroutinefunction(obj))
    return has_coroutine_flag(obj)


def has_coroutine_flag(f: object) -> bool:
    """``inspect._has_code_flag(f, CO_COROUTINE)``, without ``inspect``."""
    if _PARTIALMETHOD_FIRST and _UNWRAP_PARTIALMETHOD is not None:
        f = _UNWRAP_PARTIALMETHOD(f)
    while isinstance(f, MethodType):
        f = f.__func__
    while isinstance(f, functools.partial):
        f = f.func
    if not (isinstance(f, FunctionType) or _functionlike(f)):
        return False
    return bool(f.__code__.co_flags & CO_COROUTINE)  # type: ignore[attr-defined]


_VOID = object()


def _functionlike(obj: object) -> bool:
    """``inspect._signature_is_functionlike``: a duck-typed function (Cython's)."""
    if not callable(obj) or isinstance(obj, type):
        return False
    defaults = getattr(obj, "__defaults__", _VOID)
    kwdefaults = getattr(obj, "__kwdefaults__", _VOID)
    annotations = getattr(obj, "__annotations__", None)
    return (isinstance(getattr(obj, "__code__", None), CodeType)
            and isinstance(getattr(obj, "__name__", None), str)
            and (defaults is None or isinstance(defaults, tuple))
            and (kwdefaults is None or isinstance(kwdefaults, dict))
            and (isinstance(annotations, dict) or annotations is None))
