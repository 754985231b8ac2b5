"""Before each run, check that what an approval pinned is still what is on disk.

The digest an approval is pinned to is computed when a revision is built. A
file can change after that, while a host keeps running (the agent's own write
tool can edit a hook's script). So every hook with pinned files carries a
:class:`PinSet`, taken in the same read as the digest, and checks it before
each call: one ``stat`` per file, and a re-hash only when the stat changed.
A file whose content differs makes the call a ``drifted`` failure naming the
file: a fail-closed hook blocks what it guards, a fail-open one is skipped
and dead-lettered (docs/configuration.md, Trust).

Like git's index, a stat taken while the file is still being written (within
:data:`RACY_NS` of its mtime) is not trusted: the next check re-hashes.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import stat
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from interlock.engine.coroutines import iscoroutinefunction
from interlock.engine.errors import FailureMode, HookFailure
from interlock.engine.hooks import Executor
from interlock.engine.sha import sha256
from interlock.reliability import Reliable

if TYPE_CHECKING:
    from interlock.engine.decisions import Decision
    from interlock.engine.hooks import Hook, HookFn, Invocation

IMPORTABLE = (".py", ".pyc", ".pth", ".so", ".pyd")
"""File names Python can import (or run at start-up)."""

SKIP_DIRS = frozenset({"__pycache__", ".git", ".hg", ".mypy_cache", ".pytest_cache",
                       ".ruff_cache", "node_modules", ".venv", "venv", ".tox"})
"""Folders a pinned tree leaves out (caches a run writes, other tools' worlds)."""

RACY_NS = 2_000_000_000
"""A stat this close to the file's last change is re-checked by content."""

StatKey = tuple[int, int, int, int, int, int]


def stat_key(st: os.stat_result) -> StatKey:
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_dev, st.st_mode)


class Read(msgspec.Struct):
    """One pinned file as read for a digest: what the digest covers, and its stat."""

    path: Path
    data: bytes | None
    """The content (None: missing or unreadable)."""
    mode_bit: bytes
    link: str | None
    key: StatKey | None

    @property
    def sha(self) -> str:
        if self.data is None:
            return "missing"
        h = sha256(self.mode_bit)
        if self.link is not None:
            h.update(b"\0link\0" + self.link.encode(errors="surrogateescape"))
        h.update(self.data)
        return h.hexdigest()


def real_walk(folder: Path, skip: frozenset[str] | set[str]
              ) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk`` through symlinked folders, each real folder once (a link back up
    the tree ends there), folders named in ``skip`` left out; ``dirs`` sorted."""
    seen: set[str] = set()
    for root, dirs, names in os.walk(folder, followlinks=True):
        real = os.path.realpath(root)
        if real in seen:  # a link back up the tree, or two links to one folder
            dirs[:] = []
            continue
        seen.add(real)
        dirs[:] = sorted(d for d in dirs if d not in skip)
        yield root, dirs, names


PYTHON_PROGRAM = re.compile(r"^(python|pypy)[0-9.]*$")
"""The base name of a Python interpreter (``python3``, ``python3.11``, ``pypy3``)."""


PACKAGES_ONLY: set[str] = set()
"""Folders whose listing counts modules and packages but not other subfolders: a
project root a hook's script runs from (``python3 check.py``). A package planted
there can shadow any module the script imports, the standard library's
included; a plain folder cannot, and a repository gains those as it grows."""


def is_package(folder: str) -> bool:
    return any(os.path.isfile(os.path.join(folder, "__init__" + s)) for s in IMPORTABLE)


def _modules(folder: Path) -> bytes:
    """What a folder offers to ``import``: its module files and subfolders, by name."""
    packages_only = str(folder) in PACKAGES_ONLY
    names = sorted(e.name + "/" if e.is_dir() else e.name for e in os.scandir(folder)
                   if (e.is_dir() and e.name not in SKIP_DIRS
                       and (not packages_only or is_package(e.path)))
                   or e.name.endswith(IMPORTABLE))
    return b"\0dir\0" + "\0".join(names).encode(errors="surrogateescape")


def content(path: Path) -> bytes:
    """A regular file's bytes; for anything else, its kind. Opened without blocking
    and checked after opening, so a FIFO swapped in after the ``stat`` is no wait."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        kind = stat.S_IFMT(os.fstat(fd).st_mode)
        if kind != stat.S_IFREG:
            return b"\0special\0" + oct(kind).encode()
        return fh.read()


def read(path: Path) -> Read:
    """Stat (first: a change while reading is caught next time), then read ``path``.

    A folder reads as the list of modules it offers (a log written there is no change),
    and anything else that is not a file (a FIFO, a socket, a device) as its kind: it
    is never opened to read, so a FIFO planted as a hook's file is a change, never a
    read that waits forever for a writer.
    """
    try:
        st = os.stat(path)
        link = os.readlink(path) if os.path.islink(path) else None
        data = _modules(path) if stat.S_ISDIR(st.st_mode) else content(path)
    except OSError:
        return Read(path, None, b"", None, None)
    racy = time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) < RACY_NS
    return Read(path, data, b"x" if st.st_mode & 0o111 else b"-", link,
                None if racy else stat_key(st))


class PinSet:
    """The pinned files of one hook revision, checked before each call."""

    __slots__ = ("_keys", "_lock", "paths", "shas")

    def __init__(self, reads: Iterable[Read]) -> None:
        reads = list(reads)
        self.paths: tuple[Path, ...] = tuple(r.path for r in reads)
        self.shas: tuple[str, ...] = tuple(r.sha for r in reads)
        self._keys: list[StatKey | None] = [r.key for r in reads]
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.paths)

    def extend(self, reads: Iterable[Read]) -> None:
        """Pin more files (modules a handler imported while it was loaded)."""
        reads = [r for r in reads if r.path not in self.paths]
        with self._lock:
            self.paths += tuple(r.path for r in reads)
            self.shas += tuple(r.sha for r in reads)
            self._keys += [r.key for r in reads]

    def drifted(self) -> Path | None:
        """The first pinned file whose content is no longer what was approved."""
        keys = self._keys
        for i, path in enumerate(self.paths):
            try:
                key: StatKey | None = stat_key(os.stat(path))
            except OSError:
                key = None
            if key is not None and key == keys[i]:
                continue
            now = read(path)
            if now.sha != self.shas[i]:
                return path
            keys[i] = now.key  # same content (rewritten, touched): trust the new stat
        return None


def drift_failure(name: str, path: Path) -> HookFailure:
    shown = str(path)
    if len(shown) > 200:
        shown = "..." + shown[-197:]
    return HookFailure(f"{shown!r} changed since hook {name} was approved; run "
                       f"`interlock hooks approve {name}` to approve it as it is now",
                       mode=FailureMode.DRIFTED, retryable=False)


class Checked(Reliable):
    """The reliability wrapper, checking the hook's pinned files first (outside the
    breaker: a changed file is no outage to count, and the block names the file)."""

    __slots__ = ("pinned_by", "pins")

    def __init__(self, around: Reliable, pins: PinSet, name: str) -> None:
        super().__init__(around.inner, around.policy, key=around.key, clock=around.clock,
                         breakers=around.breakers, metrics=around.metrics, rng=around._rng)
        self.pins = pins
        self.pinned_by = name

    async def __call__(self, invocation: Invocation) -> Decision | None:
        bad = self.pins.drifted()
        if bad is not None:
            raise drift_failure(self.pinned_by, bad)
        return await super().__call__(invocation)


class _CheckedExecutor(Executor):
    """The same check around an executor with no reliability wrapper."""

    __slots__ = ("inner", "name", "pins")

    def __init__(self, inner: Executor, pins: PinSet, name: str) -> None:
        self.inner = inner
        self.pins = pins
        self.name = name

    async def __call__(self, invocation: Invocation) -> Decision | None:
        bad = self.pins.drifted()
        if bad is not None:
            raise drift_failure(self.name, bad)
        return await self.inner(invocation)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _checked_fn(fn: HookFn, pins: PinSet, name: str) -> HookFn:
    if iscoroutinefunction(fn) or iscoroutinefunction(
            getattr(fn, "__call__", None)):  # noqa: B004 - async callable objects
        async def checked_async(event: Any) -> Any:
            bad = pins.drifted()
            if bad is not None:
                raise drift_failure(name, bad)
            return await fn(event)  # type: ignore[misc]

        return functools.wraps(fn)(checked_async)

    def checked(event: Any) -> Any:
        bad = pins.drifted()
        if bad is not None:
            raise drift_failure(name, bad)
        return fn(event)

    return functools.wraps(fn)(checked)


def checked(hook: Hook, pins: PinSet | None) -> Hook:
    """``hook`` checking ``pins`` before each call (itself when nothing is pinned)."""
    if pins is None or not len(pins):
        return hook
    name = hook.qualified_name
    if hook.executor is not None:
        ex = hook.executor
        wrapped: Executor = (Checked(ex, pins, name) if isinstance(ex, Reliable)
                             else _CheckedExecutor(ex, pins, name))
        return dataclasses.replace(hook, executor=wrapped, meta=dict(hook.meta))
    assert hook.fn is not None
    return dataclasses.replace(hook, fn=_checked_fn(hook.fn, pins, name), meta=dict(hook.meta))
