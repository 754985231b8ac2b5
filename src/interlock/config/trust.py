"""Content-pinned consent: which hook definitions a person approved.

An approval is pinned to a hook's digest (its whole normalised definition plus
every file it references), so any edit needs approval again. The store also
keeps, per project, the *baseline* of fail-closed hooks that were in force,
so a reload (or a restart) that removes or weakens one is held back until an
operator approves it, and the hooks an operator turned on or off.

Extension pins (what was approved for each installed extension, see
:mod:`interlock.ext.pins`) are kept here too, in ``extension_pins.json``: one
consent store, one lock, for hooks and extensions alike.

Files live in the state dir (``approvals.json``, ``toggles.json``,
``baselines.json``, ``extension_pins.json``). Every
change takes an exclusive lock (``.lock``, flock) around read-modify-write and
replaces the file atomically, so concurrent processes never lose an update or
read half a file. POSIX only, like the command executor.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from interlock.engine.errors import ConfigError

APPROVALS = "approvals.json"
TOGGLES = "toggles.json"
BASELINES = "baselines.json"
PINS = "extension_pins.json"
IMPORTS = "imports.json"


class Approval(msgspec.Struct, frozen=True):
    key: str
    digest: str
    name: str
    approved_at: float
    by: str


def hook_key(qualified_name: str, file: Path | str) -> str:
    """Approvals are per hook *and* per declaring file: the same name elsewhere is another hook."""
    return f"{qualified_name}@{file}"


class TrustStore:
    def __init__(self, state_dir: Path) -> None:
        self.dir = state_dir
        self.approvals_path = state_dir / APPROVALS
        self.toggles_path = state_dir / TOGGLES
        # Kept apart from approvals: every revision updates it, and a change to
        # it must not look like an operator's change to the watcher.
        self.baselines_path = state_dir / BASELINES
        # Apart from approvals too: the hooks' watcher reloads on approvals.json.
        self.pins_path = state_dir / PINS
        # What each approved Python handler imported from the project when first
        # loaded: a later load checks it before importing (see config/imports.py).
        self.imports_path = state_dir / IMPORTS

    # -- files ----------------------------------------------------------------
    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.dir / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    @staticmethod
    def _load(path: Path) -> dict[str, Any]:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"corrupt state file: {exc.msg}", file=str(path), line=exc.lineno,
                              fix="restore it from a backup, or delete it and approve the hooks "
                                  "again (`interlock hooks approve --all`)") from None
        if not isinstance(data, dict):
            raise ConfigError("corrupt state file: not an object", file=str(path),
                              fix="delete it and approve the hooks again")
        return data

    @staticmethod
    def _save(path: Path, data: dict[str, Any]) -> None:
        import tempfile  # only a write needs it; most calls only read (docs/one-policy.md, Speed)

        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh, indent=1, sort_keys=True)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def _update(self, path: Path, change: Callable[[dict[str, Any]], None]) -> None:
        with self._locked():
            data = self._load(path)
            change(data)
            self._save(path, data)

    # -- approvals ------------------------------------------------------------
    def approvals(self) -> dict[str, Approval]:
        raw = self._load(self.approvals_path).get("approvals", {})
        return {k: Approval(k, v["digest"], v.get("name", ""), v.get("approved_at", 0.0),
                            v.get("by", "")) for k, v in raw.items()}

    def approved(self, key: str, digest: str) -> bool:
        found = self.approvals().get(key)
        return found is not None and found.digest == digest

    def revoked(self, key: str, digest: str) -> bool:
        """Whether an operator revoked this content, which ``--accept-hooks`` must then
        not approve again. This machine's file keeps no revocations: never here (the
        fleet's table does: interlock.hosts.fleet.approvals)."""
        return False

    def approve(self, items: list[tuple[str, str, str]], *, by: str = "operator") -> None:
        """Approve (key, digest, qualified name) triples."""
        now = time.time()

        def change(data: dict[str, Any]) -> None:
            table = data.setdefault("approvals", {})
            for key, dig, name in items:
                table[key] = {"digest": dig, "name": name, "approved_at": now, "by": by}

        self._update(self.approvals_path, change)
        if self.imports_path.exists():  # a new approval covers the modules as they are now
            def forget(data: dict[str, Any]) -> None:
                for key, _dig, _name in items:
                    data.setdefault("imports", {}).pop(key, None)

            self._update(self.imports_path, forget)

    def revoke(self, keys: list[str]) -> int:
        removed = 0

        def change(data: dict[str, Any]) -> None:
            nonlocal removed
            table = data.setdefault("approvals", {})
            for key in keys:
                if table.pop(key, None) is not None:
                    removed += 1

        self._update(self.approvals_path, change)
        return removed

    # -- modules an approved handler imports -----------------------------------------
    def imports(self, key: str, digest: str) -> dict[str, str] | None:
        """file -> sha256 of the project modules the approval ``digest`` of ``key`` loaded."""
        found = self._load(self.imports_path).get("imports", {}).get(key)
        if not isinstance(found, dict) or found.get("digest") != digest:
            return None
        files: dict[str, str] = found.get("files", {})
        return files

    def set_imports(self, key: str, digest: str, files: dict[str, str] | None) -> None:
        def change(data: dict[str, Any]) -> None:
            table = data.setdefault("imports", {})
            if files is None:
                table.pop(key, None)
            else:
                table[key] = {"digest": digest, "files": files}

        self._update(self.imports_path, change)

    # -- fail-closed baseline ---------------------------------------------------
    def baseline(self, project: Path) -> dict[str, dict[str, Any]] | None:
        """The fail-closed hooks in force for ``project``; None before the first load."""
        found: dict[str, dict[str, Any]] | None = (
            self._load(self.baselines_path).get("baselines", {}).get(str(project)))
        return found

    def set_baseline(self, project: Path, guards: dict[str, dict[str, Any]]) -> None:
        if self.baseline(project) == guards:
            return

        def change(data: dict[str, Any]) -> None:
            data.setdefault("baselines", {})[str(project)] = guards

        self._update(self.baselines_path, change)

    def release(self, project: Path, names: list[str]) -> list[str]:
        """An operator approves removing or weakening these guards; returns those released."""
        released: list[str] = []

        def change(data: dict[str, Any]) -> None:
            guards = data.setdefault("baselines", {}).get(str(project))
            if guards is None:
                return
            for name in names:
                if guards.pop(name, None) is not None:
                    released.append(name)

        self._update(self.baselines_path, change)
        return released

    # -- toggles (hooks enable / disable) -----------------------------------------
    def toggles(self, project: Path) -> dict[str, bool]:
        found: dict[str, bool] = self._load(self.toggles_path).get("projects", {}).get(
            str(project), {})
        return found

    def set_toggle(self, project: Path, qualified_name: str, enabled: bool) -> None:
        def change(data: dict[str, Any]) -> None:
            data.setdefault("projects", {}).setdefault(str(project), {})[qualified_name] = enabled

        self._update(self.toggles_path, change)

    # -- extension pins ---------------------------------------------------------
    def pins(self) -> dict[str, Any]:
        """Every extension pin, by key, as stored (see interlock.ext.pins.Pin)."""
        found: dict[str, Any] = self._load(self.pins_path).get("pins", {})
        return found

    def put_pin(self, key: str, record: dict[str, Any]) -> None:
        def change(data: dict[str, Any]) -> None:
            data.setdefault("pins", {})[key] = record

        self._update(self.pins_path, change)

    def remove_pin(self, key: str) -> bool:
        removed = False

        def change(data: dict[str, Any]) -> None:
            nonlocal removed
            removed = data.setdefault("pins", {}).pop(key, None) is not None

        self._update(self.pins_path, change)
        return removed
