"""The extension entry point: a module or package exposes ``register(ctx)``.

    def register(ctx):
        ctx.on("before_tool_call", guard, priority=-10, matcher="terminal")

Extensions are discovered from the ``interlock.extensions`` entry-point group
(``load_entry_points``) and, later, from project and user folders.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from importlib.metadata import entry_points
from typing import Any, TypeVar, Unpack

from interlock._dispatch import Engine, Handle
from interlock._errors import RegistrationError
from interlock._hooks import HookFn, HookOptions, Source

log = logging.getLogger("interlock.extensions")

F = TypeVar("F", bound=Callable[..., Any])

ENTRY_POINT_GROUP = "interlock.extensions"


class ExtensionContext:
    """What ``register(ctx)`` receives. Every hook it registers is namespaced
    by the extension's name and can be removed together with ``unload()``."""

    def __init__(self, engine: Engine, name: str, *, source: Source = Source.PACKAGE) -> None:
        self.engine = engine
        self.name = name
        self.source = source
        self.handles: list[Handle] = []

    def on(self, event: str | Iterable[str], fn: HookFn | None = None,
           **options: Unpack[HookOptions]) -> Handle | Callable[[F], F]:
        """Register a hook named ``<extension>.<name>``; also usable as a decorator."""

        def make(f: HookFn) -> Handle:
            opts: HookOptions = {"source": self.source, **options}
            opts["name"] = f"{self.name}.{options.get('name') or getattr(f, '__name__', 'hook')}"
            handle = self.engine.on(event, f, **opts)
            self.handles.append(handle)
            return handle

        if fn is not None:
            return make(fn)

        def decorator(f: F) -> F:
            make(f)
            return f

        return decorator

    def unload(self) -> None:
        for handle in self.handles:
            handle.unregister()
        self.handles.clear()


def load_extension(engine: Engine, name: str, register: Callable[[ExtensionContext], Any],
                   *, source: Source = Source.PACKAGE) -> ExtensionContext:
    """Run one extension's ``register(ctx)``; on error, undo what it registered."""
    ctx = ExtensionContext(engine, name, source=source)
    try:
        register(ctx)
    except Exception as exc:
        ctx.unload()
        raise RegistrationError(f"extension {name!r} failed to load: "
                                f"{type(exc).__name__}: {exc}") from exc
    return ctx


def load_entry_points(engine: Engine) -> tuple[list[ExtensionContext], list[str]]:
    """Load every ``interlock.extensions`` entry point; a broken one is reported, not fatal."""
    loaded: list[ExtensionContext] = []
    errors: list[str] = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            target = ep.load()
            register = getattr(target, "register", target)
            loaded.append(load_extension(engine, ep.name, register))
        except Exception as exc:
            msg = f"extension {ep.name!r} ({ep.value}) disabled: {exc}"
            log.error(msg)
            errors.append(msg)
    return loaded, errors
