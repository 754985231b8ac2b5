"""What a hook definition means: events, matchers, timeouts, kinds, paths.

Types are msgspec's job (parse.py); this module checks meaning, and every
error names the file, line, field and fix.
"""

from __future__ import annotations

import re
from pathlib import Path

from interlock.config.model import MAX_TIMEOUT, HookDef, HookKind
from interlock.config.parse import Locator, PathKey
from interlock.engine.catalog import BY_NAME, SYSTEMS, from_alias
from interlock.engine.errors import ConfigError, RegistrationError, UnknownEventError
from interlock.engine.hooks import Matcher
from interlock.engine.logs import logger
from interlock.executors.dialects._matchers import check as check_matcher
from interlock.executors.dialects._matchers import for_dialect as dialect_matcher

log = logger("interlock.config")

DIALECT_NAMES = ("claude", "codex", "gemini", "hermes", "moltis")
KNOWN_OS = {"linux": "linux", "darwin": "darwin", "macos": "darwin", "osx": "darwin",
            "windows": "windows", "win32": "windows", "freebsd": "freebsd",
            "openbsd": "openbsd", "netbsd": "netbsd"}
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def dialect_names() -> tuple[str, ...]:
    try:
        from interlock.executors.dialects import DIALECTS
    except ImportError:
        return DIALECT_NAMES
    return tuple(DIALECTS) or DIALECT_NAMES


def resolve_events(d: HookDef, err: _Err) -> tuple[str, ...]:
    """Catalog names for the hook's events; a dialect's own names are accepted too."""
    out: list[str] = []
    names = d.event_list
    if not names:
        raise err("events", "a hook needs at least one event",
                  'add events = ["before_tool_call"] (see `interlock events`)')
    for i, name in enumerate(names):
        if name in BY_NAME:
            out.append(name)
            continue
        if d.dialect:
            found = from_alias(d.dialect, name)
            if len(found) == 1:
                out.append(found[0].name)
                continue
        for system in SYSTEMS:
            found = from_alias(system, name)
            if found:
                raise err(f"events[{i}]", f"unknown event {name!r}",
                          f"{system}'s {name} is {found[0].name!r} here")
        exc = UnknownEventError(name, list(BY_NAME))
        raise err(f"events[{i}]", exc.message, exc.fix or "run `interlock events`")
    return tuple(dict.fromkeys(out))


class _Err:
    """Builds ConfigErrors for one hook: file, line of the field, hook name."""

    def __init__(self, file: Path, base: PathKey, locate: Locator, name: str) -> None:
        self.file, self.base, self.locate, self.name = file, base, locate, name

    def __call__(self, field: str, message: str, fix: str) -> ConfigError:
        parts: list[str | int] = []
        for p in re.findall(r"[A-Za-z_]+|\d+", field):
            parts.append(int(p) if p.isdigit() else p)
        return ConfigError(f"hook {self.name!r}: {message}", file=str(self.file),
                           line=self.locate((*self.base, *parts)), field=field, fix=fix)


def _check_reliability(d: HookDef, err: _Err, kind: HookKind) -> None:
    from interlock.config.build import RELIABILITY_FIELDS, policy_for

    if kind is HookKind.PYTHON:
        # In process: a breaker (docs/reliability.md), but no retries.
        default = HookDef(name=d.name)
        for name in RELIABILITY_FIELDS:
            if name.startswith("breaker_"):
                continue
            if getattr(d, name) != getattr(default, name):
                raise err(name, f"{name} has no effect on a python hook (it runs in process, "
                          "with a breaker but no retries)",
                          f"remove {name}, or run the check as a command or worker hook")
    try:
        policy_for(d)
    except ConfigError as exc:
        raise err(exc.field or "retries", exc.message, exc.fix or "see docs/reliability.md") \
            from None


def check_hook(d: HookDef, file: Path, base: PathKey, locate: Locator) -> tuple[str, ...]:
    """Check one definition's meaning; returns its catalog events."""
    err = _Err(file, base, locate, d.name)
    if not _NAME.match(d.name):
        raise err("name", f"{d.name!r} is not a valid hook name",
                  "use letters, digits, '_', '-' and '.'; the source prefix (user:) is added "
                  "for you")
    events = resolve_events(d, err)
    kind = d.effective_kind
    from interlock.config import kinds

    kinds.check(d, err, events, file.parent)
    if d.command is not None and d.handler is not None:
        raise err("handler", "give either command or handler, not both",
                  "a handler is Python run in process; a command is a program")
    if kind is HookKind.PYTHON:
        if d.handler is None:
            raise err("handler", "a python hook needs handler", 'add handler = "handler.py"')
        if d.dialect:
            raise err("dialect", "dialects are for command hooks", "remove dialect")
    elif kind not in kinds.REMOTE_KINDS:
        if d.command is None or (isinstance(d.command, list) and not d.command) \
                or d.command == "":
            raise err("command", f"a {kind.value} hook needs a command",
                      'add command = "./check.sh" (or a list: ["python3", "check.py"])')
        if d.handler is not None:
            raise err("handler", f"a {kind.value} hook runs a command, not a handler",
                      "remove handler, or kind")
    if d.options and kind is not HookKind.PYTHON:
        raise err("options", f"a {kind.value} hook takes no options",
                  "options go to a Python handler's configure(options); remove them")
    if d.dialect is not None:
        names = dialect_names()
        if d.dialect not in names:
            raise err("dialect", f"unknown dialect {d.dialect!r}", f"use one of {', '.join(names)}")
        if kind is HookKind.WORKER:
            raise err("dialect", "a worker speaks the native JSON lines contract",
                      'remove dialect, or use kind = "command"')
    if d.timeout <= 0:
        raise err("timeout", f"timeout must be positive, got {d.timeout:g}",
                  "write the timeout in seconds, e.g. timeout = 10")
    if d.timeout > MAX_TIMEOUT:
        log.warning("%s: hook %r: timeout %gs capped at %gs", file, d.name, d.timeout, MAX_TIMEOUT)
    _check_reliability(d, err, kind)
    try:
        matcher = Matcher.parse(dialect_matcher(d.dialect, d.matcher))
    except RegistrationError as exc:
        raise err("matcher", str(exc), "write an anchored regex such as terminal|read_file, "
                  "or a glob like mcp__github__*") from None
    if matcher is not None:
        try:
            matcher.check(d.name, tuple(events))
        except RegistrationError as exc:
            raise err("matcher", str(exc).split(": ", 1)[1], "match the tool or command name "
                      "only on events that have one (before_tool_call, command, ...), or "
                      "match one of the event's fields") from None
    nothing = check_matcher(d.dialect, d.matcher, tuple(events))
    if nothing is not None:
        raise err("matcher", *nothing)
    if d.modifies and not any(BY_NAME[e].mutable for e in events):
        raise err("modifies", "none of this hook's events has fields a hook may change",
                  "remove modifies = true, or pick an event a hook may modify")
    for key in d.env:
        if not _ENV.match(key):
            raise err(f"env.{key}", f"{key!r} is not a valid variable name",
                      "use letters, digits and '_'")
    for i, name in enumerate(d.env_passthrough):
        if not _ENV.match(name):
            raise err(f"env_passthrough[{i}]", f"{name!r} is not a valid variable name",
                      "list variable names, e.g. [\"GITHUB_TOKEN\"]")
    for i, osname in enumerate(d.requires.os):
        if osname.lower() not in KNOWN_OS:
            raise err(f"requires.os[{i}]", f"unknown OS {osname!r}",
                      "use linux, darwin (or macos), windows or freebsd")
    return events
