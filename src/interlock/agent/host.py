"""Moved: the host assembly is :mod:`interlock.host`; the command-line runner is
:mod:`interlock.agent.runner`. Kept so earlier imports still work."""

from interlock.agent.runner import (
    RunSpec,
    _print_step,
    build_agent,
    builtin_names,
    parse_rules,
    run_once,
)
from interlock.host import Host, load_extensions, open_host

__all__ = ["Host", "RunSpec", "_print_step", "build_agent", "builtin_names", "load_extensions",
           "open_host", "parse_rules", "run_once"]
