"""Hooks that ship with Interlock, off until enabled.

Each lives in its own folder here with a ``HOOK.md`` (TOML front matter
between ``+++`` lines: name, description, events, matcher, priority,
modifies, on_error, ``handler = "handler.py"``, ``enabled = false``; the body
is its documentation) and a ``handler.py`` defining ``handle(event)`` and,
optionally, ``configure(options)``. The policy logic itself lives in
:mod:`interlock.policies`, so it is testable without any loader.

The registry (docs/configuration.md) discovers these folders like any other hook folder;
:func:`manifests` and :func:`load_handler` are the small helpers it and the
tests share.
"""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).parent


def split_front_matter(text: str, *, file: str = "HOOK.md") -> tuple[dict[str, Any], str]:
    """(TOML front matter, body) of a HOOK.md that starts with ``+++``."""
    from interlock.engine.errors import ConfigError

    lines = text.splitlines()
    if not lines or lines[0].strip() != "+++":
        raise ConfigError("no TOML front matter", file=file, line=1,
                          fix="start the file with a line holding only +++")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "+++")
    except StopIteration:
        raise ConfigError("front matter is not closed", file=file,
                          fix="end the front matter with a line holding only +++") from None
    try:
        meta = tomllib.loads("\n".join(lines[1:end]))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML: {exc}", file=file) from None
    return meta, "\n".join(lines[end + 1:])


def manifests() -> dict[str, tuple[Path, dict[str, Any]]]:
    """Hook name -> (its folder, its front matter), for every bundled hook."""
    out: dict[str, tuple[Path, dict[str, Any]]] = {}
    for hook_md in sorted(ROOT.glob("*/HOOK.md")):
        meta, _body = split_front_matter(hook_md.read_text(encoding="utf-8"),
                                         file=str(hook_md))
        out[str(meta["name"])] = (hook_md.parent, meta)
    return out


def load_handler(name: str) -> ModuleType:
    """The handler module of bundled hook ``name`` (its HOOK.md name)."""
    folder, _meta = manifests()[name]
    return importlib.import_module(f"{__name__}.{folder.name}.handler")
