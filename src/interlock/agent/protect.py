"""The engine's protected paths, enforced by the agent itself.

``.interlock/`` of the project, the user, managed and state dirs, the stores
and every file pinned by an approval hold the policy that guards the agent
(docs/agent.md, Protected paths). The folders are
:func:`interlock.store.paths.protected_paths`, the same list the registry and the
CLI use, so the agent cannot drift from where policy actually lives. The file
tools may not write there (nor read the state dir's secrets), and a terminal
command that names such a path is refused, whatever the hooks say. That scan
of the command's words is an early, readable refusal: the floor under it is
the OS sandbox of :mod:`interlock.agent.sandbox`.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from interlock.store.paths import protected_paths, secret_paths

_SPLIT = re.compile(r"[=:,]")
_REDIRECT = re.compile(r"^(?:\d*>>?|<|&>|\d*>&)")


class ProtectedPaths:
    """Absolute roots the agent's own tools may not write or name, and the
    secret ones among them they may not read either."""

    def __init__(self, roots: Iterable[str | Path], secrets: Iterable[str | Path] = (),
                 pinned: Callable[[], Iterable[Path]] | None = None) -> None:
        self.fixed = tuple(dict.fromkeys(_real(r) for r in roots))
        self.secrets = tuple(dict.fromkeys(_real(r) for r in secrets))
        self.pinned = pinned
        """Files pinned by an approval, read at every check (a reload may pin more)."""

    @property
    def roots(self) -> tuple[Path, ...]:
        if self.pinned is None:
            return self.fixed
        return tuple(dict.fromkeys([*self.fixed, *(_real(p) for p in self.pinned())]))

    @classmethod
    def default(cls, project_root: str | Path, extra: Iterable[str | Path] = (),
                pinned: Callable[[], Iterable[Path]] | None = None) -> ProtectedPaths:
        """The engine's folders, ``extra``, what Interlock runs from when it is installed
        (editing it would change the engine: :func:`engine_install`), and ``pinned``."""
        root = _real(project_root)
        package = _real(Path(__file__).parent.parent)
        # Developing Interlock itself with the agent edits its source; an installed
        # copy (site-packages, even in the project's .venv) is the engine.
        mine = package.is_relative_to(root) and "site-packages" not in package.parts
        own = [] if mine else [engine_install(package, Path(sys.prefix), Path(sys.base_prefix))]
        return cls([*protected_paths(Path(project_root)), *own, *git_controls(root), *extra],
                   secret_paths(), pinned)

    def root_of(self, path: str, cwd: str | Path,
                roots: tuple[Path, ...] | None = None) -> Path | None:
        """The protected root ``path`` lands in, or None."""
        roots = self.roots if roots is None else roots
        for resolved in self._candidates(path, cwd):
            for root in roots:
                if resolved == root or resolved.is_relative_to(root):
                    return root
        return None

    def check_read(self, path: str, cwd: str | Path) -> str | None:
        """The reason reading ``path`` is refused (it holds the state dir's secrets:
        tokens, approvals, stores), or None."""
        for resolved in self._candidates(path, cwd):
            if resolved.parts[:2] == ("/", "proc") and resolved.name == "environ":
                return f"{path!r} is a process environment (API keys live there)"
            for root in self.secrets:
                if resolved == root or resolved.is_relative_to(root):
                    return (f"{path!r} is inside {str(root)!r}, which holds Interlock's "
                            "tokens, approvals and stores")
        return None

    @staticmethod
    def _candidates(path: str, cwd: str | Path) -> list[Path]:
        """Where ``path`` can land: as the file tools resolve it (``~`` only, so
        ``$HOME/..`` is a folder named ``$HOME``), and as a shell would, with
        ``$VARS`` expanded. Either one inside a protected root refuses it."""
        literal = os.path.expanduser(path)
        found = [_resolved(Path(cwd) / literal)]
        expanded = os.path.expandvars(literal)
        if expanded != literal:
            found.append(_resolved(Path(cwd) / expanded))
        return found

    def check_path(self, path: str, cwd: str | Path,
                   roots: tuple[Path, ...] | None = None) -> str | None:
        """The reason ``path`` is protected, or None."""
        root = self.root_of(path, cwd, roots)
        return None if root is None else f"{path!r} is inside the protected path {str(root)!r}"

    def check_command(self, command: str, cwd: str | Path) -> str | None:
        """The reason a terminal command is refused, or None."""
        roots = self.roots
        try:
            lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>")
            lexer.whitespace_split = True
            words = list(lexer)
        except ValueError:
            words = command.split()
        for word in words:
            word = _REDIRECT.sub("", word)
            for part in (word, *_SPLIT.split(word)):
                if not part or part.startswith("-"):
                    continue
                if ".interlock" in Path(part).parts:
                    return f"the command names {part!r}, a protected policy directory"
                reason = self.check_path(part, cwd, roots)
                if reason is not None:
                    return f"the command names {reason}"
        for root in roots:
            if str(root) in command:
                return f"the command names the protected path {str(root)!r}"
        return None


def engine_install(package: Path, prefix: Path, base_prefix: Path) -> Path:
    """What the engine runs from: its venv when it runs in one, else the
    site-packages folder it is installed in, else (an editable install) its package.

    Not only ``interlock/``: a ``.pth`` file or a ``sitecustomize`` planted in
    site-packages, a changed dependency (``yaml``, ``msgspec``) or a venv's
    ``pyvenv.cfg`` runs in the next ``interlock`` process, outside the sandbox.
    """
    prefix = _real(prefix)
    if prefix != _real(base_prefix) and package.is_relative_to(prefix):
        return prefix
    for level in package.parents:
        if level.name in ("site-packages", "dist-packages"):
            return level
    return package


def git_controls(root: Path) -> list[Path]:
    """The files that make git run commands, of the repository ``root`` is in.

    Interlock runs git outside the sandbox (the checkpoint policy's ``git add``
    before every writing tool): a ``filter.<x>.clean``, ``core.fsmonitor`` or
    hook the agent planted there would run unconfined. A ``.git`` file (a
    worktree) is protected itself, so it cannot be pointed at another folder.
    """
    for level in (root, *root.parents):
        dot = level / ".git"
        if dot.is_file():
            return [dot]
        if dot.is_dir():
            return [dot / "config", dot / "config.worktree", dot / "hooks"]
    return []


def _resolved(path: Path) -> Path:
    """``path`` with its symlinks resolved; where a link cannot be read
    (``/proc/1/root`` of another user's process), as written, normalized. The
    write that follows checks the file it actually opened."""
    try:
        return Path(os.path.realpath(path))
    except OSError:
        return Path(os.path.normpath(path))


def _real(path: str | Path) -> Path:
    return Path(os.path.realpath(Path(path).expanduser()))
