"""Extensions: a module or package exposes ``register(ctx)``.

    def register(ctx):
        ctx.on("before_tool_call", guard, priority=-10, matcher="terminal")
        ctx.register_tool("word_count", {"type": "object", ...}, count_words)
        ctx.register_command("hello", lambda args, cctx: f"hello {args}")
        ctx.register_provider("myllm", lambda model: MyProvider(model))
        ctx.events.subscribe("git.*", on_git_event)
        ctx.state.set("runs", ctx.state.get("runs", 0) + 1)
        ctx.ui.shortcut("ctrl+g", refresh)        # interlock.ext.ui; drawn by `chat`
        # in a hook, tool, command or shortcut: ctx.tools.set_active([...])
        # (interlock.agent.active)

Where they come from (:class:`ExtensionSet`, loaded in this order, so the
most deliberately installed load first):

1. the ``interlock.extensions`` entry-point group (Python packages);
2. user folders ``$INTERLOCK_HOME/extensions/<name>/``;
3. project folders ``<project>/.interlock/extensions/<name>/`` (these run
   only once approved: ``interlock ext approve NAME``).

A folder holds ``extension.toml`` and a module (see :mod:`interlock.ext.pins`).
A package declares its guards as a module-level ``GUARDS = [...]``; ``ext
install`` records them in the pin, so they hold even if the module later
fails to import.

Consent: an extension installed with ``interlock ext install`` carries a pin
(:mod:`interlock.ext.pins`) and does not load once its content differs from
it; a folder a user placed in their own extensions folder by hand has no pin
and loads as it is; a project extension needs an approval stored in the
user's home.

Isolation: a crash while loading one extension undoes what it registered,
disables it with a clear message, and the others still load. If it declared
``guards`` (events its fail-closed hooks guard), a placeholder hook that
fails closed is registered on each of them, so those events block until the
extension loads again (:meth:`ExtensionSet.reload`). The same holds for an
extension that is not approved or whose content changed since its pin.

Dependencies: ``requires`` in ``extension.toml`` orders loading and fails
an extension closed when what it requires is missing, of the wrong version,
in a cycle or did not load (:mod:`interlock.ext.deps`).

Names: a tool or command name already taken (by a built-in passed as
``reserved_tools`` / ``reserved_commands``, or by another extension) is a
load error for the extension that registers it second, never a silent
override. Providers clash the same way on their prefix.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from importlib.metadata import distribution, entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

from interlock.engine.dispatch import Engine, Handle

if TYPE_CHECKING:
    from interlock.reliability import BreakerBook
from interlock.engine.errors import ConfigError, FailureMode, RegistrationError
from interlock.engine.hooks import Hook, OnError, Source
from interlock.engine.invoke import new_id
from interlock.engine.logs import logger
from interlock.engine.sinks import FailureRecord
from interlock.ext.bus import EventBus, Message, Subscription
from interlock.ext.candidate import (
    Candidate,
    ExtensionInfo,
    Unavailable,
    import_folder,
    version_of,
)
from interlock.ext.context import (
    ExtensionContext,
    _Names,
    load_entry_points,
    load_extension,
)
from interlock.ext.deps import (
    activate_packages,
    interlock_problem,
    load_order,
    missing_packages,
    packages_dir,
)
from interlock.ext.find import ENTRY_POINT_GROUP, folders, project_folder, user_folder
from interlock.ext.pins import (
    Pin,
    PinStore,
    default_pins,
    distribution_digest,
    folder_digest,
    pin_mismatch,
    project_key,
    read_manifest,
)
from interlock.ext.ui import UIState
from interlock.models.tooling import CommandSpec, ModelProvider, ProviderFactory, ToolSpec
from interlock.policies._common import interlock_home
from interlock.store.paths import state_dir

__all__ = [
    "ENTRY_POINT_GROUP",
    "ExtensionContext",
    "ExtensionInfo",
    "ExtensionSet",
    "load_entry_points",
    "load_extension",
]

log = logger("interlock.extensions")

# -- the set of extensions of one host ------------------------------------------------

class ExtensionSet:
    """The extensions of one host: loads them, isolates failures, and collects
    their tools, commands and providers for the agent to use."""

    def __init__(self, engine: Engine, *, home: Path | None = None,
                 project: Path | None = None, reserved_tools: Iterable[str] = (),
                 reserved_commands: Iterable[str] = (), pins: PinStore | None = None,
                 use_entry_points: bool = True, bus: EventBus | None = None,
                 breakers: BreakerBook | None = None) -> None:
        self.engine = engine
        self.breakers = breakers
        self.home = home if home is not None else interlock_home()
        self.project = project
        self.pins: PinStore = pins if pins is not None else default_pins(self.home)
        self.use_entry_points = use_entry_points
        self._own_bus = bus is None
        self.bus = bus if bus is not None else EventBus(
            on_overflow=self._bus_dropped, on_error=self._bus_failed)
        self._names = _Names(reserved_tools=frozenset(reserved_tools),
                             reserved_commands=frozenset(reserved_commands))
        self._loaded: dict[str, ExtensionContext] = {}
        self._placeholders: dict[str, Handle] = {}
        self._candidates: dict[str, Candidate] = {}
        self._marks: dict[str, tuple[str, str]] = {}
        """What each extension was when it was (last) loaded: content and pin."""
        self.infos: dict[str, ExtensionInfo] = {}
        self.ui = UIState()
        """What extensions registered for a terminal; ``interlock chat`` draws it."""
        self._broken: dict[str, str] = {}
        """Why an extension cannot load, from the requires of all (load_all)."""

    # -- discovery ------------------------------------------------------------------
    def discover(self) -> list[Candidate]:
        """Every extension that could load, without running any of its code."""
        found: list[Candidate] = []
        if self.use_entry_points:
            for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
                found.append(Candidate(ep.name, Source.PACKAGE, ep.value, entry_point=ep))
        for source, root in ((Source.USER, user_folder(self.home)),
                             (Source.PROJECT, project_folder(self.project)
                              if self.project else None)):
            if root is None:
                continue
            try:
                listed = folders(root)
            except OSError as exc:
                # Which extensions it holds, and what they guard, is unknown: no host
                # may run as if it held none.
                raise ConfigError(f"cannot list the extensions here: {exc.strerror or exc}",
                                  file=str(root), fix="make the folder readable, or remove it"
                                  ) from exc
            found.extend(self._folder_candidate(folder, source) for folder in listed)
        return found

    def _folder_candidate(self, folder: Path, source: Source) -> Candidate:
        try:
            manifest = read_manifest(folder)
        except ConfigError as exc:
            # Not loadable; reported under the folder's name.
            return Candidate(folder.name, source, str(folder), error=exc)
        return Candidate(manifest.name, source, str(folder), guards=manifest.guards,
                          manifest=manifest)

    # -- loading --------------------------------------------------------------------
    def load_all(self) -> list[ExtensionInfo]:
        """Discover and load every extension, what one requires first; returns what
        happened to each (docs/extensions.md, Dependencies)."""
        found = self.discover()
        by_name: dict[str, Candidate] = {}
        for cand in found:
            by_name.setdefault(cand.name, cand)
        requires = {c.name: c.manifest.requires for c in by_name.values()
                    if c.manifest is not None}
        order, broken = load_order(list(by_name), requires,
                                   {n: version_of(c) for n, c in by_name.items()})
        self._broken = broken
        rank = {name: i for i, name in enumerate(order)}
        for cand in sorted(found, key=lambda c: rank[c.name]):
            self._load_candidate(cand)
        return list(self.infos.values())

    def load(self, name: str, register: Callable[[ExtensionContext], Any], *,
             source: Source = Source.CODE, guards: Iterable[str] = ()) -> ExtensionInfo:
        """Load an extension given in code (tests, embedding hosts)."""
        return self._load_candidate(Candidate(name, source, "code", guards=tuple(guards),
                                               register=register))

    def reload(self, name: str) -> ExtensionInfo:
        """Unload ``name`` and load it again from where it came from."""
        cand = self._candidates.get(name)
        if cand is None:
            raise ConfigError(f"no extension named {name!r}", fix="see `interlock ext list`")
        self.unload(name)
        if cand.manifest is not None:
            cand = self._folder_candidate(cand.manifest.path, cand.source)
        return self._load_candidate(cand)

    def refresh(self) -> list[str]:
        """Bring the loaded set in line with what is on disk now (a host's live reload):
        load new extensions, reload the ones whose folder or pin changed, and unload the
        ones that are gone (as a restart would). Returns the names that changed.

        While one reloads, a fail-closed stand-in holds the events its hooks were on, so
        no call passes in the moment between unloading and loading it again.
        """
        found: dict[str, Candidate] = {}
        for cand in self.discover():
            found.setdefault(cand.name, cand)
        changed: list[str] = []
        for name in list(self.infos):
            old = self._candidates.get(name)
            if old is None or old.register is not None:
                continue  # given in code: nothing on disk to follow
            now = found.pop(name, None)
            if now is not None and self._mark(now) == self._marks.get(name):
                continue
            hold = self._hold(name)
            try:
                self.unload(name)
                self._candidates.pop(name, None)
                self._marks.pop(name, None)
                if now is not None:
                    self._load_candidate(now)
            finally:
                if hold is not None:
                    hold.unregister()
            changed.append(name)
        for name, cand in found.items():
            if name not in self.infos:
                self._load_candidate(cand)
                changed.append(name)
        return changed

    def _mark(self, cand: Candidate) -> tuple[str, str]:
        """(content, pin) of a candidate, compared by :meth:`refresh`."""
        content = ""
        if cand.entry_point is None:
            try:
                content = folder_digest(Path(cand.origin))
            except Exception as exc:  # unreadable or gone: still a state to compare
                content = f"error: {exc}"
        key = (project_key(self.project, cand.name)
               if cand.source is Source.PROJECT and self.project is not None else cand.name)
        try:
            pin = repr(self.pins.get(key))
        except Exception as exc:
            pin = f"error: {exc}"
        return content, pin

    def _hold(self, name: str) -> Handle | None:
        """A fail-closed stand-in on every event ``name``'s hooks (and guards) are on."""
        ctx = self._loaded.get(name)
        info = self.infos.get(name)
        events = {e for h in (ctx.handles if ctx is not None else []) for e in h.hook.events}
        events.update(info.guards if info is not None else ())
        events &= _event_names()
        if not events:
            return None
        return self.engine.register(Hook(
            name=f"{name}.reloading", events=tuple(sorted(events)),
            executor=Unavailable(f"extension {name!r} is being reloaded"),
            on_error=OnError.CLOSED, source=info.source if info is not None else Source.USER,
            kind="extension-guard", timeout=5.0,
            description=f"stands in for {name!r} while it reloads"))

    def _load_candidate(self, cand: Candidate) -> ExtensionInfo:
        if cand.name in self._loaded or (cand.name in self.infos
                                         and self._candidates.get(cand.name) is not cand):
            prev = self.infos[cand.name]
            info = ExtensionInfo(cand.name, cand.source, cand.origin, status="failed",
                                 message=f"an extension named {cand.name!r} is already "
                                         f"loaded from {prev.origin}; rename one of them")
            log.error("extension %r (%s) disabled: %s", cand.name, cand.origin, info.message)
            return info
        self._candidates[cand.name] = cand
        if cand.register is None:
            self._marks[cand.name] = self._mark(cand)
        info = ExtensionInfo(cand.name, cand.source, cand.origin, guards=cand.guards)
        self.infos[cand.name] = info
        try:
            pin, problem, status = self.consent(cand)
        except Exception as exc:  # an unreadable file or consent store: this one fails closed
            pin, status = None, "failed"
            problem = str(exc) if isinstance(exc, ConfigError) else f"{type(exc).__name__}: {exc}"
        info.pin = pin
        if pin is not None and pin.guards:
            # Recorded at install: they hold even when the module cannot be imported,
            # and an edit that un-approves it cannot also move them elsewhere.
            cand.guards = info.guards = tuple(dict.fromkeys([*cand.guards, *pin.guards]))
        if problem is not None:
            info.status, info.message = status, problem
            log.error("extension %r disabled: %s", cand.name, problem)
            if status != "disabled":
                self._guard(cand, info)
            return info
        problem = self._requirements_problem(cand)
        if problem is not None:
            info.status, info.message = "failed", problem
            log.error("extension %r disabled: %s", cand.name, problem)
            self._guard(cand, info)
            return info
        try:
            register = self._register_fn(cand)
            if not info.guards and cand.entry_point is not None:
                info.guards = cand.guards
            ctx = load_extension(self.engine, cand.name, register, source=cand.source,
                                 names=self._names, bus=self.bus, ui=self.ui,
                                 breakers=self.breakers,
                                 state_dir=state_dir(self.home) / "extensions" / cand.name)
        except Exception as exc:
            info.status = "failed"
            info.message = (str(exc) if isinstance(exc, (RegistrationError, ConfigError))
                            else f"{type(exc).__name__}: {exc}")
            log.error("extension %r (%s) disabled: %s", cand.name, cand.origin, info.message)
            info.guards = cand.guards
            self._guard(cand, info)
            return info
        self._commit(ctx)
        info.status = "loaded"
        info.tools = tuple(ctx.tools)
        info.commands = tuple(ctx.commands)
        info.providers = tuple(ctx.providers)
        return info

    def consent(self, cand: Candidate) -> tuple[Pin | None, str | None, str]:
        """(pin, why it may not load, status) for one candidate; runs none of its code."""
        if cand.error is not None:
            return None, str(cand.error), "failed"
        if cand.source is Source.PROJECT and cand.manifest is not None:
            assert self.project is not None
            pin = self.pins.get(project_key(self.project, cand.name))
            if pin is None:
                return None, ("project extension not approved yet; review it, then run "
                              f"`interlock ext approve {cand.name}`"), "unapproved"
            return pin, self._check_pin(pin, folder_digest(cand.manifest.path)), "changed"
        pin = self.pins.get(cand.name)
        if cand.manifest is not None and not cand.manifest.enabled:
            return pin, "disabled in its extension.toml (enabled = false)", "disabled"
        if pin is None:
            return None, None, ""
        if not pin.enabled:
            return pin, f"disabled (`interlock ext enable {cand.name}` turns it on)", "disabled"
        if cand.manifest is not None and pin.kind in ("folder", "git"):
            return pin, self._check_pin(pin, folder_digest(cand.manifest.path)) or \
                self._check_packages(pin), "changed"
        if cand.entry_point is not None and pin.kind == "package":
            try:
                dist = distribution(pin.dist)
            except Exception:
                return pin, f"its package {pin.dist!r} is not installed", "failed"
            if pin.version and dist.version != pin.version:
                return pin, (f"package {pin.dist} is now version {dist.version}, pinned "
                             f"{pin.version}; run `interlock ext approve {cand.name}`"), "changed"
            return pin, self._check_pin(pin, distribution_digest(dist)), "changed"
        return pin, None, ""

    def _requirements_problem(self, cand: Candidate) -> str | None:
        """Why a candidate whose consent holds still cannot load: the Interlock
        version, an extension it requires that did not load, a Python package."""
        manifest = cand.manifest
        if manifest is None:
            return None
        problem = interlock_problem(manifest.interlock) or self._broken.get(cand.name)
        if problem is not None:
            return problem
        for req in manifest.requires:
            dep = self.infos.get(req.name)
            if dep is None or dep.status != "loaded":
                why = "it is not installed" if dep is None else \
                    f"it is {dep.status}: {dep.message}"
                return f"requires {req.text!r}, which did not load ({why})"
        if manifest.packages:
            missing = missing_packages(self.home, cand.name, manifest.packages)
            if missing:
                return (f"needs Python package(s) {', '.join(missing)}; run `interlock ext "
                        f"install {manifest.path}` (it installs them for this extension)")
            activate_packages(self.home, cand.name)
        return None

    def _check_packages(self, pin: Pin) -> str | None:
        """The Python packages installed for it are code too: pinned the same way."""
        if not pin.packages_digest:
            return None
        folder = packages_dir(self.home, pin.name)
        now = folder_digest(folder) if folder.is_dir() else "missing"
        if now == pin.packages_digest:
            return None
        return (f"its Python packages in {folder} changed since they were installed; "
                f"review them, then run `interlock ext approve {pin.name}`, or install it "
                "again")

    @staticmethod
    def _check_pin(pin: Pin, digest: str) -> str | None:
        return pin_mismatch(pin, digest)

    def _register_fn(self, cand: Candidate) -> Callable[[ExtensionContext], Any]:
        if cand.register is not None:
            return cand.register
        if cand.entry_point is not None:
            target = cand.entry_point.load()
            guards = getattr(target, "GUARDS", None)
            if isinstance(guards, (list, tuple)):
                cand.guards = tuple(str(g) for g in guards)
            register = getattr(target, "register", target)
            if not callable(register):
                raise RegistrationError(f"entry point {cand.origin} has no register(ctx)")
            return register  # type: ignore[no-any-return]
        assert cand.manifest is not None
        module = import_folder(cand.manifest)
        register = getattr(module, "register", None)
        if not callable(register):
            raise ConfigError("the module defines no register(ctx)",
                              file=str(cand.manifest.module_file()), field="register",
                              fix="add `def register(ctx): ...`")
        return register  # type: ignore[no-any-return]

    def _guard(self, cand: Candidate, info: ExtensionInfo) -> None:
        """Fail-closed placeholders on the events a failed extension guards."""
        events = tuple(e for e in cand.guards or info.guards if e in _event_names())
        if not events:
            return
        hook = Hook(name=f"{cand.name}.unavailable", events=events,
                    executor=Unavailable(f"extension {cand.name!r} is not loaded: "
                                          f"{info.message}"),
                    on_error=OnError.CLOSED, source=cand.source, kind="extension-guard",
                    timeout=5.0,
                    description=f"stands in for {cand.name!r} until it loads again")
        self._placeholders[cand.name] = self.engine.register(hook)

    def _commit(self, ctx: ExtensionContext) -> None:
        self._loaded[ctx.name] = ctx
        self._names.tools.update(ctx.tools)
        self._names.commands.update(ctx.commands)
        for prefix, factory in ctx.providers.items():
            self._names.providers[prefix] = (ctx.name, factory)

    def unload(self, name: str) -> None:
        ctx = self._loaded.pop(name, None)
        if ctx is not None:
            ctx.unload()
            for tool in ctx.tools:
                self._names.tools.pop(tool, None)
            for cmd in ctx.commands:
                self._names.commands.pop(cmd, None)
            for prefix in ctx.providers:
                self._names.providers.pop(prefix, None)
        placeholder = self._placeholders.pop(name, None)
        if placeholder is not None:
            placeholder.unregister()
        self.infos.pop(name, None)

    # -- what the agent consumes ------------------------------------------------------
    @property
    def tools(self) -> dict[str, ToolSpec]:
        return dict(self._names.tools)

    @property
    def commands(self) -> dict[str, CommandSpec]:
        return dict(self._names.commands)

    @property
    def providers(self) -> dict[str, ProviderFactory]:
        return {p: f for p, (_n, f) in self._names.providers.items()}

    async def call_tool(self, name: str, args: dict[str, Any], ctx: Any = None) -> Any:
        spec = self._names.tools.get(name)
        if spec is None:
            raise ConfigError(f"no extension tool named {name!r}")
        result = spec.handler(args, ctx)
        if inspect.isawaitable(result):
            result = await result
        return result

    async def run_command(self, name: str, arguments: str = "", ctx: Any = None) -> str | None:
        spec = self._names.commands.get(name.removeprefix("/"))
        if spec is None:
            raise ConfigError(f"no extension command named {name!r}")
        result = spec.handler(arguments, ctx)
        if inspect.isawaitable(result):
            result = await result
        return result

    def provider(self, model: str) -> ModelProvider:
        """The provider for ``<prefix>/<model>`` (or ``<prefix>:<model>``)."""
        prefix, sep, rest = model.replace(":", "/", 1).partition("/")
        entry = self._names.providers.get(prefix) if sep else None
        if entry is None:
            raise ConfigError(f"no extension provides models with prefix {prefix!r}",
                              fix=f"known: {', '.join(sorted(self._names.providers)) or 'none'}")
        return entry[1](rest)

    def close(self) -> None:
        for name in list(self._loaded):
            self.unload(name)
        for name in list(self._placeholders):
            self._placeholders.pop(name).unregister()
        if self._own_bus:
            self.bus.close()

    # -- bus failures go where hook failures go: the engine's sinks ---------------------
    def _bus_dropped(self, sub: Subscription, message: Message) -> None:
        # A flood must not flood the store: the 1st, 10th, 100th, ... drop of a
        # subscription is a dead letter, carrying the count so far.
        if str(sub.dropped).rstrip("0") != "1":
            return
        self._bus_report(sub, message, FailureMode.DROPPED,
                         f"queue of {sub.subscriber or 'a listener'} on {sub.topic!r} is full "
                         f"({sub.maxsize}); {sub.dropped} message(s) dropped so far")

    def _bus_failed(self, sub: Subscription, message: Message, exc: BaseException) -> None:
        self._bus_report(sub, message, FailureMode.CRASH,
                         f"listener raised {type(exc).__name__}: {exc}")

    def _bus_report(self, sub: Subscription, message: Message, mode: FailureMode,
                    error: str) -> None:
        self.engine.report_failure(FailureRecord(
            hook=f"extension:{sub.subscriber or 'host'}", event=f"bus:{message.topic}",
            session_id="", subject=message.sender or None, mode=mode, error=error,
            invocation_id=new_id(), fail_closed=False))


def _event_names() -> frozenset[str]:
    from interlock.engine.catalog import BY_NAME

    return frozenset(BY_NAME)
