"""The live-reload loop: OS notifications for folders, a cheap stat poll for pinned files.

A host's hooks come from folders (the config layers, hook folders, the state
dir's approvals and toggles, extension folders) and from single files a hook
definition pins wherever they live (``hooks/no_rm.py`` at the project root, a
script's imports, a symlink's target). The folders are watched with the OS's
notifications (watchfiles), recursively. The pinned files are not: watching a
file's parent recursively could mean watching a whole repository, and an
editor's save-by-rename would silently end a watch on the file itself. They
are stat-ed every ``poll_ms`` instead (size, mtime, inode, ctime), which is a
few microseconds per file.

:func:`watch` calls ``apply(paths)`` (in a worker thread) with what changed,
and once at the start, since changes made before the watcher ran count too.
It asks ``plan()`` again after each wake-up and restarts when the set of
folders or files changed (a folder appeared, a new hook pins a new file).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from interlock.engine.logs import logger

log = logger("interlock.watch")

DEBOUNCE_MS = 300
"""The longest a burst of changes is collected before it is applied; a single
change is applied after about two 50 ms steps of quiet."""
POLL_MS = 200
"""How often pinned files are stat-ed (and the watcher wakes when idle)."""


class Stop(Protocol):
    """An asyncio.Event or a threading.Event: the loop only asks ``is_set()``."""

    def is_set(self) -> bool: ...


class Plan:
    """What to watch: ``dirs`` by notification (recursively), ``files`` by stat,
    and which notified paths matter."""

    __slots__ = ("dirs", "files", "relevant")

    def __init__(self, dirs: Sequence[Path], files: Sequence[Path],
                 relevant: Callable[[str], bool]) -> None:
        self.dirs = tuple(dirs)
        self.files = tuple(files)
        self.relevant = relevant

    def same_targets(self, other: Plan) -> bool:
        return self.dirs == other.dirs and self.files == other.files


Stamp = tuple[int, int, int, int] | None


def stamps(files: Sequence[Path]) -> dict[Path, Stamp]:
    """Each file's (size, mtime_ns, inode, ctime_ns), following symlinks; None if gone."""
    out: dict[Path, Stamp] = {}
    for f in files:
        try:
            st = os.stat(f)
        except OSError:
            out[f] = None
        else:
            out[f] = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
    return out


def _only(relevant: Callable[[str], bool]) -> Callable[[Any, str], bool]:
    return lambda _change, path: relevant(path)


async def watch(plan: Callable[[], Plan], apply: Callable[[set[str]], Any], stop: Stop, *,
                debounce_ms: int = DEBOUNCE_MS, poll_ms: int = POLL_MS) -> None:
    """Call ``apply(changed paths)`` on every relevant change until ``stop`` is set."""
    from asyncio import to_thread  # a watcher runs on a loop: imported already

    from watchfiles import awatch

    catch_up = True
    while not stop.is_set():
        current = plan()
        seen = stamps(current.files)
        restart = False
        # watchfiles only calls is_set() on it; its annotation names concrete event types.
        async for changes in awatch(
                *current.dirs, stop_event=stop,  # type: ignore[arg-type]
                debounce=debounce_ms, rust_timeout=poll_ms,
                yield_on_timeout=True, watch_filter=_only(current.relevant)):
            paths = {p for _c, p in changes}
            now = stamps(current.files)
            if now != seen:
                paths |= {str(f) for f in current.files if now[f] != seen.get(f)}
                seen = now
            if paths or catch_up:
                # After a restart, apply once the new watcher runs: files written
                # while no watcher covered them are not lost.
                catch_up = False
                try:
                    await to_thread(apply, paths)
                except Exception:  # keep watching; the last good state stays
                    log.exception("applying a configuration change failed")
            if stop.is_set():
                break
            if not plan().same_targets(current):
                restart = catch_up = True
                break
        if not restart:
            return
