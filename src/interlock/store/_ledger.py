"""Which SQLite stores a folder has held, so a deleted one is noticed.

A store deleted with its journal while its folder stays (a cleanup, a process
erasing evidence) would otherwise come back as a fresh, empty file on the next
open, and the audit log would silently restart. Each folder keeps a small
ledger, ``.interlock-stores``, naming the store files created in it; opening a
store the ledger names but that is missing is refused (docs/reliability.md,
Stores that fail loudly) until ``interlock store repair`` starts a new one.
A wiped folder takes its ledger with it, and the new store is announced.

The ledger also notes a store that a whole-file check found damaged, with the
file's modification time then: opens that do not read the file whole refuse
it too, until the file changes (a backup put back) or is repaired.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from pathlib import Path

LEDGER = ".interlock-stores"

log = logging.getLogger("interlock")


def _file(store: Path) -> Path:
    return store.with_name(LEDGER)


def _read(store: Path) -> dict[str, float]:
    try:
        data = json.loads(_file(store).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): float(v) for k, v in data.items() if isinstance(v, int | float)}


def created(store: Path) -> float | None:
    """When the ledger says ``store`` was created, or None if it never held one."""
    return _read(store).get(store.name)


def remember(store: Path, at: float) -> None:
    """Note ``store`` in its folder's ledger (atomically; a failure only warns)."""
    _write(store, {**_read(store), store.name: at})


def forget(store: Path) -> None:
    entries = _read(store)
    found = entries.pop(store.name, None), entries.pop(store.name + DAMAGED, None)
    if found != (None, None):
        _write(store, entries)


DAMAGED = "#damaged"


def damaged(store: Path) -> float | None:
    """The file's modification time when a whole-file check found ``store``
    damaged, or None if none did."""
    return _read(store).get(store.name + DAMAGED)


def mark_damaged(store: Path, mtime: float) -> None:
    """Note that a whole-file check found ``store`` damaged while it had ``mtime``."""
    _write(store, {**_read(store), store.name + DAMAGED: mtime})


def clear_damaged(store: Path) -> None:
    entries = _read(store)
    if entries.pop(store.name + DAMAGED, None) is not None:
        _write(store, entries)


def _write(store: Path, entries: dict[str, float]) -> None:
    target = _file(store)
    tmp = target.with_name(f"{LEDGER}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(entries, fh)
        os.replace(tmp, target)
    except OSError as exc:
        log.warning("interlock store %s: could not note it in %s: %s", store, target, exc)
        with contextlib.suppress(OSError):
            tmp.unlink()
