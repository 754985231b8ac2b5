"""Confined readers: where the read tools of a stranger's agent may look.

A chat-gateway sender holds a chat token and nothing else; a read tool needs no
permission rule, so without a scope such a sender could read what the server
can (``/proc/self/environ``, other users' keys, other senders' transcripts).
A :class:`ReadScope` confines read_file, list_dir and grep to its roots (the
project root for the gateway) and refuses the secret-bearing places inside
or outside them (docs/agent.md, Confined readers). An operator widens it with
an ``allow`` ``[[permissions]]`` rule on the read tool whose pattern matches
the resolved absolute path (``tool = "read_file"``, ``pattern =
"/srv/docs/*"``); a rule with the pattern ``*`` does not widen it.

The state dir and ``/proc/*/environ`` are refused to every agent, confined or
not (:meth:`interlock.agent.protect.ProtectedPaths.check_read`).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

HOME_SECRETS = (".ssh", ".aws", ".gnupg", ".kube", ".docker", ".netrc", ".pgpass",
                ".git-credentials", ".config/gcloud", ".config/gh", ".azure")
"""Places under a home folder that hold credentials."""
ENV_EXAMPLES = frozenset({".env.example", ".env.sample", ".env.template", ".env.dist"})


def is_env_file(name: str) -> bool:
    """``.env``, ``.env.local``, ``.envrc``...; not ``.env.example`` and its kind."""
    return name.startswith(".env") and name not in ENV_EXAMPLES


def home_secrets() -> list[Path]:
    """The credential places of this user's home that exist: hidden from a
    confined agent's sandboxed commands too."""
    home = Path(os.path.realpath(Path.home()))
    return [home / place for place in HOME_SECRETS if (home / place).exists()]


@dataclass(frozen=True, slots=True)
class ReadScope:
    roots: tuple[Path, ...]
    """Folders the read tools may reach (resolved)."""

    @classmethod
    def of(cls, roots: Iterable[str | Path]) -> ReadScope:
        return cls(tuple(Path(os.path.realpath(r)) for r in roots))

    def secret(self, resolved: Path) -> str | None:
        """Why ``resolved`` is a secret-bearing place, or None."""
        if is_env_file(resolved.name):
            return f"{resolved.name} files hold credentials"
        homes = {Path(os.path.realpath(Path.home()))}
        for part_index, part in enumerate(resolved.parts):
            # any user's home: /home/<user>/.ssh, /root/.ssh
            if part == "home" and part_index == 1 and len(resolved.parts) > 2:
                homes.add(Path(*resolved.parts[:3]))
        for home in homes:
            for place in HOME_SECRETS:
                where = home / place
                if resolved == where or resolved.is_relative_to(where):
                    return f"{where} holds credentials"
        if resolved.parts[:2] == ("/", "proc"):
            return "/proc shows other processes' environments and memory"
        return None

    def check(self, path: str, cwd: str | Path, allowed: Iterable[str]) -> str | None:
        """The reason a stranger may not read ``path`` (from ``cwd``), or None.
        ``allowed``: patterns of the allow rules that name this tool."""
        resolved = Path(os.path.realpath(Path(cwd) / os.path.expanduser(path)))
        if any(fnmatch.fnmatchcase(str(resolved), p) for p in allowed):
            return None
        secret = self.secret(resolved)
        if secret is not None:
            return f"{path!r} is refused to chat senders: {secret}"
        if not any(resolved == r or resolved.is_relative_to(r) for r in self.roots):
            return (f"{path!r} is outside the folders chat senders may read "
                    f"({', '.join(map(str, self.roots))}); an operator can widen this with "
                    "an allow [[permissions]] rule whose pattern matches the path")
        return None
