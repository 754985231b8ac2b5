"""Run code right after a module is imported, without importing it.

The engine imports asyncio only when something needs it (an async hook, an
async emit, the engine's loop). One thing must still reach asyncio whenever
it arrives, whoever imports it: on Python 3.11, ``Engine.emit`` carries the
marker ``asyncio.iscoroutinefunction`` reads, which is asyncio's own object.
:func:`after_import` hands the module to a function as soon as it has run:
at once when it is imported already, else from a finder on
:data:`sys.meta_path` that steps aside after that one import.
"""

from __future__ import annotations

import sys

_TYPE_CHECKING = False  # not typing's: the in-process bridge imports this before typing
if _TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any

    Then = Callable[[ModuleType], object]


class _Loader:
    """The module's own loader, then the functions waiting for it."""

    def __init__(self, loader: Any, name: str) -> None:
        self._loader = loader
        self._name = name

    def create_module(self, spec: Any) -> ModuleType | None:
        module: ModuleType | None = self._loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The module's spec and __loader__ keep the real loader (reload,
        # getsource and the like never see this one).
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        # Taken now, not when the spec was found: a spec found and never run
        # (importlib.util.find_spec) leaves the functions waiting.
        waiting = _Finder.waiting
        for then in waiting.pop(self._name, ()):
            then(module)
        if not waiting and _Finder in sys.meta_path:
            sys.meta_path.remove(_Finder)


class _Finder:
    """On sys.meta_path while some module is awaited; finds nothing itself."""

    waiting: dict[str, list[Then]] = {}

    @classmethod
    def find_spec(cls, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in cls.waiting:
            return None
        for finder in sys.meta_path:
            if finder is cls:
                continue
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Loader(spec.loader, name)
        return spec


def after_import(name: str, then: Then) -> None:
    """Call ``then(module)`` once module ``name`` has been imported: now if it is."""
    module = sys.modules.get(name)
    if module is not None:
        then(module)
        return
    if not _Finder.waiting:
        sys.meta_path.insert(0, _Finder)
    _Finder.waiting.setdefault(name, []).append(then)
