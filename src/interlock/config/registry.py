"""The registry: the active set of configured hooks, as one numbered revision.

Loading reads every place (managed, project, user, bundled), validates the
whole set, applies trust, requirements and shadowing, and swaps it into the
engine with ``Engine.replace_hooks``. A bad revision never becomes active:

- ``load()`` with no good revision raises ConfigError, and leaves a stand-in
  hook that blocks every gate, so a host that carries on anyway runs nothing
  unguarded;
- ``reload()`` keeps the last good revision on any error and reports the
  file, line, field and fix;
- before a new revision is swapped in, ``config_change`` fires (on the old
  revision's hooks) for every changed file; a block keeps the old revision.

Trust (docs/configuration.md, Trust): command and worker hooks, every project hook,
and a project's permission rules and MCP servers, apply only once approved (pinned
to their digest). A fail-closed hook that cannot run (unapproved, ineligible, or a
removal/weakening no operator approved) is replaced by a refusal that blocks what
it guarded; a fail-open one is simply left out.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Coroutine, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from interlock.config import mcp_servers
from interlock.config.activate import hook_for
from interlock.config.build import refusal_hook
from interlock.config.kinds import referenced_files
from interlock.config.model import HookKind, PermissionRule
from interlock.config.pairing import Pairing
from interlock.config.pins import hook_files
from interlock.config.refs import digest, digest_and_pins, resolve_command, unmet_requirements
from interlock.config.revision import (
    HookEntry,
    Options,
    ReloadResult,
    Revision,
    apply_references,
    changed_files,
    close_executor,
    guard_record,
    shadow,
    signature,
    summary,
    withhold,
)
from interlock.config.rules import ALIASES as RULE_ALIASES
from interlock.config.rules import NAME as RULES
from interlock.config.rules import RulesConsent, consent_name, guard, in_force, project_rules
from interlock.config.runnable import accept, approvable
from interlock.config.sources import Declared, Discovered, Place, discover
from interlock.config.trust import APPROVALS, BASELINES, TOGGLES, TrustStore, hook_key
from interlock.config.watch import DEBOUNCE_MS, POLL_MS, Plan, Stop, watch
from interlock.engine.catalog import SPECS, FailClosed, Kind
from interlock.engine.decisions import Verdict
from interlock.engine.dispatch import Engine
from interlock.engine.errors import ConfigError, FailureMode, RegistrationError
from interlock.engine.hooks import Executor, Hook, Source
from interlock.engine.logs import logger
from interlock.engine.sinks import Sink
from interlock.reliability import BreakerBook, BreakerKey
from interlock.reliability.metrics import Metrics
from interlock.store.paths import bundled_dir, managed_dir, project_dir, state_dir, user_dir

if TYPE_CHECKING:
    from interlock.config.mcp_servers import McpServer, ServersConsent
    from interlock.engine.events import Event
    from interlock.engine.outcome import Outcome
    from interlock.reliability.sinks import Attached

__all__ = ["HookEntry", "Registry", "ReloadResult", "Revision", "close_engine", "open_engine"]

log = logger("interlock.registry")

_STATE_FILES = {APPROVALS, TOGGLES, BASELINES}
_NEEDS_APPROVAL = {HookKind.COMMAND, HookKind.WORKER, HookKind.HTTP, HookKind.PROMPT,
                   HookKind.AGENT, HookKind.MCP}


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


class Registry:
    def __init__(self, engine: Engine, *, project_root: Path, home: Path | None = None,
                 managed: Path | None = None, accept_hooks: bool = False,
                 bundled: Path | None = None, config: Path | None = None) -> None:
        self.engine = engine
        self.project_root = Path(project_root).resolve()
        self.home = Path(home) if home is not None else user_dir()
        self.managed = Path(managed) if managed is not None else managed_dir()
        self.bundled = Path(bundled) if bundled is not None else bundled_dir()
        self.config = Path(config).resolve() if config is not None else None
        self.state_dir = state_dir(self.home)
        self.trust = TrustStore(self.state_dir)
        self.accept_hooks = accept_hooks or _truthy(os.environ.get("INTERLOCK_ACCEPT_HOOKS"))
        self._current: Revision | None = None
        self._owned: set[int] = set()
        self._listeners: list[Callable[[ReloadResult], None]] = []
        self.last_error: ConfigError | None = None
        self.breakers = BreakerBook()
        """Every configured hook's circuit breaker; it outlives reloads (an edit: a new one)."""
        self.metrics = Metrics()
        self.recording: Attached | None = None
        """The audit, dead-letter and metrics sinks, once :meth:`record` attached them."""
        # One build at a time: the watcher, the host and CLI actions may all reload.
        self._reloading = threading.RLock()
        # A revision's hooks and rules go in, and dispatch() takes them, as one.
        self._pairing = Pairing(engine, self._rules)

    # -- what is active ---------------------------------------------------------
    @property
    def hooks(self) -> list[HookEntry]:
        return list(self._current.entries) if self._current is not None else []

    @property
    def permissions(self) -> list[PermissionRule]:
        return list(self._current.permissions) if self._current is not None else []

    @property
    def permission_consent(self) -> RulesConsent | None:
        return self._current.rules if self._current is not None else None

    @property
    def mcp_servers(self) -> list[McpServer]:
        return list(self._current.servers) if self._current is not None else []

    @property
    def mcp_consent(self) -> ServersConsent | None:
        return self._current.mcp if self._current is not None else None

    @property
    def sandbox(self) -> tuple[str, bool]:
        """(mode, network) of the agent's OS sandbox as the config files ask."""
        found = self._current.found if self._current is not None else None
        if found is None:
            return "auto", True
        return ("required" if found.sandbox_required else "auto"), not found.sandbox_offline

    @property
    def pinned_files(self) -> list[Path]:
        """Every file the current revision rests on: the config files read (a
        ``--config`` one too) and the files each hook's digest covers."""
        found = self._current.found if self._current is not None else None
        read = [Path(f) for f in found.files] if found is not None else []
        return list(dict.fromkeys([*read, *(f for e in self.hooks for f in e.files)]))

    @property
    def withheld(self) -> list[str]:
        return list(self._current.withheld) if self._current is not None else []

    @property
    def revision(self) -> int:
        return self._current.number if self._current is not None else 0

    def dispatch(self, event: Event) -> tuple[Coroutine[Any, Any, Outcome],
                                              Sequence[PermissionRule]]:
        """``engine.emit(event)`` and the ``[[permissions]]`` rules (read-only) of the
        revision whose hooks it runs (read apart, a reload between them could judge
        a call by neither: docs/configuration.md, Live reload). Hooks run when awaited."""
        return self._pairing.dispatch(event)

    def dispatch_sync(self, event: Event) -> tuple[Outcome, Sequence[PermissionRule]]:
        """:meth:`dispatch` for sync hosts: the outcome of ``engine.emit_sync(event)``."""
        return self._pairing.dispatch_sync(event)

    def _rules(self) -> Sequence[PermissionRule]:
        return self._current.permissions if self._current is not None else ()

    def places(self) -> list[Place]:
        return [
            Place(Source.MANAGED, self.managed),
            Place(Source.PROJECT, project_dir(self.project_root), config=self.config),
            Place(Source.USER, self.home),
            Place(Source.BUNDLED, self.bundled),
        ]

    def entry(self, name: str) -> HookEntry:
        """Find a hook by ``source:name`` or a bare name (did-you-mean when unknown)."""
        entries = self.hooks
        found = [e for e in entries if name in (e.qualified_name, e.definition.name)]
        if len(found) == 1:
            return found[0]
        if found:
            raise ConfigError(f"{name!r} names several hooks: "
                              f"{', '.join(e.qualified_name for e in found)}",
                              fix="use the qualified name, e.g. " + found[0].qualified_name)
        import difflib

        known = [e.qualified_name for e in entries]
        close = difflib.get_close_matches(name, known + [e.definition.name for e in entries], n=1)
        raise ConfigError(f"no hook named {name!r}",
                          fix=f"did you mean {close[0]!r}?" if close
                          else "run `interlock hooks list` to see the hooks")

    def add_listener(self, fn: Callable[[ReloadResult], None]) -> None:
        """Call ``fn`` after every reload attempt (applied, rejected or unchanged)."""
        self._listeners.append(fn)

    # -- building a revision -------------------------------------------------------
    def _entry(self, decl: Declared, enabled: bool,
               set_options: tuple[dict[str, Any], Source] | None = None) -> HookEntry:
        d = decl.definition
        options = dict(d.options)
        if set_options is not None:
            options.update(set_options[0])
        command: str | list[str] | None = None
        named: list[Path] = []
        if d.command is not None:
            command, named = resolve_command(d.command, decl.folder)
        files, folders = hook_files(decl, command, named, self.project_root)
        # A judge's template file and scripted model are part of what is approved.
        files += [p for p in referenced_files(d, decl.folder) if p not in files]
        norm = d.normalised()
        norm["command"] = command
        norm["source"] = decl.source.label
        norm["declared_in"] = str(decl.file)
        norm["options"] = options
        dig, pins = digest_and_pins(norm, [*files, *folders], decl.hook_dir)
        why = unmet_requirements(d)
        needs = decl.source not in (Source.MANAGED, Source.BUNDLED) and (
            d.effective_kind in _NEEDS_APPROVAL or decl.source is Source.PROJECT)
        # A repository's options can weaken a trusted hook (an empty tool list
        # turns a guard into a no-op), so they need the same consent as its code.
        needs = needs or (set_options is not None and set_options[1] is Source.PROJECT)
        approved = not needs or self.trust.approved(hook_key(decl.qualified_name, decl.file), dig)
        return HookEntry(decl, dig, enabled, not why, "; ".join(why), approved, needs,
                         command=command, files=files, options=options, pins=pins)

    def _build(self, *, operator: bool, previous: Revision | None) -> Revision:
        found = discover(self.places())
        for state_file in (self.trust.approvals_path, self.trust.toggles_path,
                           self.trust.baselines_path):
            self._note_state(found, state_file)
        set_options: Options = {}
        toggles = apply_references(found, self.trust.toggles(self.project_root), set_options)
        entries: list[HookEntry] = []
        for decl in found.hooks:
            d = decl.definition
            default = d.enabled if d.enabled is not None else decl.source is not Source.BUNDLED
            enabled = toggles.get(decl.qualified_name, default)
            if decl.source is Source.MANAGED:
                enabled = True if d.enabled is None else d.enabled
            entries.append(self._entry(decl, enabled, set_options.get(decl.qualified_name)))
        shadow(entries)
        if self.accept_hooks:
            accept(entries, self.project_root, self.trust)
        baseline = self.trust.baseline(self.project_root)
        rules = project_rules(self.trust, found.permissions, self.project_root,
                              accept=self.accept_hooks, operator=operator, baseline=baseline)
        reuse = previous.executors() if previous is not None else {}
        hooks: list[Hook] = []
        for e in entries:
            e.hook = hook_for(self, e, reuse)
            if e.hook is not None:
                hooks.append(e.hook)
        guards = {e.qualified_name: guard_record(e) for e in entries
                  if e.hook is not None and guard_record(e)["events"]}
        withheld = [] if operator else withhold(baseline, guards, hooks)
        withheld += [RULES] if rules.withheld else []
        guards[RULES] = guard(rules)
        servers = mcp_servers.merge(found.mcp_servers)
        mcp = mcp_servers.consent(servers, self.project_root, self.trust,
                                  accept=self.accept_hooks)
        return Revision(entries, hooks, in_force(found.permissions, rules), found, guards,
                        withheld, rules=rules, servers=mcp_servers.in_force(servers, mcp),
                        mcp=mcp)

    @staticmethod
    def _note_state(found: Discovered, path: Path) -> None:
        if path.exists():
            found.files[str(path)] = digest({}, [path])
            found.sources[str(path)] = Source.USER
        else:
            found.files.pop(str(path), None)

    def _checked_build(self, *, operator: bool, previous: Revision | None) -> Revision:
        try:
            return self._build(operator=operator, previous=previous)
        except RegistrationError as exc:
            raise ConfigError(str(exc), fix="see docs/configuration.md") from None

    # -- installing ----------------------------------------------------------------
    def _install(self, rev: Revision) -> int:
        with self._pairing.swapping():  # its hooks and its rules, as one (dispatch)
            number = self._swap(rev.hooks)
            previous = self._current
            rev.number = number
            self._owned = {id(h) for h in rev.hooks}
            self._current = rev
        self.last_error = None
        self.trust.set_baseline(self.project_root, rev.guards)
        # Our own write is not a change to react to on the next reload.
        self._note_state(rev.found, self.trust.baselines_path)
        if previous is not None:
            kept = set(rev.executors())
            self._retire([ex for k, ex in previous.executors().items() if k not in kept])
        self.breakers.forget({BreakerKey.of(h) for h in self.engine.hooks})  # extensions' too
        return number

    def _swap(self, hooks: list[Hook]) -> int:
        """Replace the hooks this registry owns, keeping everyone else's (extensions,
        code). Under the engine's lock: a hook registered between reading the set
        and swapping it would otherwise be dropped."""
        with self.engine._lock:
            others = [h for h in self.engine.hooks if id(h) not in self._owned]
            return self.engine.replace_hooks([*others, *hooks])

    def _retire(self, executors: Iterable[Executor]) -> None:
        for ex in executors:
            try:
                close_executor(ex)
            except Exception as exc:  # a stuck worker must not stop a reload
                log.warning("closing %r failed: %s", ex, exc)

    def _lockdown(self, error: ConfigError) -> None:
        """No good revision: every gate blocks until a valid config is loaded."""
        events = tuple(s.name for s in SPECS
                       if s.kind is Kind.GATE and s.fail_closed is FailClosed.BLOCK)
        hook = refusal_hook("no-valid-config", Source.MANAGED, events, None,
                            FailureMode.UNAPPROVED,
                            f"no valid hook configuration is loaded: {error.render()}")
        with self._pairing.swapping():
            self._swap([hook])
            self._owned = {id(hook)}

    def load(self) -> int:
        """The first load. Raises ConfigError when there is no good revision (gates block)."""
        with self._reloading:
            return self._load()

    def _load(self) -> int:
        try:
            rev = self._checked_build(operator=False, previous=None)
        except ConfigError as exc:
            self.last_error = exc
            self._lockdown(exc)
            raise
        return self._install(rev)

    def reload(self, *, operator: bool = False, release: bool | None = None) -> ReloadResult:
        """Re-read everything; swap in the new revision if it is valid and not blocked.

        ``operator``: the change was made by an operator (the CLI), so a
        config_change hook's failure does not block it, and (unless
        ``release=False``) removing or weakening fail-closed hooks is approved.
        """
        with self._reloading:
            return self._reload(operator, operator if release is None else release)

    def _reload(self, operator: bool, release: bool) -> ReloadResult:
        previous = self._current
        try:
            rev = self._checked_build(operator=release, previous=previous)
        except ConfigError as exc:
            self.last_error = exc
            log.error("hook configuration not applied; keeping revision %d: %s",
                      self.revision, exc.render())
            return self._tell(ReloadResult(False, False, self.revision, error=exc))
        changed = changed_files(previous.found.files if previous else {}, rev.found.files)
        same = previous is not None and signature(previous) == signature(rev)
        if previous is not None and not changed and same:
            self.last_error = None  # a broken edit undone: what runs is what is on disk
            return self._tell(ReloadResult(True, False, self.revision))
        if changed and all(Path(p).name in _STATE_FILES for p in changed):
            operator = True  # only the CLI (an operator) writes the state dir
        if previous is not None:
            blocked = self._config_change(changed or ["(hooks)"], rev, operator)
            if blocked is not None:
                kept = set(previous.executors())
                self._retire([ex for k, ex in rev.executors().items() if k not in kept])
                return self._tell(ReloadResult(False, False, self.revision, changed,
                                               blocked=blocked))
        number = self._install(rev)
        unapproved = [e.qualified_name for e in rev.entries
                      if e.enabled and e.shadowed_by is None and not e.approved]
        unapproved += [RULES] if rev.rules is not None and rev.rules.pending else []
        return self._tell(ReloadResult(True, True, number, changed, withheld=rev.withheld,
                                       unapproved=unapproved))

    def _config_change(self, files: list[str], rev: Revision, operator: bool) -> str | None:
        from interlock.events import make

        text = summary(self._current, rev)
        for path in files:
            source = rev.found.sources.get(path) or (
                self._current.found.sources.get(path) if self._current else None)
            event = make("config_change", {
                "path": path, "source": source.label if source is not None else "project",
                "revision": self.engine.revision + 1, "operator": operator, "summary": text,
                "cwd": str(self.project_root)})
            outcome = self.engine.emit_sync(event)
            if outcome.verdict in (Verdict.BLOCK, Verdict.STOP):
                reason = outcome.reason or "blocked by a config_change hook"
                log.warning("config change to %s blocked: %s", path, reason)
                return reason
        return None

    def _tell(self, result: ReloadResult) -> ReloadResult:
        for fn in self._listeners:
            try:
                fn(result)
            except Exception as exc:
                log.warning("reload listener failed: %s", exc)
        return result

    # -- operator actions (the CLI) ---------------------------------------------------
    def approve(self, names: list[str] | None = None, *, by: str = "operator") -> list[str]:
        """Approve hooks (all pending when ``names`` is None), and release withheld ones."""
        withheld = set(self.withheld)
        targets: list[HookEntry] = []
        release: list[str] = []
        rules = self.permission_consent
        pending = rules is not None and rules.pending
        names, servers_done = mcp_servers.approve(self.trust, self.mcp_consent, names, by)
        if names is None:
            targets = [e for e in self.hooks if e.needs_approval and not e.approved]
            release = sorted(withheld)
        else:
            pending = pending and any(n in RULE_ALIASES for n in names)
            for name in names:
                if name in RULE_ALIASES and RULES not in withheld:
                    continue
                # One approval covers what the hook now is: its new definition,
                # and the removal or weakening of what it was.
                held = [w for w in withheld if name in (w, w.partition(":")[2])]
                release += held
                try:
                    targets.append(self.entry(name))
                except ConfigError:
                    if not held:
                        raise
        targets = approvable([e for e in targets if e.needs_approval and not e.approved],
                             self.project_root, by, named=names is not None)
        done = [e.qualified_name for e in targets]
        items = [(e.key, e.digest, e.qualified_name) for e in targets]
        if pending and rules is not None:
            items.append((rules.key, rules.digest, RULES))
            done.append(RULES)
        if items:
            self.trust.approve(items, by=by)
        if release:
            done += [r for r in self.trust.release(self.project_root, release) if r not in done]
        done += servers_done
        if done:
            self.reload(operator=True, release=False)
        return done

    def revoke(self, name: str) -> bool:
        """Revoke a hook's approval, or the project's rules' or MCP servers' consent."""
        items = {RULES: self.permission_consent, mcp_servers.NAME: self.mcp_consent}
        item = items.get(consent_name(name) or "")
        key = item.key if item is not None else self.entry(name).key
        removed = self.trust.revoke([key]) > 0
        self.reload(operator=True, release=False)
        return removed

    def set_enabled(self, name: str, enabled: bool) -> HookEntry:
        e = self.entry(name)
        if e.source is Source.MANAGED and not enabled:
            raise ConfigError(f"{e.qualified_name} is a managed hook and cannot be disabled",
                              fix="ask the administrator to change the managed config "
                                  f"({e.declared.file})")
        if not enabled:
            self.trust.release(self.project_root, [e.qualified_name])
        self.trust.set_toggle(self.project_root, e.qualified_name, enabled)
        result = self.reload(operator=True, release=False)
        if result.error is not None:
            raise result.error
        return self.entry(e.qualified_name)

    # -- watching ----------------------------------------------------------------------
    def watch_dirs(self) -> list[Path]:
        dirs = [self.managed, project_dir(self.project_root), self.home, self.state_dir,
                self.bundled]
        if self.config is not None:
            dirs.append(self.config.parent)
        existing = [d.resolve() for d in dirs if d.is_dir()]
        # Watching a folder covers its subfolders; drop the nested ones.
        return sorted({d for d in existing
                       if not any(o != d and d.is_relative_to(o) for o in existing)})

    def _relevant(self, path: str) -> bool:
        p = Path(path)
        if p.name.endswith((".tmp", ".lock", ".pyc")) or "__pycache__" in p.parts:
            return False
        if p.name in _STATE_FILES or p.name.startswith("config.") or \
                (self.config is not None and p == self.config):
            return True
        return "hooks" in p.parts or p.is_relative_to(self.bundled.resolve())

    def watch_plan(self) -> Plan:
        """The folders to watch (config layers, hook folders, the state dir) and the
        pinned files to poll (a script outside ``.interlock/`` included)."""
        return Plan(self.watch_dirs(), sorted(set(self.pinned_files)), self._relevant)

    async def watch(self, stop: Stop | None = None, *, debounce_ms: int = DEBOUNCE_MS,
                    rescan_ms: int = POLL_MS) -> None:
        """Apply changes to any config file, hook folder, pinned file, approval or
        toggle while running, until ``stop`` (an asyncio or threading Event)."""
        try:
            import watchfiles  # noqa: F401
        except ImportError as exc:  # pragma: no cover - a declared dependency
            raise ConfigError("watching needs the watchfiles package",
                              fix="pip install watchfiles") from exc
        import asyncio

        with contextlib.suppress(OSError):
            self.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        await watch(self.watch_plan, lambda _paths: self.reload(),
                    stop if stop is not None else asyncio.Event(),
                    debounce_ms=debounce_ms, poll_ms=rescan_ms)

    # -- recording ---------------------------------------------------------------------
    def record(self, url: str | None = None, *, check_up_to: int | None = None) -> Attached:
        """Audit every dispatch, dead-letter every failure and count both, in the store
        at ``url`` (default: ``$INTERLOCK_STORE``, else ``interlock.db`` in the state
        dir), with breaker states kept there. ``check_up_to``: see open_store."""
        if self.recording is None:
            from interlock.reliability.sinks import attach
            from interlock.store import DB_NAME

            url = url or os.environ.get("INTERLOCK_STORE") or str(self.state_dir / DB_NAME)
            self.recording = attach(self.engine, url=url, breakers=self.breakers,
                                    metrics=self.metrics, check_up_to=check_up_to)
        return self.recording

    def status(self) -> dict[str, Any]:
        """Counters per hook, breaker states, the revision and unresolved dead letters."""
        return {"revision": self.revision, **self.metrics.status()}

    def close_recording(self, timeout: float = 30.0) -> bool:
        """Flush what is queued and close the store (after the engine has drained)."""
        recording, self.recording = self.recording, None
        self.metrics.store = None
        return recording is None or recording.close(timeout)

    def close(self) -> None:
        """Stop the worker processes of the current revision (sync hosts)."""
        if self._current is not None:
            self._retire(self._current.executors().values())

    async def aclose(self) -> None:
        """Stop the worker processes of the current revision."""
        if self._current is None:
            return
        for ex in self._current.executors().values():
            with contextlib.suppress(Exception):
                await ex.aclose()


def open_engine(project_root: Path, *, config: Path | None = None, accept_hooks: bool = False,
                sinks: Iterable[Sink] = (), record: bool = False,
                store: str | None = None, timed: bool = False,
                lenient: bool = False) -> tuple[Engine, Registry]:
    """An engine with the project's configured hooks loaded (raises ConfigError if invalid).

    With ``record`` every dispatch is audited, every failure dead-lettered and
    both counted, in ``store`` (default: ``$INTERLOCK_STORE``, else the state
    dir's ``interlock.db``). ``timed``: hooks are timed even with no sinks.
    ``lenient``: with no good revision, return the engine anyway, every gate
    blocking (``registry.last_error`` says why). Close with :func:`close_engine`.
    """
    engine = Engine(sinks=sinks, timed=timed)
    registry = Registry(engine, project_root=project_root, accept_hooks=accept_hooks,
                        config=config)
    try:
        try:
            registry.load()
        except ConfigError:
            if not lenient:
                raise
        if record:
            registry.record(store)
    except ConfigError:  # no good revision, or a store that cannot be opened
        close_engine(engine, registry, timeout=1.0)
        raise
    return engine, registry


def close_engine(engine: Engine, registry: Registry, timeout: float = 30.0,
                 record_timeout: float | None = None) -> bool:
    """Shut a host down in order (docs/reliability.md): the engine, draining background
    hooks on their workers; the workers; the store, flushed. False when what was
    recorded did not all commit within ``record_timeout`` (else ``timeout``)."""
    try:
        try:
            engine.close(timeout=timeout)
        finally:
            registry.close()
    finally:
        committed = registry.close_recording(record_timeout or timeout)
    return committed
