"""The engine's protected paths, enforced by the agent itself.

``.interlock/`` of the project, ``$INTERLOCK_HOME`` and the state directory
hold the policy that guards the agent (DESIGN.md, Protected paths). The list
is :func:`interlock.paths.protected_paths`, the same one the registry and the
CLI use, so the agent cannot drift from where policy actually lives. The file
tools may not write there, and a terminal command that names such a path is
refused, whatever the hooks say. Terminal checking is a best-effort scan of
the command's words (a shell can build a path at run time); it is a floor under
hook policy, not a sandbox.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable
from pathlib import Path

from interlock.paths import protected_paths

_SPLIT = re.compile(r"[=:,]")
_REDIRECT = re.compile(r"^(?:\d*>>?|<|&>|\d*>&)")


class ProtectedPaths:
    """Absolute roots the agent's own tools may not write or name."""

    def __init__(self, roots: Iterable[str | Path]) -> None:
        self.roots = tuple(dict.fromkeys(Path(os.path.realpath(Path(r).expanduser()))
                                         for r in roots))

    @classmethod
    def default(cls, project_root: str | Path, extra: Iterable[str | Path] = ()
                ) -> ProtectedPaths:
        return cls([*protected_paths(Path(project_root)), *extra])

    @staticmethod
    def _candidates(path: str, cwd: str | Path) -> list[Path]:
        """Where ``path`` can land: as the file tools resolve it (``~`` only, so
        ``$HOME/..`` is a folder named ``$HOME``), and as a shell would, with
        ``$VARS`` expanded. Either one inside a protected root refuses it."""
        literal = os.path.expanduser(path)
        found = [Path(os.path.realpath(Path(cwd) / literal))]
        expanded = os.path.expandvars(literal)
        if expanded != literal:
            found.append(Path(os.path.realpath(Path(cwd) / expanded)))
        return found

    def check_path(self, path: str, cwd: str | Path) -> str | None:
        """The reason ``path`` is protected, or None."""
        for resolved in self._candidates(path, cwd):
            for root in self.roots:
                if resolved == root or resolved.is_relative_to(root):
                    return f"{path!r} is inside the protected path {str(root)!r}"
        return None

    def check_command(self, command: str, cwd: str | Path) -> str | None:
        """The reason a terminal command is refused, or None."""
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
                reason = self.check_path(part, cwd)
                if reason is not None:
                    return f"the command names {reason}"
        lowered = command
        for root in self.roots:
            if str(root) in lowered:
                return f"the command names the protected path {str(root)!r}"
        return None
