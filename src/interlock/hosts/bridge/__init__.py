"""Bridges: other agents' hook protocols in front of Interlock's hooks.

``interlock bridge <agent>`` reads that agent's hook input on stdin, maps it
to the catalog event, evaluates it (through a running ``interlock serve``
over its Unix socket when one is up, in process otherwise) and answers the
way the agent expects. A bridge that fails in any way denies, in the agent's
own format, before the agent's hook timeout.

One module per agent (``claude``, ``codex``, ``gemini``, ``cursor``,
``hermes``, ``moltis``); each has ``host_event(payload)``,
``to_event(payload)``, ``answer(host_event, payload, result)`` and
``deny(host_event, text)``. This package's import path loads no CLI
framework and, with a server up, not even the engine.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

HOSTS = ("claude", "codex", "gemini", "cursor", "hermes", "moltis")
PROCESS_ENDS_WITH_ANSWER = False
"""True in the bridge's own process (``python -m interlock.bridge``, set by its
``__main__``), which ends once it has answered: only there may a call that loads
the hooks change how the process collects garbage (interlock.hosts.bridge._core)."""


def host(name: str) -> ModuleType:
    """The bridge module for agent ``name`` (ValueError for an unknown agent)."""
    if name not in HOSTS:
        raise ValueError(f"unknown agent {name!r}; bridges exist for {', '.join(HOSTS)}")
    qualified = f"interlock.hosts.bridge.{name}"
    __import__(qualified)  # not importlib: the bridge counts every import at start-up
    return sys.modules[qualified]


def main(argv: list[str]) -> int:
    """``interlock bridge <agent> [options]``; returns the exit code for the host."""
    from interlock.hosts.bridge._fast import main as fast_main

    return fast_main(argv)
