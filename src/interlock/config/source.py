"""Import hook and extension code from its source text, never from bytecode.

Consent pins a Python hook's source files (docs/security.md). Python's own
import would not always run them: it runs ``__pycache__/NAME.cpython-3X.pyc``
instead whenever that file's header repeats the source's mtime (whole seconds)
and size. An edit of the same size within the same second would then keep the
old code running, and a planted ``.pyc`` with a copied header would run in place
of an approved, unchanged script.

So the modules Interlock imports for hooks and extensions, and every module
they import from the folders they live in (:func:`cover`), are compiled from
the bytes on disk each time they are imported, and no bytecode is written
beside them. A project module a hook imported and that has since changed is
dropped from ``sys.modules`` before the next hook loads (:func:`forget_changed`),
so an approved edit of a helper runs, not the copy imported before it.

Two refusals complete it: bytecode with no source beside it is never imported
from those folders, and while a handler loads under :func:`only`, a project
module that its approval did not record (a package planted beside a recorded
``helper.py``, a re-pointed link) is refused before it runs.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

from interlock.config.drift import StatKey, stat_key

_lock = threading.Lock()
_roots: tuple[str, ...] = ()
_installed = False
_env: tuple[str, ...] = ()
_imported: dict[str, tuple[str, StatKey]] = {}
"""Modules a hook imported from a covered folder: name -> (file, stamp at import)."""


class SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """Compiles the file's current bytes; reads and writes no ``.pyc``."""

    def get_code(self, fullname: str) -> CodeType:
        path = self.get_filename(fullname)
        code: CodeType = self.source_to_code(self.get_data(path), path)
        return code


class NotApproved(ImportError):
    """A project module a handler's approval did not record: refused before it runs."""


class _CoveredFolders:
    """A meta path finder in front of ``PathFinder``: modules found under a covered
    folder get a :class:`SourceOnlyLoader`, bytecode without its source there is
    refused, and while a handler loads under :func:`only` a project module its
    approval did not record is refused before it runs; everything else is found
    as before."""

    @classmethod
    def find_spec(cls, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or not spec.origin or not os.path.isabs(spec.origin):
            return spec
        if _gates:
            real = os.path.realpath(spec.origin)
            under = [allowed for allowed, root in tuple(_gates) if _under(real, (root,))]
            # A recorded archive (lib.zip) allows the modules inside it.
            if under and not any(_under(real, allowed) for allowed in under) \
                    and not _under(real, _env):
                raise NotApproved(f"{spec.origin} was not imported when the hook was "
                                  "approved (a module of that name now resolves to it)",
                                  name=fullname, path=spec.origin)
        if not covered(spec.origin):
            return spec
        if isinstance(spec.loader, importlib.machinery.SourcelessFileLoader):
            raise ImportError(f"{spec.origin}: bytecode without its source is never imported "
                              "from a hook's or an extension's folder", name=fullname,
                              path=spec.origin)
        if type(spec.loader) is importlib.machinery.SourceFileLoader:
            spec.loader = SourceOnlyLoader(fullname, spec.origin)
            spec.cached = None
        return spec


_gates: list[tuple[frozenset[str], str]] = []
"""The handler loads under way: (the files allowed, the project root). Imports in
every thread count, so a handler cannot slip one past through a thread it starts."""


@contextmanager
def only(allowed: Iterable[str] | None, root: Path | None) -> Iterator[None]:
    """While a handler loads: with ``allowed`` (the project modules its approval
    recorded), a module under ``root`` that is not one of them is refused before
    it runs, so a file planted to shadow a recorded one (a package folder beside
    ``helper.py``, a re-pointed symlink) never runs as approved. Two loads of one
    project at once allow what either recorded."""
    if allowed is None or root is None:
        yield
        return
    gate = (frozenset(os.path.realpath(f) for f in allowed), os.path.realpath(root))
    with _lock:
        _gates.append(gate)
    try:
        yield
    finally:
        with _lock:
            _gates.remove(gate)


def _environment() -> tuple[str, ...]:
    """The running interpreter's own folders (its prefix, its site-packages and
    Interlock itself): a project's ``.venv`` under a covered folder is the
    environment the host runs in, not hook code, and keeps its bytecode."""
    import sysconfig

    folders = {sys.prefix, sys.base_prefix, str(Path(__file__).resolve().parents[1])}
    paths = sysconfig.get_paths()  # once: each get_path() expands them all (~0.3 ms)
    folders |= {paths[p] for p in ("purelib", "platlib", "stdlib")}
    return tuple(os.path.realpath(f) for f in folders if f)


def _under(real: str, folders: Iterable[str]) -> bool:
    return any(real == f or real.startswith(f + os.sep) for f in folders)


def covered(file: str) -> bool:
    real = os.path.realpath(file)
    return _under(real, _roots) and not _under(real, _env)


def cover(folders: Iterable[Path]) -> None:
    """Import everything under ``folders`` from source from now on (it only grows)."""
    global _roots, _installed, _env
    new = {os.path.realpath(f) for f in folders}
    with _lock:
        if not new.issubset(_roots):
            _roots = tuple(sorted(set(_roots) | new))
        if not _installed:
            _env = _environment()
            at = next((i for i, f in enumerate(sys.meta_path)
                       if f is importlib.machinery.PathFinder), len(sys.meta_path))
            sys.meta_path.insert(at, _CoveredFolders)
            _installed = True


def spec_for(name: str, file: Path, *, package: bool = False) -> importlib.machinery.ModuleSpec:
    """The spec of a hook's or extension's own module, loaded from source."""
    spec = importlib.util.spec_from_file_location(
        name, file, loader=SourceOnlyLoader(name, str(file)),
        submodule_search_locations=[str(file.parent)] if package else None)
    assert spec is not None
    return spec


def _stamp(file: str) -> StatKey | None:
    try:
        return stat_key(os.stat(file))
    except OSError:
        return None


def remember(modules: Iterable[Any]) -> None:
    """Note the covered modules a hook's loading imported, to notice their edits."""
    with _lock:
        for mod in modules:
            file = getattr(mod, "__file__", None)
            if isinstance(file, str) and covered(file) and (stamp := _stamp(file)):
                _imported[mod.__name__] = (file, stamp)


def forget_changed() -> None:
    """Drop the remembered modules whose file changed, so the next import reads it."""
    with _lock:
        for name, (file, stamp) in list(_imported.items()):
            if _stamp(file) != stamp:
                del _imported[name]
                sys.modules.pop(name, None)
