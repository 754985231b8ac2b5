"""What a hook references, what it needs, and the digest approvals pin to.

Relative paths resolve from the folder that declared the hook. The digest
covers the whole normalised definition plus the content of every file it
references; for a hook folder (HOOK.md, HOOK.yaml) that is the whole folder,
so editing any script in it needs approval again.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from interlock.config.drift import PinSet, read
from interlock.config.model import HookDef
from interlock.config.validate import KNOWN_OS
from interlock.engine.sha import sha256

_PLAIN_WORD = re.compile(r"^[A-Za-z0-9_./+\-~]+$")
_SKIP_DIRS = {"__pycache__", ".git", ".mypy_cache", ".pytest_cache", "node_modules", ".venv"}
_MAX_FILES = 2000


def _relative_path(word: str) -> bool:
    return word.startswith(("./", "../"))


def resolve_command(command: str | list[str], folder: Path) -> tuple[str | list[str], list[Path]]:
    """Resolve ``./x`` words against ``folder``; return the command and the files it names.

    Only plain words (no quotes or shell syntax) are rewritten, and they are
    quoted back, so the shell sees exactly one word where there was one.
    """
    files: list[Path] = []
    if isinstance(command, list):
        out: list[str] = []
        for i, word in enumerate(command):
            if _relative_path(word) and (i == 0 or (folder / word).exists()):
                path = (folder / word).resolve()
                out.append(str(path))
                files.append(path)
            else:
                out.append(word)
                if os.path.isabs(word) and os.path.isfile(word):
                    files.append(Path(word))
        return out, files
    pieces: list[str] = []
    pos = 0
    first = True
    for m in re.finditer(r"\S+", command):
        word = m.group(0)
        pieces.append(command[pos:m.start()])
        pos = m.end()
        rewritten = word
        if _PLAIN_WORD.match(word):
            if _relative_path(word) and (first or (folder / word).exists()):
                path = (folder / word).resolve()
                rewritten = shlex.quote(str(path))
                files.append(path)
            elif os.path.isabs(word) and os.path.isfile(word):
                files.append(Path(word))
        pieces.append(rewritten)
        first = False
    pieces.append(command[pos:])
    return "".join(pieces), files


def folder_files(folder: Path) -> list[Path]:
    out: list[Path] = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in sorted(names):
            if name.endswith((".pyc", ".pyo")):
                continue
            out.append(Path(root) / name)
            if len(out) >= _MAX_FILES:
                return out
    return out


def digest(definition: dict[str, Any], files: Iterable[Path], base: Path | None = None) -> str:
    """sha256 over the normalised definition and each file's path, mode and content."""
    return digest_and_pins(definition, files, base)[0]


def digest_and_pins(definition: dict[str, Any], files: Iterable[Path],
                    base: Path | None = None) -> tuple[str, PinSet]:
    """The digest, and the pins checked before each run, from one read of each file.

    One read: a file that changes between the two is then either in the
    digest (not approved) or caught by the next check.
    """
    h = sha256()
    h.update(json.dumps(definition, sort_keys=True, default=str).encode())
    reads = []
    for path in sorted(set(files)):
        label = str(path.relative_to(base)) if base is not None and path.is_relative_to(base) \
            else str(path)
        h.update(b"\0file\0" + label.encode())
        r = read(path)
        reads.append(r)
        if r.data is None:
            h.update(b"\0missing")
            continue
        h.update(r.mode_bit)
        if r.link is not None:  # where a link points is part of what runs
            h.update(b"\0link\0" + r.link.encode(errors="surrogateescape"))
        h.update(r.data)
    return h.hexdigest(), PinSet(reads)


def current_os() -> str:
    plat = sys.platform
    if plat.startswith("linux"):
        return "linux"
    if plat == "darwin":
        return "darwin"
    if plat in ("win32", "cygwin"):
        return "windows"
    for name in ("freebsd", "openbsd", "netbsd"):
        if plat.startswith(name):
            return name
    return plat


def unmet_requirements(d: HookDef, env: dict[str, str] | None = None) -> list[str]:
    """Why the hook is ineligible here (empty when every requirement is met)."""
    env = dict(os.environ) if env is None else env
    why: list[str] = []
    if d.requires.os:
        wanted = {KNOWN_OS.get(o.lower(), o.lower()) for o in d.requires.os}
        here = current_os()
        if here not in wanted:
            why.append(f"needs OS {' or '.join(sorted(wanted))}, this is {here}")
    for binary in d.requires.bins:
        import shutil  # few hooks require programs (docs/one-policy.md, Speed)

        if shutil.which(binary) is None:
            why.append(f"needs program {binary!r} on PATH")
    for var in d.requires.env:
        if not env.get(var):
            why.append(f"needs environment variable {var}")
    return why
