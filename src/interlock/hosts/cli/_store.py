"""What the store commands share: finding the store, parsing times, printing rows."""

from __future__ import annotations

import datetime as dt
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

from interlock.engine.errors import ConfigError

if TYPE_CHECKING:
    from interlock.store._sql import SQLBackend

STORE_HELP = ("Store URL or SQLite path (postgresql://... for PostgreSQL); default: "
              "$INTERLOCK_STORE, else interlock.db in the project or user state dir.")

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def open_backend(url: str | None) -> SQLBackend | None:
    """The store's backend for reading, or None when a SQLite store does not exist yet."""
    from interlock.store import _ledger, backend_for, default_url

    where = url or default_url()
    if "://" not in where or where.startswith("sqlite://"):
        path = Path(where.removeprefix("sqlite://")).expanduser()
        if not path.exists() and _ledger.created(path) is None:
            return None  # (one that is gone is refused by opening it, below)
    return backend_for(where)


def missing(url: str | None) -> str:
    from interlock.store import default_url

    return f"no store yet at {url or default_url()} (nothing has been recorded)"


def parse_time(text: str | None, field: str) -> float | None:
    """``30m``, ``2h``, ``7d`` (that long ago) or an ISO 8601 time, as Unix time."""
    if text is None:
        return None
    m = _DURATION.match(text.strip())
    if m:
        return time.time() - float(m.group(1)) * _UNITS[m.group(2)]
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ConfigError(f"cannot read the time {text!r}", field=field,
                          fix="write a duration such as 30m, 2h or 7d, or an ISO time "
                              "such as 2026-01-31T12:00") from None
    if when.tzinfo is None:
        when = when.astimezone()  # local time, as a person typing it means
    return when.timestamp()


def when(at: float | None) -> str:
    if at is None:
        return "-"
    return dt.datetime.fromtimestamp(at).strftime("%Y-%m-%d %H:%M:%S")


def table(headers: list[str], rows: list[list[str]]) -> str:
    """The rows under ``headers``, fitted to the terminal (cli/_table.py)."""
    from interlock.hosts.cli._table import render

    return render(headers, rows, wrap=(headers[-1],))
