"""Extension manifests, content digests and pins (the consent record).

A folder extension is ``<dir>/extension.toml`` plus a module:

    name = "hello"                    # required; [a-z0-9][a-z0-9_-]*
    description = "..."
    version = "0.1.0"
    module = "hello"                  # hello.py or hello/__init__.py; default "extension"
    guards = ["before_tool_call"]     # events its fail-closed hooks guard
    enabled = true
    requires = ["other-ext>=1.2"]     # other extensions (see interlock.ext.deps)
    packages = ["humanize>=4"]        # Python packages `ext install` puts in its own folder
    interlock = ">=0.1"               # Interlock versions it works with

``guards`` is how an extension says "if I cannot load, these events must not
run unguarded": when it fails to load, is disabled by a changed pin or not
yet approved, a placeholder hook fails closed on each of them.

A :class:`Pin` records what was approved: the content digest (sha256 over
every file's relative path and bytes), and where it came from (folder path,
git URL and commit, or package distribution, version and wheel hash). An
installed extension whose content no longer matches its pin does not load
until it is approved again.

:class:`PinStore` is deliberately small (get, put, remove, all). The default
is :class:`TrustPinStore`: pins live in the hooks' consent store
(:class:`~interlock.config.trust.TrustStore`, in the state dir), under the same lock
and atomic writes as hook approvals. :class:`FilePinStore` (one file per pin)
is what earlier versions used; its pins are copied into the consent store the
first time they are read. Pins never live inside a project: a repository must not
be able to ship its own approval.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import time
import tomllib
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from importlib.metadata import Distribution
from pathlib import Path
from typing import Any, Protocol

from interlock.config.drift import real_walk
from interlock.config.trust import TrustStore
from interlock.engine.catalog import BY_NAME
from interlock.engine.errors import ConfigError
from interlock.engine.logs import logger
from interlock.ext.deps import Requirement, parse_requirement, parse_specifier

log = logger("interlock.extensions")

MANIFEST = "extension.toml"
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_\-]{0,63}$")
_IGNORED_DIRS = frozenset({"__pycache__", ".git", ".hg", ".svn", ".mypy_cache",
                           ".pytest_cache", ".ruff_cache"})


@dataclass(frozen=True, slots=True)
class Manifest:
    name: str
    path: Path
    """The extension's folder."""
    module: str = "extension"
    description: str = ""
    version: str = ""
    guards: tuple[str, ...] = ()
    enabled: bool = True
    requires: tuple[Requirement, ...] = ()
    """Other extensions this one needs loaded first."""
    packages: tuple[Requirement, ...] = ()
    """Python packages it imports (interlock.ext.deps)."""
    interlock: str = ""
    """A PEP 440 specifier on Interlock's version ("" for any)."""

    def module_file(self) -> Path:
        pkg = self.path / self.module / "__init__.py"
        if pkg.is_file():
            return pkg
        return self.path / f"{self.module}.py"


def read_manifest(folder: Path) -> Manifest:
    file = folder / MANIFEST
    where = str(file)
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError("no extension.toml", file=where,
                          fix="add extension.toml with at least name = \"...\"") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML: {exc}", file=where) from None
    except (OSError, UnicodeDecodeError) as exc:  # a folder, unreadable, not UTF-8
        raise ConfigError(f"cannot be read: {exc}", file=where) from None
    known = {"name", "description", "version", "module", "guards", "enabled", "requires",
             "packages", "interlock"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"unknown field(s) {unknown}", file=where, field=unknown[0],
                          fix=f"known fields: {', '.join(sorted(known))}")
    name = data.get("name")
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise ConfigError(f"name {name!r} is not a valid extension name", file=where,
                          field="name", fix="lower-case letters, digits, _ and -")
    module = data.get("module", "extension")
    if not isinstance(module, str) or not module.isidentifier():
        raise ConfigError(f"module {module!r} is not a Python module name", file=where,
                          field="module", fix="the module's file name without .py")
    guards = data.get("guards", [])
    if not isinstance(guards, list) or not all(isinstance(g, str) for g in guards):
        raise ConfigError("guards must be a list of event names", file=where, field="guards",
                          fix='e.g. guards = ["before_tool_call"]')
    for g in guards:
        if g not in BY_NAME:
            import difflib

            close = difflib.get_close_matches(g, list(BY_NAME), n=1)
            raise ConfigError(f"unknown event {g!r}", file=where, field="guards",
                              fix=f"did you mean {close[0]!r}?" if close
                              else "run `interlock events` for the list")
    lists = {}
    for key in ("requires", "packages"):
        items = data.get(key, [])
        if not isinstance(items, list):
            raise ConfigError(f"{key} must be a list of requirement strings", file=where,
                              field=key, fix=f'e.g. {key} = ["name>=1.0"]')
        lists[key] = tuple(parse_requirement(item, file=where, field=key) for item in items)
    if any(r.name == name for r in lists["requires"]):
        raise ConfigError(f"extension {name!r} requires itself", file=where, field="requires",
                          fix="remove it from requires")
    interlock = data.get("interlock", "")
    manifest = Manifest(name=name, path=folder, module=module,
                        description=str(data.get("description", "")),
                        version=str(data.get("version", "")), guards=tuple(guards),
                        enabled=bool(data.get("enabled", True)),
                        requires=lists["requires"], packages=lists["packages"],
                        interlock=parse_specifier(interlock, file=where, field="interlock")
                        if interlock else "")
    if not manifest.module_file().is_file():
        raise ConfigError(f"module {module!r} not found ({module}.py or {module}/__init__.py)",
                          file=where, field="module", fix="create it, or set module = ...")
    return manifest


def _files(folder: Path) -> Iterable[Path]:
    """Every file and symlinked folder under ``folder``, through symlinked folders
    (each real folder once), caches and VCS folders left out."""
    for root, dirs, files in real_walk(folder, _IGNORED_DIRS):
        for name in dirs:
            if os.path.islink(os.path.join(root, name)):
                yield Path(root) / name  # where it points is part of what loads
        # A .pyc outside __pycache__ is a module Python imports without its source.
        for name in sorted(files):
            yield Path(root) / name


def folder_digest(folder: Path) -> str:
    """sha256 over every file's relative path and bytes (caches and VCS dirs excluded),
    and where each symlink points; a linked file's bytes count as well."""
    h = hashlib.sha256()
    for file in _files(folder):
        rel = file.relative_to(folder).as_posix()
        h.update(rel.encode() + b"\0")
        if file.is_symlink():
            h.update(b"link:" + os.readlink(file).encode() + b"\0")
        if file.is_file():
            h.update(hashlib.sha256(file.read_bytes()).digest())
    return "sha256:" + h.hexdigest()


def distribution_digest(dist: Distribution) -> str:
    """sha256 over an installed distribution's files (bytecode and install records excluded)."""
    h = hashlib.sha256()
    skip = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}
    for f in sorted(dist.files or [], key=str):
        if f.name in skip or f.suffix in (".pyc", ".pyo") or "__pycache__" in f.parts:
            continue
        path = Path(str(dist.locate_file(f)))
        if not path.is_file():
            continue
        h.update(str(f).encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return "sha256:" + h.hexdigest()


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 16), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


@dataclass
class Pin:
    """What was approved for one extension."""

    name: str
    kind: str
    """folder | git | package | project | entry_point"""
    source: str
    """Where it was installed from (path, URL, package spec)."""
    digest: str = ""
    """Content digest at approval ('' for entry points nobody installed through us)."""
    commit: str = ""
    """git: the commit it was cloned at."""
    dist: str = ""
    """package: the distribution name."""
    version: str = ""
    artifact_sha256: str = ""
    """package: hash of the wheel/sdist file it was installed from, when it was a file."""
    path: str = ""
    """Folder it lives in (folder, git, project)."""
    guards: list[str] = field(default_factory=list)
    enabled: bool = True
    approved_at: float = field(default_factory=time.time)
    packages_digest: str = ""
    """folder, git: digest of the Python packages installed for it (interlock.ext.deps)."""


class PinStore(Protocol):
    def get(self, key: str) -> Pin | None: ...
    def put(self, key: str, pin: Pin) -> None: ...
    def remove(self, key: str) -> None: ...
    def all(self) -> dict[str, Pin]: ...


class FilePinStore:
    """One ``<key>.pin.json`` per extension in ``directory`` (written atomically)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _file(self, key: str) -> Path:
        safe = re.sub(r"[^A-Za-z0-9_.\-]", "_", key)
        return self.directory / f"{safe}.pin.json"

    def get(self, key: str) -> Pin | None:
        file = self._file(key)
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except ValueError as exc:
            raise ConfigError(f"pin file is not valid JSON: {exc}", file=str(file),
                              fix="remove it and approve the extension again") from None
        try:
            return Pin(**data)
        except TypeError as exc:
            raise ConfigError(f"pin file is malformed: {exc}", file=str(file),
                              fix="remove it and approve the extension again") from None

    def put(self, key: str, pin: Pin) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".pin-", dir=self.directory)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(asdict(pin), fh, indent=2, sort_keys=True)
        os.replace(tmp, self._file(key))

    def remove(self, key: str) -> None:
        try:
            self._file(key).unlink()
        except FileNotFoundError:
            pass

    def all(self) -> dict[str, Pin]:
        out: dict[str, Pin] = {}
        for file in sorted(self.directory.glob("*.pin.json")):
            key = file.name[: -len(".pin.json")]
            pin = self.get(key)
            if pin is not None:
                out[key] = pin
        return out


def project_key(project: Path, name: str) -> str:
    """The pin key of a project extension: tied to the project's absolute path."""
    digest = hashlib.sha256(str(project.resolve()).encode()).hexdigest()[:16]
    return f"project-{digest}-{name}"


def pin_mismatch(pin: Pin, current_digest: str) -> str | None:
    if pin.digest and pin.digest != current_digest:
        return (f"its content changed since it was approved (pinned {pin.digest[:19]}..., "
                f"now {current_digest[:19]}...); review it, then run "
                f"`interlock ext approve {pin.name}`")
    return None


def info(pin: Pin) -> dict[str, Any]:
    return asdict(pin)


class TrustPinStore:
    """Extension pins in the consent store the hooks use (``extension_pins.json``
    in the state dir). ``legacy`` is a folder of ``*.pin.json`` files from a
    FilePinStore: each is copied in on first read, so no approval is lost."""

    def __init__(self, trust: TrustStore, legacy: Path | None = None) -> None:
        self.trust = trust
        self.legacy = FilePinStore(legacy) if legacy is not None else None

    def _pin(self, key: str, raw: Any) -> Pin:
        try:
            return Pin(**raw)
        except TypeError as exc:
            raise ConfigError(f"extension pin {key!r} is malformed: {exc}",
                              file=str(self.trust.pins_path),
                              fix=f"remove the {key!r} entry and approve the extension "
                                  "again (`interlock ext approve NAME`)") from None

    def _migrate(self, key: str) -> Pin | None:
        # The legacy file stays: another process (another state dir) may still
        # need it, and a pin that went missing would let the extension load
        # unchecked. `remove` deletes both.
        if self.legacy is None:
            return None
        pin = self.legacy.get(key)
        if pin is not None:
            try:
                self.put(key, pin)
            except OSError as exc:  # a read-only state dir: the old pin still counts
                log.warning("extension pin %r not copied into %s: %s", key,
                            self.trust.pins_path, exc)
        return pin

    def get(self, key: str) -> Pin | None:
        raw = self.trust.pins().get(key)
        if raw is None:
            return self._migrate(key)
        return self._pin(key, raw)

    def put(self, key: str, pin: Pin) -> None:
        self.trust.put_pin(key, asdict(pin))

    def remove(self, key: str) -> None:
        self.trust.remove_pin(key)
        if self.legacy is not None:
            self.legacy.remove(key)

    def all(self) -> dict[str, Pin]:
        found = {key: self._pin(key, raw) for key, raw in self.trust.pins().items()}
        if self.legacy is not None and self.legacy.directory.is_dir():
            for key in self.legacy.all():
                if key not in found:
                    pin = self._migrate(key)
                    if pin is not None:
                        found[key] = pin
        return dict(sorted(found.items()))


def default_pins(home: Path) -> TrustPinStore:
    """The pin store of a user dir: its state dir's consent store."""
    from interlock.store.paths import state_dir

    return TrustPinStore(TrustStore(state_dir(home)), legacy=home / "extensions")
