"""Persistent state per extension: a small JSON object in the extension's own
state directory, written atomically (temp file, fsync, rename), so a crash
mid-write leaves the previous state, never half a file."""

from __future__ import annotations

import copy
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

from interlock.engine.errors import ConfigError

MAX_BYTES = 1_000_000
_MISSING = object()


class ExtensionState:
    """``ctx.state``: ``get``, ``set``, ``delete``, ``update``, ``data``, ``clear``."""

    def __init__(self, directory: Path, *, max_bytes: int = MAX_BYTES) -> None:
        self.directory = directory
        self.path = directory / "state.json"
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._data: dict[str, Any] | None = None

    def _load(self) -> dict[str, Any]:
        if self._data is None:
            try:
                raw = self.path.read_text(encoding="utf-8")
            except FileNotFoundError:
                self._data = {}
            else:
                try:
                    data = json.loads(raw)
                except ValueError as exc:
                    raise ConfigError(f"extension state is not valid JSON: {exc}",
                                      file=str(self.path),
                                      fix="repair or delete the file") from None
                if not isinstance(data, dict):
                    raise ConfigError("extension state must be a JSON object",
                                      file=str(self.path), fix="repair or delete the file")
                self._data = data
        return self._data

    def get(self, key: str, default: Any = None) -> Any:
        with self._lock:
            value = self._load().get(key, _MISSING)
        return default if value is _MISSING else copy.deepcopy(value)

    def data(self) -> dict[str, Any]:
        with self._lock:
            return copy.deepcopy(self._load())

    def set(self, key: str, value: Any) -> None:
        self.update({key: value})

    def update(self, values: dict[str, Any]) -> None:
        with self._lock:
            new = dict(self._load())
            new.update(copy.deepcopy(values))
            self._write(new)

    def delete(self, key: str) -> None:
        with self._lock:
            new = dict(self._load())
            if new.pop(key, _MISSING) is not _MISSING:
                self._write(new)

    def clear(self) -> None:
        with self._lock:
            self._write({})

    def _write(self, data: dict[str, Any]) -> None:
        try:
            text = json.dumps(data, ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"extension state must be JSON-serialisable: {exc}",
                              file=str(self.path)) from None
        if len(text.encode()) > self.max_bytes:
            raise ConfigError(f"extension state would be {len(text.encode())} bytes, over "
                              f"the cap of {self.max_bytes}", file=str(self.path),
                              fix="keep large data in files of your own under state_dir")
        self.directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".state-", suffix=".tmp", dir=self.directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise
        self._data = data
