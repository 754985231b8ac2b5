"""Entry points that must not import the CLI framework (typer/click/rich)."""

from __future__ import annotations

import sys


def run_bridge(args: list[str]) -> int:
    try:
        from interlock.hosts.bridge import main as bridge_main
    except ImportError:
        sys.stderr.write("interlock: bridges are not available in this build\n")
        return 2
    result: int = bridge_main(args)
    return result
