"""Which SQLite stores a folder has held, so a deleted one is noticed.

A store deleted with its journal while its folder stays (a cleanup, a process
erasing evidence) would otherwise come back as a fresh, empty file on the next
open, and the audit log would silently restart. Each folder keeps a small
ledger, ``.interlock-stores``, naming the store files created in it; opening a
store the ledger names but that is missing is refused (docs/reliability.md,
Stores that fail loudly) until ``interlock store repair`` starts a new one.
A wiped folder takes its ledger with it, and the new store is announced.

The ledger also notes a store that a whole-file check found damaged, with the
file's identity then (inode, size, modification and change times): opens that
do not read the file whole refuse it too, until the file changes (a backup put
back), `interlock store check` finds it whole, or it is repaired.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from interlock.engine.logs import logger

LEDGER = ".interlock-stores"

log = logger("interlock")


def _file(store: Path) -> Path:
    return store.with_name(LEDGER)


def _read(store: Path) -> dict[str, float | str]:
    try:
        data = json.loads(_file(store).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): (float(v) if isinstance(v, int | float) else v)
            for k, v in data.items() if isinstance(v, int | float | str)}


def created(store: Path) -> float | None:
    """When the ledger says ``store`` was created, or None if it never held one."""
    found = _read(store).get(store.name)
    return found if isinstance(found, float) else None


def remember(store: Path, at: float) -> None:
    """Note ``store`` in its folder's ledger (atomically; a failure only warns)."""
    _write(store, {**_read(store), store.name: at})


def forget(store: Path) -> None:
    entries = _read(store)
    found = entries.pop(store.name, None), entries.pop(store.name + DAMAGED, None)
    if found != (None, None):
        _write(store, entries)


DAMAGED = "#damaged"


def identity(store: Path) -> str:
    """The file as it is now: inode, size, and modification and change times in
    ns. Restoring a backup changes the change time even where it keeps the
    modification time (``cp -p``, ``rsync -a``); failing disk sectors change
    neither."""
    st = store.stat()
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def damaged(store: Path) -> str | None:
    """The file's :func:`identity` when a whole-file check found ``store``
    damaged, or None if none did (or the ledger was written by an older one)."""
    found = _read(store).get(store.name + DAMAGED)
    return found if isinstance(found, str) else None


def mark_damaged(store: Path, ident: str) -> None:
    """Note that a whole-file check found ``store`` damaged while it was ``ident``."""
    _write(store, {**_read(store), store.name + DAMAGED: ident})


def clear_damaged(store: Path) -> bool:
    """Forget a damage note (the file was read whole since, and found sound);
    True if there was one."""
    entries = _read(store)
    if entries.pop(store.name + DAMAGED, None) is None:
        return False
    _write(store, entries)
    return True


def _write(store: Path, entries: dict[str, float | str]) -> None:
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
