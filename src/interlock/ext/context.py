"""``ExtensionContext``: what an extension's ``register(ctx)`` receives, and
loading one extension with its registrations undone on failure. The public
face is :mod:`interlock.ext.loader`."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, Unpack

from interlock.engine.dispatch import Engine, Handle
from interlock.engine.errors import RegistrationError
from interlock.engine.hooks import HookFn, HookOptions, Source
from interlock.engine.logs import logger
from interlock.ext.bus import BusClient, EventBus
from interlock.ext.find import ENTRY_POINT_GROUP
from interlock.ext.state import ExtensionState
from interlock.ext.ui import ExtensionUI, UIState
from interlock.models.tooling import (
    CommandHandler,
    CommandSpec,
    ProviderFactory,
    ToolHandler,
    ToolSpec,
)
from interlock.policies._common import interlock_home
from interlock.store.paths import state_dir as _state_dir

if TYPE_CHECKING:
    from interlock.reliability import BreakerBook

log = logger("interlock.extensions")

F = TypeVar("F", bound=Callable[..., Any])

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")
_COMMAND_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]{0,63}$")


@dataclass
class _Names:
    """Tool, command and provider names taken so far (shared by one ExtensionSet)."""

    tools: dict[str, ToolSpec] = field(default_factory=dict)
    commands: dict[str, CommandSpec] = field(default_factory=dict)
    providers: dict[str, tuple[str, ProviderFactory]] = field(default_factory=dict)
    reserved_tools: frozenset[str] = frozenset()
    reserved_commands: frozenset[str] = frozenset()


class ExtensionTools(dict[str, ToolSpec]):
    """``ctx.tools``: the tools this extension registered (name -> spec), plus the
    active set of the session in scope (see :mod:`interlock.agent.active`)."""

    def active(self) -> list[str]:
        """Names of the tools the model sees now, in the session in scope."""
        from interlock.agent.active import current

        return current().active.names()

    def available(self) -> list[ToolSpec]:
        """Every tool of the session in scope, active or not (``.read_only``,
        ``.writes_files`` and ``.source`` say what each is)."""
        from interlock.agent.active import current

        return list(current().tools)

    def set_active(self, names: Iterable[str] | None, scope: str = "session") -> list[str]:
        """Show the model only ``names`` (None: every tool again), for the session or,
        with ``scope="turn"``, for the next model call's turn. Returns the new set.

        Never widens past what permissions allow: a tool a deny rule covers
        whatever its arguments stays inactive."""
        from interlock.agent.active import current

        return current().active.set(names, scope)


class ExtensionContext:
    """What ``register(ctx)`` receives. Everything it registers is namespaced
    by the extension's name and removed together with ``unload()``."""

    def __init__(self, engine: Engine, name: str, *, source: Source = Source.PACKAGE,
                 names: _Names | None = None, bus: EventBus | None = None,
                 state_dir: Path | None = None, ui: UIState | None = None,
                 breakers: BreakerBook | None = None) -> None:
        self.engine = engine
        self.breakers = breakers
        """The host registry's breakers: each hook registered gets one (None: none)."""
        self.name = name
        self.source = source
        self.handles: list[Handle] = []
        self.tools = ExtensionTools()
        self.commands: dict[str, CommandSpec] = {}
        self.providers: dict[str, ProviderFactory] = {}
        self.log = logger(f"interlock.ext.{name}")
        self._names = names if names is not None else _Names()
        self._bus = bus
        self._events: BusClient | None = None
        self._state: ExtensionState | None = None
        self._ui_state = ui if ui is not None else UIState()
        self.ui = ExtensionUI(self._ui_state, name)
        """Shortcuts, status line, widgets and prompts (interlock.ext.ui)."""
        self.state_dir = state_dir if state_dir is not None else (
            _state_dir(interlock_home()) / "extensions" / name)
        """This extension's own folder for state (created on first write)."""

    # -- hooks ----------------------------------------------------------------
    def on(self, event: str | Iterable[str], fn: HookFn | None = None,
           **options: Unpack[HookOptions]) -> Handle | Callable[[F], F]:
        """Register a hook named ``<extension>.<name>``; also usable as a decorator."""

        def make(f: HookFn) -> Handle:
            opts: HookOptions = {"source": self.source, **options}
            opts["name"] = f"{self.name}.{options.get('name') or getattr(f, '__name__', 'hook')}"
            hook = self.engine.hook_for(event, f, **opts)
            hook.meta["extension"] = self.name
            if self.breakers is not None:
                from interlock.reliability import harden

                # A breaker, as in-process Python hooks from the config get
                # (docs/reliability.md, Circuit breaker).
                hook = harden(hook, breakers=self.breakers)
            handle = self.engine.register(hook)
            self.handles.append(handle)
            return handle

        if fn is not None:
            return make(fn)

        def decorator(f: F) -> F:
            make(f)
            return f

        return decorator

    # -- tools, commands, providers ---------------------------------------------
    def register_tool(self, name: str, schema: dict[str, Any], handler: ToolHandler, *,
                      description: str = "", needs_approval: bool = False,
                      writes_files: bool = False, read_only: bool = False) -> ToolSpec:
        """Add a tool the model can call: ``handler(args, tool_ctx)`` -> JSON-able result."""
        if not _TOOL_NAME.match(name):
            raise RegistrationError(f"extension {self.name!r}: tool name {name!r} is invalid "
                                    "(letters, digits, _ and -, at most 64)")
        if not isinstance(schema, dict) or schema.get("type", "object") != "object":
            raise RegistrationError(f"extension {self.name!r}: tool {name!r} needs a JSON "
                                    "Schema of type object for its arguments")
        if not callable(handler):
            raise RegistrationError(f"extension {self.name!r}: tool {name!r} handler is not "
                                    "callable")
        self._claim("tool", name, self._names.tools, self._names.reserved_tools, self.tools)
        spec = ToolSpec(name=name, description=description or (handler.__doc__ or "").strip(),
                        schema=schema, handler=handler, needs_approval=needs_approval,
                        writes_files=writes_files, read_only=read_only, source=self.name)
        self.tools[name] = spec
        return spec

    def register_command(self, name: str, handler: CommandHandler, *,
                         description: str = "") -> CommandSpec:
        """Add a slash command: ``handler(arguments, command_ctx)`` -> reply text or None."""
        name = name.removeprefix("/")
        if not _COMMAND_NAME.match(name):
            raise RegistrationError(f"extension {self.name!r}: command name {name!r} is "
                                    "invalid (letters, digits, _ and -)")
        if not callable(handler):
            raise RegistrationError(f"extension {self.name!r}: command {name!r} handler is "
                                    "not callable")
        self._claim("command", name, self._names.commands, self._names.reserved_commands,
                    self.commands)
        spec = CommandSpec(name=name, description=description or (handler.__doc__ or "").strip(),
                           handler=handler, source=self.name)
        self.commands[name] = spec
        return spec

    def register_provider(self, prefix: str, factory: ProviderFactory) -> None:
        """Serve models named ``<prefix>/<model>`` with ``factory(model)``."""
        if not _COMMAND_NAME.match(prefix):
            raise RegistrationError(f"extension {self.name!r}: provider prefix {prefix!r} is "
                                    "invalid")
        owner = self._names.providers.get(prefix)
        if owner is not None or prefix in self.providers:
            who = owner[0] if owner else self.name
            raise RegistrationError(f"extension {self.name!r}: provider prefix {prefix!r} is "
                                    f"already registered by {who!r}")
        self.providers[prefix] = factory

    def _claim(self, kind: str, name: str, taken: dict[str, Any], reserved: frozenset[str],
               mine: dict[str, Any]) -> None:
        if name in reserved:
            raise RegistrationError(f"extension {self.name!r}: {kind} {name!r} clashes with "
                                    f"a built-in {kind}; choose another name")
        if name in taken:
            raise RegistrationError(f"extension {self.name!r}: {kind} {name!r} is already "
                                    f"registered by extension {taken[name].source!r}")
        if name in mine:
            raise RegistrationError(f"extension {self.name!r}: {kind} {name!r} registered "
                                    "twice")

    # -- bus and state ------------------------------------------------------------
    @property
    def events(self) -> BusClient:
        """The bus shared by the extensions of one ExtensionSet."""
        if self._events is None:
            if self._bus is None:
                self._bus = EventBus()
            self._events = BusClient(self._bus, self.name)
        return self._events

    @property
    def state(self) -> ExtensionState:
        """A small JSON store in ``state_dir``, written atomically."""
        if self._state is None:
            self._state = ExtensionState(self.state_dir)
        return self._state

    def unload(self) -> None:
        for handle in self.handles:
            handle.unregister()
        self.handles.clear()
        self._ui_state.drop(self.name)
        if self._events is not None:
            self._events.close()


def load_extension(engine: Engine, name: str, register: Callable[[ExtensionContext], Any],
                   *, source: Source = Source.PACKAGE, names: _Names | None = None,
                   bus: EventBus | None = None, state_dir: Path | None = None,
                   ui: UIState | None = None,
                   breakers: BreakerBook | None = None) -> ExtensionContext:
    """Run one extension's ``register(ctx)``; on error, undo what it registered."""
    ctx = ExtensionContext(engine, name, source=source, names=names, bus=bus,
                           state_dir=state_dir, ui=ui, breakers=breakers)
    try:
        result = register(ctx)
        if inspect.isawaitable(result):
            raise RegistrationError("register(ctx) must be a plain function, not async")
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
