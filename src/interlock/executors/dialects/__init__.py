"""Dialects: other agents' hook protocols, so their hook scripts run unmodified.

A command hook that declares ``dialect = "claude"`` (or codex, gemini,
hermes, moltis) is fed that host's stdin payload, environment and working
directory, and its exit code and stdout are read with that host's decode
table. Each dialect is one module; docs/dialects.md writes every table down.
Anything a table does not list is a failure (the hook's on_error applies),
never a silent pass.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from interlock.engine.errors import ConfigError

if TYPE_CHECKING:
    from interlock.engine.decisions import Decision
    from interlock.engine.hooks import Invocation
    from interlock.executors._process import Completed


class Dialect(Protocol):
    """One host's hook protocol."""

    name: str
    shell: bool
    """True: a string command runs via ``sh -c``; False: shlex-split, no shell (Hermes)."""

    def event_name(self, event: str) -> str | None:
        """What the host calls catalog event ``event``; None when it has no such event."""
        ...

    def tool_name(self, tool: str) -> str:
        """What the host calls one of Interlock's built-in tools (others unchanged)."""
        ...

    def tool_from_host(self, tool: str) -> str:
        """Interlock's name for a host tool name (for importing matchers: Bash -> terminal)."""
        ...

    def encode(self, invocation: Invocation, *, project_dir: str) -> bytes:
        """The stdin payload: compact one-line JSON and a newline."""
        ...

    def env(self, invocation: Invocation, *, project_dir: str,
            plugin_root: str | None) -> dict[str, str]:
        """The host's own variables (CLAUDE_PROJECT_DIR, ...), set over the user's env."""
        ...

    def decode(self, invocation: Invocation, result: Completed) -> Decision | None:
        """Exit code and output -> decision; raises HookFailure for failures."""
        ...


def _load() -> dict[str, Dialect]:
    from interlock.executors.dialects import claude, codex, gemini, hermes, moltis

    return {d.name: d for d in (claude.CLAUDE, codex.CODEX, gemini.GEMINI, hermes.HERMES,
                                moltis.MOLTIS)}


_loaded: dict[str, Dialect] | None = None

if TYPE_CHECKING:
    DIALECTS: dict[str, Dialect]
    """Every dialect by name."""


def __getattr__(name: str) -> object:
    # DIALECTS is loaded on first use: a config with no dialect hook (what the
    # first bridge call loads) must not import every host's table and the
    # command executor (docs/one-policy.md, Speed).
    if name == "DIALECTS":
        return _dialects()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _dialects() -> dict[str, Dialect]:
    global _loaded
    if _loaded is None:
        _loaded = _load()
    return _loaded


def get(name: str) -> Dialect:
    """The dialect called ``name``; a did-you-mean ConfigError otherwise."""
    dialects = _dialects()
    try:
        return dialects[name]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(str(name), list(dialects), n=1)
        fix = f"did you mean {close[0]!r}?" if close else f"use one of {', '.join(dialects)}"
        raise ConfigError(f"unknown dialect {name!r}", field="dialect", fix=fix) from None


def check_events(dialect: str, events: tuple[str, ...] | list[str]) -> None:
    """Raise a ConfigError if ``dialect`` has no name for one of ``events``."""
    d = get(dialect)
    for event in events:
        if d.event_name(event) is None:
            supported = [e for e in _catalog_names() if d.event_name(e) is not None]
            raise ConfigError(
                f"the {dialect} dialect has no event for {event!r}", field="events",
                fix=f"{dialect} hooks can subscribe to: {', '.join(supported)}")


def _catalog_names() -> list[str]:
    from interlock.engine.catalog import SPECS

    return [s.name for s in SPECS]


__all__ = ["DIALECTS", "Dialect", "check_events", "get"]
