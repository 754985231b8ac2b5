"""Discovery: find every config file and hook folder in each place, in order.

Places, strongest first: managed, project, user, bundled. Each holds an
optional ``config.toml`` (or ``config.yaml``) and a ``hooks/`` folder of hook
folders (``HOOK.md`` with front matter, or ``HOOK.yaml``, plus their scripts
or ``handler.py``). Bundled hooks are folders directly under the package's
``bundled/`` folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from interlock.config.drift import content
from interlock.config.mcp_servers import McpServer, to_mcp_server
from interlock.config.model import HookDef, PermissionRule
from interlock.config.parse import (
    Locator,
    read_config_text,
    read_yaml,
    split_front_matter,
    to_doc,
    to_hookdef,
    to_permission,
)
from interlock.config.refs import folder_files
from interlock.config.validate import check_hook
from interlock.engine.errors import ConfigError
from interlock.engine.hooks import Source
from interlock.engine.sha import sha256

CONFIG_NAMES = ("config.toml", "config.yaml", "config.yml")
HOOK_FILES = ("HOOK.md", "HOOK.yaml", "HOOK.yml")


class Place(msgspec.Struct, frozen=True):
    source: Source
    root: Path
    """The folder holding config.toml and hooks/ (for bundled: the hook folders)."""
    config: Path | None = None
    """An explicit config file instead of root/config.toml."""

    def config_files(self) -> list[Path]:
        if self.config is not None:
            return [self.config]
        if self.source is Source.BUNDLED:
            return []
        return [self.root / n for n in CONFIG_NAMES if (self.root / n).is_file()]

    def hook_folders(self) -> list[Path]:
        base = self.root if self.source is Source.BUNDLED else self.root / "hooks"
        if not base.is_dir():
            return []
        return sorted(p for p in base.iterdir()
                      if p.is_dir() and any((p / n).is_file() for n in HOOK_FILES))


class Declared(msgspec.Struct):
    """One hook as declared, before trust, requirements and shadowing are applied."""

    definition: HookDef
    events: tuple[str, ...]
    source: Source
    file: Path
    line: int | None
    folder: Path
    """Relative paths resolve from here."""
    hook_dir: Path | None = None
    """The hook's own folder (HOOK.md / HOOK.yaml), hashed whole."""
    docs: str = ""

    @property
    def qualified_name(self) -> str:
        return f"{self.source.label}:{self.definition.name}"


class Reference(msgspec.Struct, frozen=True):
    """A config entry that only names a hook declared elsewhere, to turn it on or off."""

    name: str
    enabled: bool | None
    source: Source
    file: Path
    line: int | None
    options: dict[str, Any] | None = None
    """Options for the hook's ``configure`` (None: leave them as declared)."""


class Discovered(msgspec.Struct):
    hooks: list[Declared] = msgspec.field(default_factory=list)
    references: list[Reference] = msgspec.field(default_factory=list)
    permissions: list[PermissionRule] = msgspec.field(default_factory=list)
    mcp_servers: list[McpServer] = msgspec.field(default_factory=list)
    """Every place's ``[[mcp_servers]]`` (config/mcp_servers.py)."""
    sandbox_required: bool = False
    """Some config file says ``sandbox = "required"``."""
    sandbox_offline: bool = False
    """Some config file says ``sandbox_network = false``."""
    files: dict[str, str] = msgspec.field(default_factory=dict)
    """Every file read or hashed -> sha256 of its content (to tell what changed)."""
    sources: dict[str, Source] = msgspec.field(default_factory=dict)
    """Every file -> the place it belongs to."""
    dirs: list[Path] = msgspec.field(default_factory=list)
    """Folders to watch."""


def _fingerprint(path: Path) -> str:
    try:
        return sha256(content(path)).hexdigest()  # never waits on a FIFO
    except OSError:
        return "missing"


def _note(found: Discovered, path: Path, source: Source) -> None:
    found.files[str(path)] = _fingerprint(path)
    found.sources[str(path)] = source


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8 text ({exc.reason})", file=str(path),
                          fix="save the file as UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", file=str(path),
                          fix="check the file exists and is readable") from None


def _load_config(place: Place, path: Path, found: Discovered) -> None:
    data, locate = read_config_text(_read(path), path)
    data = {k: v for k, v in data.items() if v is not None}  # `hooks:` with nothing under it
    if isinstance(data.get("hooks"), dict):
        raise ConfigError("hooks must be a list of hooks, not a table of events",
                          file=str(path), line=locate(("hooks",)), field="hooks",
                          fix="write [[hooks]] tables (YAML: `- name: ...` items); to bring in "
                              "another agent's config run `interlock hooks import --from "
                              "claude|codex|gemini|hermes|moltis PATH`")
    doc = to_doc(data, path, locate)
    seen: dict[str, int | None] = {}
    for i, raw in enumerate(doc.hooks):
        d = to_hookdef(raw, path, ("hooks", i), locate)
        line = locate(("hooks", i))
        if d.name in seen:
            raise ConfigError(f"hook {d.name!r} is declared twice (first on line {seen[d.name]})",
                              file=str(path), line=line, field="name",
                              fix="give each hook its own name")
        seen[d.name] = line
        if d.is_reference():
            _check_reference(d, path, ("hooks", i), locate)
            found.references.append(Reference(
                d.name, d.enabled, place.source, path,
                locate(("hooks", i, "options" if d.enabled is None else "enabled")),
                options=d.options or None))
            continue
        events = check_hook(d, path, ("hooks", i), locate)
        found.hooks.append(Declared(d, events, place.source, path, line, path.parent))
    # The strictest wins: a place may tighten the sandbox, never loosen it.
    found.sandbox_required |= doc.sandbox == "required"
    found.sandbox_offline |= doc.sandbox_network is False
    for i, raw in enumerate(doc.permissions):
        found.permissions.append(
            to_permission(raw, path, ("permissions", i), locate, f"{place.source.label}:{path}"))
    # A project's servers start in the project root; others beside their config file.
    root = place.root.parent if place.source is Source.PROJECT else path.parent
    for i, raw in enumerate(doc.mcp_servers):
        found.mcp_servers.append(
            to_mcp_server(raw, path, ("mcp_servers", i), locate, place.source, root))


def _check_reference(d: HookDef, path: Path, base: tuple[str | int, ...],
                     locate: Locator) -> None:
    if d.enabled is None and not d.options:
        raise ConfigError(f"hook {d.name!r} has no command, handler or events", file=str(path),
                          line=locate(base), field="command",
                          fix="declare the hook (events and command or handler), or write only "
                              "name and enabled = true (and options) to turn on a hook "
                              "declared elsewhere")
    extra = {f for f in HookDef.__struct_fields__
             if f not in ("name", "enabled", "options") and getattr(d, f) != getattr(_BLANK, f)}
    if extra:
        field = sorted(extra)[0]
        raise ConfigError(f"hook {d.name!r} only names a hook declared elsewhere, so it cannot "
                          f"set {field}", file=str(path), line=locate((*base, field)),
                          field=field, fix="declare a hook of your own instead (with events and "
                                           "a command or handler)")


_BLANK = HookDef(name="_")


def _load_folder(place: Place, folder: Path, found: Discovered) -> None:
    for name in HOOK_FILES:
        path = folder / name
        if path.is_file():
            break
    else:  # pragma: no cover - hook_folders() only lists folders holding one
        return
    text = _read(path)
    body = ""
    if name == "HOOK.md":
        data, locate, body = split_front_matter(text, path)
    else:
        data, locate = read_yaml(text, path)
    if "handler" not in data and "command" not in data and (folder / "handler.py").is_file():
        data = {**data, "handler": "handler.py"}
    d = to_hookdef(data, path, (), locate, default_name=folder.name)
    if d.is_reference():
        raise ConfigError(f"hook {d.name!r} has no command or handler", file=str(path), line=1,
                          field="command", fix='add command = "./run.sh" or handler.py')
    events = check_hook(d, path, (), locate)
    if d.handler is not None and not (folder / d.handler).is_file():
        raise ConfigError(f"handler file {d.handler!r} does not exist", file=str(path),
                          line=locate(("handler",)), field="handler",
                          fix=f"create {folder / d.handler} defining handle(event)")
    found.hooks.append(Declared(d, events, place.source, path, 1, folder, folder, body))
    for f in folder_files(folder):
        _note(found, f, place.source)


def discover(places: list[Place]) -> Discovered:
    """Read every place; raises the first ConfigError (with file, line, field, fix)."""
    found = Discovered()
    for place in places:
        files = place.config_files()
        if len([f for f in files if f.name.startswith("config.")]) > 1 and place.config is None:
            raise ConfigError(f"both {files[0].name} and {files[1].name} exist",
                              file=str(files[1]), fix="keep one config file per folder")
        for path in files:
            _note(found, path, place.source)
            _load_config(place, path, found)
        for folder in place.hook_folders():
            _load_folder(place, folder, found)
        if place.root.is_dir():
            found.dirs.append(place.root)
        if place.config is not None:
            found.dirs.append(place.config.parent)
        names: dict[str, Declared] = {}
        for decl in found.hooks:
            if decl.source is not place.source:
                continue
            other = names.get(decl.definition.name)
            if other is not None:
                raise ConfigError(
                    f"hook {decl.definition.name!r} is declared twice in {place.source.label} "
                    f"config (also in {other.file})", file=str(decl.file), line=decl.line,
                    field="name", fix="rename one of them")
            names[decl.definition.name] = decl
    return found
