"""Shared helpers for CLI commands: error display without tracebacks."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


@contextmanager
def user_errors() -> Iterator[None]:
    """Show an InterlockError as one clear line and exit 2, never a traceback."""
    from interlock.engine.errors import InterlockError

    try:
        yield
    except InterlockError as exc:
        sys.stderr.write(f"interlock: error: {exc}\n")
        raise SystemExit(2) from None


def print_json(data: Any) -> None:
    import json

    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
