"""Turning a checked definition into a registered Hook.

Python handlers are imported in process (only once trusted: importing runs
code). Command and worker hooks get the executors from
``interlock.executors``. A hook that must not run (unapproved, ineligible,
or a withheld removal) but fails closed is replaced by a :class:`Refusal`,
whose every call is a failure, so the engine's fail-closed rule blocks what
it guards.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from interlock.config import kinds, source
from interlock.config.drift import PYTHON_PROGRAM
from interlock.config.model import MAX_TIMEOUT, HookDef, HookKind
from interlock.config.sources import Declared
from interlock.engine.catalog import BY_NAME, FailClosed
from interlock.engine.decisions import Decision
from interlock.engine.errors import ConfigError, FailureMode, HookFailure, install_extra
from interlock.engine.hooks import Executor, Hook, HookFn, Invocation, Matcher, OnError, Source
from interlock.executors.dialects._matchers import for_dialect as dialect_matcher
from interlock.reliability import Policy

MAX_RETRIES = 10
RELIABILITY_FIELDS = ("retries", "retry_budget", "breaker_threshold", "breaker_cooldown")
"""Per-hook settings of the reliability wrappers (docs/reliability.md)."""


def policy_for(d: HookDef) -> Policy:
    """The hook's reliability policy: its timeout per attempt, retries, budget, breaker.

    Raises ConfigError naming the config field (``retry_budget``, not Policy's
    ``budget``); the caller adds the file and line.
    """
    if d.retries > MAX_RETRIES:
        raise ConfigError(f"retries must be at most {MAX_RETRIES}, got {d.retries}",
                          field="retries", fix="retry a few times (retries = 2) and let the "
                                               "breaker handle a hook that stays down")
    try:
        return Policy(timeout=min(d.timeout, MAX_TIMEOUT), retries=d.retries,
                      budget=d.retry_budget, breaker_threshold=d.breaker_threshold,
                      breaker_cooldown=d.breaker_cooldown)
    except ConfigError as exc:
        field = "retry_budget" if exc.field == "budget" else exc.field
        fix = (exc.fix or "").replace("set budget", "set retry_budget")
        raise ConfigError(exc.message, field=field, fix=fix) from None


class Refusal(Executor):
    """An executor that always fails with one fixed mode (unapproved, ineligible)."""

    def __init__(self, mode: FailureMode, message: str) -> None:
        self.mode = mode
        self.message = message

    async def __call__(self, invocation: Invocation) -> Decision | None:
        raise HookFailure(self.message, mode=self.mode, retryable=False)


def guarded_events(events: tuple[str, ...], on_error: OnError | None) -> tuple[str, ...]:
    """The events on which a failure of this hook blocks (where it guards something)."""
    out = []
    for name in events:
        spec = BY_NAME[name]
        closed = (on_error is OnError.CLOSED) if on_error is not None \
            else spec.kind.value == "gate"
        if closed and spec.fail_closed is not FailClosed.NO_EFFECT:
            out.append(name)
    return tuple(out)


def _module_name(decl: Declared, digest: str) -> str:
    safe = "".join(c if c.isalnum() else "_" for c in decl.definition.name)
    return f"interlock_hooks.{decl.source.label}_{safe}_{digest[:12]}"


def load_handler(decl: Declared, digest: str, options: dict[str, Any] | None = None, *,
                 root: Path | None = None, imported: list[Path] | None = None,
                 allowed: Iterable[str] | None = None) -> HookFn:
    """Import the hook's handler file and return its ``handle``.

    A freshly imported module's ``configure(options)`` is called once. The
    digest (part of the module's name) covers the options, so new options
    mean a new module, configured afresh, while unchanged ones keep state.

    With ``root`` and ``imported``: the files of the modules the handler
    imported from under ``root`` (while it was loaded, or named in its
    globals) are appended to ``imported``, for the approval to pin them. With
    ``allowed`` too (the modules its approval recorded), a module under ``root``
    outside them is refused before it runs (:func:`interlock.config.source.only`).
    """
    d = decl.definition
    assert d.handler is not None
    path = (decl.folder / d.handler).resolve()
    where = {"file": str(decl.file), "line": decl.line, "field": "handler"}
    if not path.is_file():
        raise ConfigError(f"hook {d.name!r}: handler file {path} does not exist",
                          fix="create it, defining handle(event)", **where)  # type: ignore[arg-type]
    name = _module_name(decl, digest)
    module = sys.modules.get(name)
    if module is None:
        source.cover([p for p in (root, decl.folder, path.parent) if p is not None])
        source.forget_changed()
        before = set(sys.modules)
        spec = source.spec_for(name, path)
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        with source.only(allowed, root):
            try:
                spec.loader.exec_module(module)
            except Exception as exc:
                import traceback  # only for a handler that fails to import

                line = None
                for frame in traceback.extract_tb(exc.__traceback__):
                    if Path(frame.filename) == path:
                        line = frame.lineno
                fix = (f"look at it, then approve the hook again: `interlock hooks approve "
                       f"{d.name}`" if isinstance(exc, source.NotApproved)
                       else "fix the error in the handler file")
                raise ConfigError(f"hook {d.name!r}: importing the handler failed: "
                                  f"{type(exc).__name__}: {exc}", file=str(path), line=line,
                                  fix=fix) from None
            _configure(module, d.name, path, decl, options or {})
        sys.modules[name] = module
        new = [sys.modules[m] for m in set(sys.modules) - before]
        source.remember(new)
        module.__interlock_imports__ = _project_modules(  # type: ignore[attr-defined]
            module, new, root, path)
    if imported is not None:
        imported += [p for p in getattr(module, "__interlock_imports__", ()) if p not in imported]
    handle = getattr(module, "handle", None)
    if handle is None or not callable(handle):
        raise ConfigError(f"hook {d.name!r}: {path.name} defines no handle(event) function",
                          file=str(path), fix="add `def handle(event): ...` returning a "
                                              "Decision or None")
    import inspect  # for the signature (loading the engine does not import it)

    try:
        params = list(inspect.signature(handle).parameters.values())
    except (TypeError, ValueError):  # pragma: no cover - builtins
        params = []
    if len([p for p in params if p.default is inspect.Parameter.empty
            and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]) > 1:
        raise ConfigError(f"hook {d.name!r}: handle() must take one argument, the event",
                          file=str(path), fix="write `def handle(event):`")
    result: HookFn = handle
    return result


def _project_modules(module: Any, new: list[Any], root: Path | None,
                     handler: Path) -> list[Path]:
    """Files of the modules ``new`` (imported while loading) and those named in the
    handler's globals, that live under ``root``."""
    if root is None:
        return []
    root = root.resolve()
    mods = [*new, *(v for v in vars(module).values() if isinstance(v, ModuleType))]
    mods += [sys.modules[m] for v in vars(module).values()
             if (m := getattr(v, "__module__", None)) in sys.modules and m != module.__name__]
    out: list[Path] = []
    for mod in mods:
        file = getattr(mod, "__file__", None)
        if not isinstance(file, str):
            continue
        path = Path(file).resolve()
        while not path.is_file() and path.parent != path:
            path = path.parent  # a module inside an archive (lib.zip/x.py): the archive
        if path != handler and path.is_relative_to(root) and path not in out:
            out.append(path)
    return sorted(out)


def _configure(module: Any, name: str, path: Path, decl: Declared,
               options: dict[str, Any]) -> None:
    configure = getattr(module, "configure", None)
    if configure is None:
        if options:
            raise ConfigError(f"hook {name!r} takes no options ({path.name} defines no "
                              "configure(options))", file=str(decl.file), line=decl.line,
                              field="options", fix="remove options")
        return
    try:
        configure(dict(options))
    except ConfigError as exc:
        raise ConfigError(f"hook {name!r}: {exc.message}", file=str(decl.file),
                          line=decl.line, field=exc.field or "options", fix=exc.fix) from None
    except Exception as exc:
        raise ConfigError(f"hook {name!r}: configure(options) failed: "
                          f"{type(exc).__name__}: {exc}", file=str(decl.file), line=decl.line,
                          field="options", fix="check the options against the hook's docs "
                                               "(`interlock hooks info NAME`)") from None


def _executor_class(kind: HookKind) -> Any:
    if kind is HookKind.WORKER:
        candidates = ("interlock.executors.worker", "interlock.executors")
        attr = "WorkerExecutor"
    else:
        candidates = ("interlock.executors.command", "interlock.executors")
        attr = "CommandExecutor"
    for mod in candidates:
        try:
            module = importlib.import_module(mod)
        except ImportError:
            continue
        cls = getattr(module, attr, None)
        if cls is not None:
            return cls
    raise ConfigError(f"{kind.value} hooks are not available in this build "
                      f"(interlock.executors.{attr} is missing)",
                      fix="install a release of interlock that ships the executors")


def hook_cwd(decl: Declared, project_root: Path) -> Path:
    """Where a command or worker hook runs (what its relative words resolve from)."""
    d = decl.definition
    if d.cwd is not None:
        return (decl.folder / d.cwd).resolve()
    if d.dialect == "moltis" and decl.hook_dir is not None:
        return decl.hook_dir  # Moltis runs a HOOK.md hook in its own folder
    return project_root


def make_executor(decl: Declared, command: str | list[str] | None,
                  project_root: Path, protected: Sequence[Path] = (),
                  pycache: Path | None = None) -> Executor:
    d = decl.definition
    kind = d.effective_kind
    if kind in kinds.REMOTE_KINDS:
        def err(field: str, message: str, fix: str) -> ConfigError:
            return ConfigError(message, field=field, fix=fix)

        return kinds.build(d, decl.folder, project_root, decl.events, err, protected)
    assert command is not None
    if kind is HookKind.MCP:
        return _mcp_executor(decl, command, project_root)
    cls = _executor_class(kind)
    cwd = hook_cwd(decl, project_root)
    env = dict(d.env)
    if pycache is not None:
        # Python reads and writes bytecode there, never from a __pycache__ in the
        # project: a planted .pyc cannot stand in for a pinned script. -E and -I
        # make Python ignore the variable, not the same option given with -X.
        env.setdefault("PYTHONPYCACHEPREFIX", str(pycache))
        if isinstance(command, list) and command \
                and PYTHON_PROGRAM.match(os.path.basename(command[0])):
            command = [command[0], "-X", f"pycache_prefix={pycache}", *command[1:]]
    kwargs: dict[str, Any] = {
        "hook_name": d.name, "cwd": cwd, "env": env,
        "env_passthrough": tuple(d.env_passthrough), "timeout": min(d.timeout, MAX_TIMEOUT),
        "project_dir": project_root, "plugin_root": decl.hook_dir,
    }
    if kind is HookKind.COMMAND:
        kwargs["dialect"] = d.dialect
    executor: Executor = cls(command, **kwargs)
    return executor


def _mcp_executor(decl: Declared, command: str | list[str], project_root: Path) -> Executor:
    d = decl.definition
    try:
        from interlock.executors.mcp import McpToolExecutor
    except ImportError:
        raise ConfigError(f"hook {d.name!r} is an mcp hook, and the MCP SDK is not installed",
                          field="kind", fix=install_extra("mcp")) from None
    assert d.tool is not None  # checked at discovery (config/kinds.py)
    return McpToolExecutor(command, tool=d.tool, server=d.server or d.name, hook_name=d.name,
                           cwd=hook_cwd(decl, project_root), env=dict(d.env),
                           env_passthrough=tuple(d.env_passthrough),
                           timeout=min(d.timeout, MAX_TIMEOUT), project_dir=project_root)


def make_hook(decl: Declared, digest: str, *, fn: HookFn | None = None,
              executor: Executor | None = None, meta: dict[str, Any] | None = None,
              refusal: bool = False, portable: str = "") -> Hook:
    d = decl.definition
    on_error = OnError(d.on_error) if d.on_error is not None else None
    return Hook(
        name=d.name,
        events=decl.events,
        fn=fn,
        executor=executor,
        priority=d.priority,
        source=decl.source,
        matcher=Matcher.parse(dialect_matcher(d.dialect, d.matcher)),
        # A refusal is a plain check that always fails: it must never be queued
        # (background) or shadowed, or nothing would be blocked.
        modifies=False if refusal else d.modifies,
        on_error=on_error,
        background=False if refusal else d.background,
        shadow=False if refusal else d.shadow,
        blocking=d.blocking,
        timeout=min(d.timeout, MAX_TIMEOUT),
        description=d.description,
        kind=d.effective_kind.value,
        digest=digest,
        portable_digest=portable,
        meta=dict(meta or {}),
    )


def refusal_hook(name: str, source: Source, events: tuple[str, ...],
                 matcher: str | dict[str, str] | None,
                 mode: FailureMode, message: str, digest: str = "") -> Hook:
    """A stand-in that blocks, on ``events``, what a missing fail-closed hook guarded."""
    return Hook(name=name, events=events, executor=Refusal(mode, message), source=source,
                matcher=Matcher.parse(matcher), on_error=OnError.CLOSED, kind="refusal",
                digest=digest, priority=-1_000_000, meta={"refusal": mode.value})
