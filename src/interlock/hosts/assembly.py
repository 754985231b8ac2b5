"""One host assembly: which project, its engine, registry and extensions, kept live.

Every host that runs the project's policy assembles it here, the same way:
``interlock run`` and ``chat`` (the reference agent), ``serve`` and its chat
gateway, the bridge when no server is up, and ``hooks test``. So a hook, an
extension's hook, or the fail-closed stand-in of an extension that failed,
holds in all of them alike.

- :class:`Project` finds the project like git finds a repository: up from
  the working folder to the first one holding ``.interlock/``, stopping at a
  repository root (``.git``) or the filesystem root (:mod:`interlock.config.project`).
- :meth:`Host.open` loads the registry's revision (``interlock.config.registry``:
  config files, hook folders, bundled hooks, consent) into one engine and the
  extensions (entry points, user and approved project folders) into the same
  engine. The registry swaps only the hooks it owns on a reload, so extension
  hooks survive it.
- :meth:`Host.start_live` (sync hosts: a thread with its own loop) or
  :meth:`Host.start_live_task` (async hosts: a task on their loop) keeps it
  live: an edited config or hook file, a pinned script anywhere, ``hooks
  approve`` / ``revoke`` / ``enable`` / ``disable`` from another terminal, a
  managed-folder change, or an extension that appears, changes, loses its
  approval or goes is applied within about half a second
  (docs/configuration.md, Live reload).

This module does not import the reference agent: the built-in tool and
command names extensions may not take are listed here (a test keeps them in
step with the agent's).
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from interlock.config.project import find_root
from interlock.config.watch import DEBOUNCE_MS, POLL_MS, Plan, watch
from interlock.engine.errors import ConfigError
from interlock.engine.logs import logger

if TYPE_CHECKING:
    import asyncio

    from interlock.config.model import PermissionRule
    from interlock.config.registry import Registry
    from interlock.engine.dispatch import Engine
    from interlock.ext.loader import ExtensionInfo, ExtensionSet
    from interlock.models.tooling import CommandSpec, ProviderFactory, ToolSpec
    from interlock.reliability import BreakerBook

__all__ = ["RESERVED_COMMANDS", "RESERVED_TOOLS", "Host", "Project", "load_extensions",
           "open_host"]

log = logger("interlock.host")

RESERVED_TOOLS = frozenset({"delegate", "edit_file", "grep", "list_dir", "read_file",
                            "terminal", "todo", "write_file"})
"""The reference agent's built-in tools: no extension may register one of these names."""
RESERVED_COMMANDS = frozenset({"compact", "exit", "help", "model", "new", "quit", "reset"})
"""The reference agent's built-in slash commands, likewise."""


class Project:
    """Which project a command runs in, and how it was found."""

    __slots__ = ("found", "root", "searched", "start")

    def __init__(self, root: Path, *, found: bool, start: Path, searched: bool = False) -> None:
        self.root = root
        """The project root (the working folder when no project was found)."""
        self.found = found
        """Whether ``root`` holds ``.interlock/``."""
        self.start = start
        """Where the search began."""
        self.searched = searched
        """Whether folders above ``start`` were searched (not with ``--project``)."""

    @classmethod
    def discover(cls, explicit: Path | None = None, *, cwd: Path | None = None) -> Project:
        """``explicit`` (``--project``) as given, else the nearest folder at or above
        ``cwd`` (default: the working folder) holding ``.interlock/``."""
        from interlock.store.paths import project_dir

        if explicit is not None:
            root = explicit.resolve()
            return cls(root, found=project_dir(root).is_dir(), start=root)
        start = (cwd if cwd is not None else Path.cwd()).resolve()
        found = find_root(str(start))
        return cls(Path(found) if found else start, found=found is not None, start=start,
                   searched=True)

    def describe(self) -> str:
        """One line for a command's header: the root, or that there is none."""
        if self.found:
            return f"project root: {self.root}"
        return f"no project: no .interlock/ in {self._where()}"

    def warning(self) -> str:
        return (f"interlock: warning: no .interlock/ found in {self._where()}; no project, "
                "user or managed hooks apply here")

    def _where(self) -> str:
        # The walk stops at a repository root: say so, since that is where it ended.
        return (f"{self.start} or above (up to the repository root)" if self.searched
                else str(self.start))


class Host:
    """The engine of one host, with the registry and the extensions that feed it."""

    def __init__(self, engine: Engine, registry: Registry, extensions: ExtensionSet | None,
                 *, project: Project | None = None, home: Path | None = None,
                 use_entry_points: bool = True) -> None:
        self.engine = engine
        self.registry = registry
        self.extensions = extensions
        """None when none were looked for (the in-process bridge with none present)."""
        self.project = project if project is not None else Project(
            registry.project_root, found=True, start=registry.project_root)
        self.home = home
        self.use_entry_points = use_entry_points
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._task: asyncio.Task[None] | None = None

    # -- opening ---------------------------------------------------------------------
    @classmethod
    def open(cls, project: Project | Path, *, config: Path | None = None,
             accept_hooks: bool = False, sinks: Sequence[Any] = (), home: Path | None = None,
             use_entry_points: bool = True, record: bool = True, store: str | None = None,
             extensions: bool | None = True, timed: bool = False,
             lenient: bool = False) -> Host:
        """The registry's engine with every extension loaded into it.

        ``project``: a :class:`Project` or a root folder taken as it is. With
        ``record`` every dispatch is audited and every failure dead-lettered in
        the store (``store``, else ``$INTERLOCK_STORE``, else the state dir's
        ``interlock.db``). ``extensions``: True loads them, None only when there
        are any to find (cheap to ask), False never. ``lenient``: a config with
        no good revision opens anyway, every gate blocking.

        Raises ConfigError when the hooks config has no good revision (unless
        ``lenient``): a host never runs tools with the configured hooks missing.
        """
        from interlock.config.registry import close_engine, open_engine

        if not isinstance(project, Project):
            root = Path(project).resolve()
            project = Project(root, found=(root / ".interlock").is_dir(), start=root)
        engine, registry = open_engine(project.root, config=config, accept_hooks=accept_hooks,
                                       sinks=tuple(sinks), record=record, store=store,
                                       timed=timed, lenient=lenient)
        loaded: ExtensionSet | None = None
        try:
            if extensions is None:
                from interlock.ext.find import present

                extensions = present(project.root, home, entry_points=use_entry_points)
            if extensions:
                loaded = load_extensions(engine, project.root, home=home,
                                         use_entry_points=use_entry_points,
                                         breakers=registry.breakers)
        except BaseException:
            close_engine(engine, registry)
            raise
        return cls(engine, registry, loaded, project=project, home=home,
                   use_entry_points=use_entry_points)

    # -- what hosts consume ------------------------------------------------------------
    @property
    def rules(self) -> list[PermissionRule]:
        """The registry's ``[[permissions]]`` rules (of its current revision)."""
        return self.registry.permissions

    @property
    def failed(self) -> list[ExtensionInfo]:
        return [i for i in self.extension_infos if i.status != "loaded"]

    @property
    def extension_infos(self) -> list[ExtensionInfo]:
        return list(self.extensions.infos.values()) if self.extensions is not None else []

    @property
    def tools(self) -> dict[str, ToolSpec]:
        return self.extensions.tools if self.extensions is not None else {}

    @property
    def commands(self) -> dict[str, CommandSpec]:
        return self.extensions.commands if self.extensions is not None else {}

    @property
    def providers(self) -> dict[str, ProviderFactory]:
        return self.extensions.providers if self.extensions is not None else {}

    def missing_policy(self) -> bool:
        """Outside any project, with no user, managed or extension hooks either."""
        if self.project.found:
            return False
        return not any(e.enabled for e in self.registry.hooks) and not self.extension_infos

    def warn_if_unguarded(self) -> bool:
        """Print the one-line warning of :meth:`missing_policy` on stderr; True if so."""
        if self.missing_policy():
            sys.stderr.write(self.project.warning() + "\n")
            return True
        return False

    # -- live reload -------------------------------------------------------------------
    def watch_plan(self) -> Plan:
        """The registry's folders and pinned files, and the extension folders."""
        reg = self.registry.watch_plan()
        dirs = list(reg.dirs)
        for root in self._extension_roots():
            if root.is_dir() and not any(root.resolve().is_relative_to(d) for d in dirs):
                dirs.append(root.resolve())
        return Plan(sorted(set(dirs)), reg.files,
                    lambda p: reg.relevant(p) or self._extension_change(p))

    def _extension_roots(self) -> list[Path]:
        from interlock.ext.find import project_folder, user_folder

        return [user_folder(self.home), project_folder(self.project.root)]

    def _extension_change(self, path: str) -> bool:
        from interlock.config.trust import PINS

        p = Path(path)
        if p.name.endswith((".tmp", ".lock", ".pyc")) or "__pycache__" in p.parts:
            return False
        if p.name == PINS:
            return True
        return any(p.is_relative_to(r) or p.is_relative_to(r.resolve())
                   for r in self._extension_roots())

    def apply(self, paths: set[str]) -> None:
        """Apply changed ``paths`` (all of them when empty: the first check)."""
        ext = {p for p in paths if self._extension_change(p)}
        if not paths or len(ext) < len(paths):
            self.registry.reload()
        if not paths or ext:
            self.refresh_extensions()

    def refresh_extensions(self) -> list[str]:
        """Load, reload or unload extensions to match the disk (see ExtensionSet.refresh)."""
        if self.extensions is None:
            from interlock.ext.find import present

            if not present(self.project.root, self.home, entry_points=self.use_entry_points):
                return []
            self.extensions = load_extensions(self.engine, self.project.root, home=self.home,
                                              use_entry_points=self.use_entry_points,
                                              breakers=self.registry.breakers)
            return list(self.extensions.infos)
        changed = self.extensions.refresh()
        for name in changed:
            info = self.extensions.infos.get(name)
            log.warning("extension %r reloaded: %s", name,
                        "gone" if info is None else info.status + (
                            f" ({info.message})" if info.message else ""))
        return changed

    async def watch(self, stop: threading.Event | asyncio.Event, *,
                    debounce_ms: int = DEBOUNCE_MS, poll_ms: int = POLL_MS) -> None:
        """Apply every change until ``stop`` is set."""
        with contextlib.suppress(OSError):
            self.registry.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        await watch(self.watch_plan, self.apply, stop, debounce_ms=debounce_ms,
                    poll_ms=poll_ms)

    def start_live(self, *, debounce_ms: int = DEBOUNCE_MS, poll_ms: int = POLL_MS) -> None:
        """Watch in a background thread with its own loop (sync hosts: run, chat)."""
        if self._thread is not None or self._task is not None:
            return
        self._stop.clear()

        def run() -> None:
            import asyncio

            try:
                asyncio.run(self.watch(self._stop, debounce_ms=debounce_ms, poll_ms=poll_ms))
            except Exception:
                log.exception("live reload stopped; restart the host to apply changes")

        self._thread = threading.Thread(target=run, name="interlock-live-reload", daemon=True)
        self._thread.start()

    def start_live_task(self, *, debounce_ms: int = DEBOUNCE_MS,
                        poll_ms: int = POLL_MS) -> asyncio.Task[None]:
        """Watch as a task on the running loop (async hosts: serve)."""
        import asyncio

        if self._task is None:
            self._stop.clear()
            self._task = asyncio.get_running_loop().create_task(
                self.watch(self._stop, debounce_ms=debounce_ms, poll_ms=poll_ms),
                name="interlock-live-reload")
        return self._task

    async def stop_live_task(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        self._stop.set()
        import asyncio

        try:
            await asyncio.wait_for(task, 10)
        except TimeoutError:
            task.cancel()
        except Exception:
            log.exception("live reload ended with an error")

    def stop_live(self) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(10)

    # -- closing -----------------------------------------------------------------------
    def close(self, record_timeout: float | None = None) -> bool:
        """Stop everything; False when the store did not commit what was recorded
        within ``record_timeout`` seconds (else the 30 s every close waits)."""
        from interlock.config.registry import close_engine

        self.stop_live()
        if self.extensions is not None:
            # Deliver what extensions already published before their listeners go.
            self.extensions.bus.drain(5.0)
            self.extensions.close()
        return close_engine(self.engine, self.registry, record_timeout=record_timeout)


def open_host(project_root: Path | Project, **options: Any) -> Host:
    """:meth:`Host.open` (kept for callers of the earlier function)."""
    return Host.open(project_root, **options)


def load_extensions(engine: Engine, project_root: Path, *, home: Path | None = None,
                    use_entry_points: bool = True,
                    breakers: BreakerBook | None = None) -> ExtensionSet:
    """Every extension (entry points, user folders, the project's approved folders)
    loaded into ``engine``, built-in tool and command names reserved.

    One that fails, is unapproved or changed is logged with why, and stands in
    with a fail-closed hook on the events it guards. Raises ConfigError (and
    loads nothing) when they cannot even be discovered, since what they would
    guard is then unknown.
    """
    from interlock.ext.loader import ExtensionSet

    extensions = ExtensionSet(engine, home=home, project=project_root,
                              reserved_tools=RESERVED_TOOLS, reserved_commands=RESERVED_COMMANDS,
                              use_entry_points=use_entry_points, breakers=breakers)
    loaded = False
    try:
        extensions.load_all()
        loaded = True
    except ConfigError:
        raise
    except Exception as exc:  # hosts show ConfigErrors as one line, never a traceback
        raise ConfigError(f"extensions could not be loaded: {type(exc).__name__}: {exc}",
                          fix="see `interlock ext list`") from exc
    finally:
        if not loaded:
            extensions.bus.drain(5.0)
            extensions.close()
    return extensions

