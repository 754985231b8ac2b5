"""One extension as the loader sees it: a candidate found in a folder or an
entry point, what ``ext list`` shows of it, the placeholder that stands in for
it (failing closed) when it did not load, and importing a folder's module.

Used by :mod:`interlock.ext.loader`.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import EntryPoint
from typing import Any

from interlock.config import source
from interlock.engine.errors import ConfigError, FailureMode, HookFailure
from interlock.engine.hooks import Executor, Invocation, Source
from interlock.ext.context import ExtensionContext
from interlock.ext.pins import Manifest, Pin


@dataclass
class ExtensionInfo:
    """One extension as ``ext list`` and the host see it."""

    name: str
    source: Source
    origin: str
    """Folder path or entry point (module:attr)."""
    status: str = "loaded"
    """loaded | failed | disabled | unapproved | changed"""
    message: str = ""
    guards: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    providers: tuple[str, ...] = ()
    pin: Pin | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source.label, "origin": self.origin,
                "status": self.status, "message": self.message, "guards": list(self.guards),
                "tools": list(self.tools), "commands": list(self.commands),
                "providers": list(self.providers),
                "pin": None if self.pin is None else {
                    "kind": self.pin.kind, "digest": self.pin.digest,
                    "commit": self.pin.commit, "version": self.pin.version,
                    "enabled": self.pin.enabled}}


class Unavailable(Executor):
    """Executor of the placeholder hook that stands in for an extension that did not load."""

    def __init__(self, message: str) -> None:
        self.message = message

    async def __call__(self, invocation: Invocation) -> None:
        raise HookFailure(self.message, mode=FailureMode.INELIGIBLE)


@dataclass
class Candidate:
    name: str
    source: Source
    origin: str
    guards: tuple[str, ...] = ()
    manifest: Manifest | None = None
    entry_point: EntryPoint | None = None
    register: Callable[[ExtensionContext], Any] | None = None
    error: ConfigError | None = None
    """Why it cannot even be read (a bad extension.toml)."""


def version_of(cand: Candidate) -> str:
    if cand.manifest is not None:
        return cand.manifest.version
    dist = getattr(cand.entry_point, "dist", None)
    return str(getattr(dist, "version", "") or "")


def import_folder(manifest: Manifest) -> Any:
    """Import a folder extension's module under a private name."""
    file = manifest.module_file()
    mod_name = f"interlock_ext_{manifest.name.replace('-', '_')}"
    # From the source on disk, as are the modules it imports from its folder: a
    # planted .pyc never stands in for the pinned code (docs/security.md).
    source.cover([manifest.path])
    spec = source.spec_for(mod_name, file, package=file.name == "__init__.py")
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    old = sys.modules.get(mod_name)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        if old is None:
            sys.modules.pop(mod_name, None)
        else:
            sys.modules[mod_name] = old
        raise
    return module
