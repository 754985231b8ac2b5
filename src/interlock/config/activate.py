"""One configured hook, as the engine runs it.

An approved, eligible hook becomes a hardened hook (breaker, retries) whose
files are checked against their pins on every call. One that cannot run
(disabled, shadowed, ineligible, unapproved) is left out when it fails open
and replaced by a refusal that blocks what it guarded when it fails closed
(docs/configuration.md, Trust).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from interlock.config.build import (
    Refusal,
    guarded_events,
    load_handler,
    make_executor,
    make_hook,
    policy_for,
    refusal_hook,
)
from interlock.config.drift import checked
from interlock.config.imports import import_problem, pin_imports
from interlock.config.model import HookKind
from interlock.config.revision import HookEntry
from interlock.engine.errors import ConfigError, FailureMode
from interlock.engine.hooks import Executor, Hook, OnError
from interlock.engine.logs import logger
from interlock.reliability import harden

if TYPE_CHECKING:
    from interlock.config.registry import Registry

log = logger("interlock.registry")


def hook_for(registry: Registry, e: HookEntry,
             reuse: dict[tuple[str, str], Executor]) -> Hook | None:
    """The hook the engine runs for ``e``: None when it is off or fails open, a
    refusal that blocks what it guards when it cannot run and fails closed."""
    d = e.definition
    if not e.enabled:
        e.state = "disabled"
        return None
    if e.shadowed_by is not None:
        e.state = f"shadowed by {e.shadowed_by}"
        return None
    problem: tuple[FailureMode, str] | None = None
    if not e.eligible:
        problem = (FailureMode.INELIGIBLE,
                   f"hook {e.qualified_name} is not eligible here ({e.why})")
    elif not e.approved:
        problem = (FailureMode.UNAPPROVED,
                   f"hook {e.qualified_name} is not approved; run "
                   f"`interlock hooks approve {e.qualified_name}`")
    elif (why := import_problem(registry.trust, e, accept=registry.accept_hooks)) is not None:
        problem = (FailureMode.UNAPPROVED, why)
    if problem is not None:
        label = "ineligible" if problem[0] is FailureMode.INELIGIBLE else "unapproved"
        guarded = guarded_events(e.declared.events,
                                 None if d.on_error is None else OnError(d.on_error))
        if not guarded or d.shadow or d.background:
            e.state = f"skipped ({label}, fails open)"
            return None
        e.state = f"blocking ({label}, fails closed)"
        return refusal_hook(d.name, e.source, guarded, d.matcher, problem[0], problem[1],
                            e.digest)
    meta = {"file": str(e.declared.file), "line": e.declared.line}
    if e.shadows:
        meta["shadows"] = e.shadows
    # Before a handler's imports are pinned: the same hook keys the same breaker on
    # every replica, wherever each holds the project (docs/fleet.md, Consistency).
    portable = e.portable_digest({name: place.resolve() for name, place in (
        ("project", registry.project_root), ("user", registry.home),
        ("managed", registry.managed), ("bundled", registry.bundled))})
    if d.effective_kind is HookKind.PYTHON:
        e.state = "active"
        imported: list[Path] = []
        # Once this approval recorded what the handler imports, nothing else from
        # the project may stand in for it (--accept-hooks approves it as it is).
        recorded = None if registry.accept_hooks or not e.needs_approval \
            else registry.trust.imports(e.key, e.digest)
        try:
            fn = load_handler(e.declared, e.digest, e.options, root=registry.project_root,
                              imported=imported, allowed=recorded)
        except ConfigError as exc:
            return _unloadable(e, exc, meta)
        pin_imports(registry.trust, e, imported, accept=registry.accept_hooks)
        # The breaker inside, the pin check outside (as for executors below).
        return checked(harden(make_hook(e.declared, e.digest, fn=fn, meta=meta,
                                        portable=portable),
                              policy_for(d), breakers=registry.breakers), e.pins)
    executor = reuse.get((e.qualified_name, e.digest))
    if executor is None:
        try:
            protected = (registry.home, registry.state_dir, registry.managed)
            executor = make_executor(e.declared, e.command, registry.project_root,
                                     protected=protected,
                                     # One cache per approved digest: an edit the
                                     # .pyc header cannot tell apart (same size and
                                     # mtime second) never reuses the old bytecode.
                                     pycache=registry.state_dir / "pycache" / e.digest[:16])
        except ConfigError as exc:
            field = exc.field or ("command" if e.command is not None else "kind")
            raise ConfigError(f"hook {d.name!r}: {exc.message}", file=str(e.declared.file),
                              line=e.declared.line, field=field, fix=exc.fix) from None
    e.state = "active"
    hook = make_hook(e.declared, e.digest, executor=executor, meta=meta, portable=portable)
    # Outside the breaker: a drifted file is no outage to count, and the
    # block names the file.
    return checked(harden(hook, policy_for(d), breakers=registry.breakers,
                          metrics=registry.metrics), e.pins)


def _unloadable(e: HookEntry, error: ConfigError, meta: dict[str, Any]) -> Hook:
    """A handler that compiles but cannot be loaded (its import raises, no handle(),
    configure() fails) fails its own hook only, on every call, under its own
    on_error: it blocks what it gates when it fails closed, and is a recorded
    failure when it fails open. Never the whole config (docs/configuration.md,
    Validation and reloads)."""
    d = e.definition
    e.load_error = error
    message = " ".join(error.render().split())  # one line, as every block reason
    message = message if len(message) <= 400 else message[:399] + "…"
    guarded = guarded_events(e.declared.events,
                             None if d.on_error is None else OnError(d.on_error))
    closed = bool(guarded) and not d.shadow and not d.background
    e.state = f"{'blocking' if closed else 'failing'} (handler failed to load, fails " \
              f"{'closed' if closed else 'open'})"
    log.warning("hook %s %s: %s", e.qualified_name, e.state, message)
    # Not retried, not behind a breaker: the same import fails the same way until
    # the file changes, and a change is a reload, which tries it again.
    return make_hook(e.declared, e.digest, executor=Refusal(FailureMode.UNLOADABLE, message),
                     meta={**meta, "load_error": message}, refusal=closed)
