"""What the destructive-command guard's rules share: its options, its findings,
and what counts as a path or file it protects (docs/guard.md).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from interlock.shell import words
from interlock.shell.output import UNKNOWN_OUTPUT

CATEGORIES: dict[str, str] = {
    # category -> what it blocks (docs/guard.md has the table)
    "rm-critical": "recursive delete of /, a home, a system directory or everything in one",
    "find-delete": "find -delete / -exec rm (or find | xargs rm) over such a directory",
    "mv-critical": "moving /, a home or a system directory away",
    "chmod-critical": "chmod/chown/chgrp -R of such a directory",
    "disk": "writing, wiping, formatting or repartitioning a block device",
    "critical-file": "truncating, overwriting or deleting a critical file",
    "rsync-delete": "rsync --delete into a home, / or a system directory",
    "kill-all": "killing every process (kill -9 -1, killall5)",
    "fork-bomb": "fork bombs, in any language",
    "git-force-push": "force-push, mirror or delete of a protected branch",
    "download-exec": "running what was just downloaded",
    "pipe-to-interpreter": "text the guard cannot read fed to a shell or interpreter as code",
    "interpreter": "inline code (python -c, node -e ...) that deletes or runs the above",
    "database": "dropping, truncating or flushing a database through its client",
    "unparseable": "a command that cannot be parsed and mentions something dangerous",
}
SYSTEM_DIRS = frozenset({
    "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32",
    "/opt", "/proc", "/root", "/sbin", "/srv", "/sys", "/usr", "/var", "/usr/bin", "/usr/lib",
    "/usr/local", "/usr/sbin", "/usr/share", "/var/lib", "/Users", "/System", "/Library",
    "/Applications", "/nix", "/snap", "/private", "/run",
})
PROTECTED_BRANCHES = ("main", "master", "release*", "production", "prod")
_HOME_PARENTS = ("/home", "/Users")
_GLOB_ONLY = re.compile(r"[\[\]*?.{},!^]+")
CRITICAL_ETC = frozenset({
    "/etc/passwd", "/etc/shadow", "/etc/group", "/etc/gshadow", "/etc/sudoers", "/etc/fstab",
    "/etc/hosts", "/etc/crypttab", "/etc/hostname", "/etc/resolv.conf", "/etc/environment",
    "/etc/profile", "/etc/bash.bashrc", "/etc/shells", "/etc/login.defs",
    "/etc/ssh/sshd_config", "/etc/ld.so.preload", "/etc/machine-id",
})
CRITICAL_DIRS_OF_FILES = ("/etc/sudoers.d", "/etc/pam.d", "/boot")
CRITICAL_IN_HOME = frozenset({
    ".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zprofile", ".zshenv",
    ".zlogin", ".gitconfig", ".config/fish/config.fish", ".ssh/authorized_keys",
    ".ssh/config", ".ssh/id_rsa", ".ssh/id_ed25519", ".ssh/id_ecdsa", ".ssh/id_dsa",
    ".netrc", ".pgpass",
})
CRITICAL_DIRS_IN_HOME = (".ssh", ".gnupg")


class OptionError(ValueError):
    """An option of the guard is unknown or has the wrong type."""


@dataclass(frozen=True, slots=True)
class Finding:
    """Why a command was judged destructive."""

    category: str
    """One of :data:`CATEGORIES`."""
    detail: str
    """What would happen, with the resolved target."""
    target: str = ""
    """The path, branch, device or database the command acts on ('' when none)."""
    unsure: bool = False
    """True when the guard could not tell and its stance (``when_unsure``) decided."""

    @property
    def rule(self) -> str:
        return self.category

    @property
    def option(self) -> str:
        """The option that would allow it."""
        if self.unsure or self.category == "unparseable":
            return 'when_unsure = "allow"'
        return f"{self.category.replace('-', '_')} = false"

    def __str__(self) -> str:
        return f"{self.category}: {self.detail}"


@dataclass(frozen=True, slots=True)
class GuardOptions:
    """The guard's options (the bundled hook's ``options``, docs/guard.md)."""

    home: str = "/root"
    protected_branches: tuple[str, ...] = PROTECTED_BRANCHES
    disabled: frozenset[str] = frozenset()
    """Categories switched off (``rm_critical = false`` ...)."""
    find_name_filter: bool = True
    """``find ~ -name .DS_Store -delete`` (a literal name under home) is allowed."""
    sql_delete_without_where: bool = True
    """``DELETE FROM t`` with no WHERE counts as a drop."""
    when_unsure: str = "block"
    """``block`` (fail closed) or ``allow`` when the guard cannot tell."""
    current_branch: Callable[[str], str | None] | None = None

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any], *, home: str,
                     current_branch: Callable[[str], str | None] | None = None,
                     ignore: Iterable[str] = ()) -> GuardOptions:
        """Options as written in config; an unknown key or a bad value is an OptionError."""
        disabled: set[str] = set()
        known = {c.replace("-", "_") for c in CATEGORIES} - {"unparseable"}
        kwargs: dict[str, Any] = {}
        for key, value in options.items():
            if key in ignore:
                continue
            if key in known:
                disabled.update([key.replace("_", "-")] if not _bool(key, value) else [])
            elif key in ("find_name_filter", "sql_delete_without_where"):
                kwargs[key] = _bool(key, value)
            elif key == "when_unsure":
                if value not in ("block", "allow"):
                    raise OptionError(f"when_unsure must be \"block\" or \"allow\", not {value!r}")
                kwargs[key] = value
            elif key == "protected_branches":
                if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                    raise OptionError("protected_branches must be a list of globs")
                kwargs[key] = tuple(value)
            elif key != "home":
                raise OptionError(f"unknown option {key!r}; known: "
                                  f"{', '.join(sorted(known | set(_OTHER)))}")
        return cls(home=options.get("home") or home, disabled=frozenset(disabled),
                   current_branch=current_branch, **kwargs)

    def on(self, category: str) -> bool:
        return category not in self.disabled


_OTHER = ("home", "protected_branches", "find_name_filter", "sql_delete_without_where",
          "when_unsure", "tools")


def _bool(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise OptionError(f"option {key!r} must be true or false, not {value!r}")
    return value


@dataclass
class Context:
    """One check's options and what earlier commands in the line did."""

    options: GuardOptions
    written: dict[str, str | None] = field(default_factory=dict)
    """Files written earlier in the command: path -> text, or None when downloaded."""
    depth: int = 0
    """Inline code inside inline code: how deep (bounded)."""
    volatile: list[bool] = field(default_factory=lambda: [False])
    """Set (``[True]``, shared with nested checks) when the verdict read a file, so it
    must not be reused from a cache."""

    @property
    def home(self) -> str:
        return self.options.home

    def finding(self, category: str, detail: str, target: str = "") -> Finding | None:
        if not self.options.on(category):
            return None
        return Finding(category, detail, target)

    def unsure(self, category: str, detail: str, target: str = "") -> Finding | None:
        """A finding the guard is not sure of: its stance decides."""
        if self.options.when_unsure == "allow" or not self.options.on(category):
            return None
        return Finding(category, f"could not tell: {detail}", target, unsure=True)


# -- paths ---------------------------------------------------------------------

def absolute(path: str, home: str, cwd: str) -> str | None:
    """``path`` made absolute and normal (``~`` and ``~user`` expanded); None if it cannot be."""
    if not path or path == UNKNOWN_OUTPUT:
        return None
    # `c="rm -rf ~"; $c` passes a literal `~`: bash would not expand it, but a
    # directory named `~` is rarer than a guard fooled by one.
    path = words.tilde(path, home)
    if not path.startswith("/"):
        if not cwd:
            return None
        path = posixpath.join(cwd, path)
    path = re.sub(r"/+", "/", path)
    return posixpath.normpath(path)


def other_home(path: str, home: str) -> bool:
    """``path`` is a home directory: ours, another user's, or one in the password database."""
    parent = posixpath.dirname(path)
    home_n = posixpath.normpath(home)
    if path == home_n or parent in _HOME_PARENTS:
        return True
    homes_dir = posixpath.dirname(home_n)
    if homes_dir not in ("", "/") and parent == homes_dir:
        return True
    return path in words.known_homes()


def critical_dir(path: str, home: str, cwd: str) -> str | None:
    """The protected directory ``path`` is, or covers (a glob over one); else None."""
    norm = absolute(path, home, cwd)
    if norm is None:
        return None
    if not words.has_glob(norm):
        if norm in SYSTEM_DIRS or other_home(norm, home):
            return norm
        base, leaf = posixpath.split(norm)
        if leaf in CRITICAL_DIRS_IN_HOME and other_home(base, home):
            return norm  # ~/.ssh, /home/bob/.gnupg: keys that cannot be got back
        return None
    base, leaf = posixpath.split(norm)
    if _GLOB_ONLY.fullmatch(leaf) and not words.has_glob(base) and \
            critical_dir(base or "/", home, cwd):
        return norm  # everything inside one: /usr/*, ~/.*
    homes = {posixpath.normpath(home)} | set(words.known_homes())
    candidates = set(SYSTEM_DIRS) | homes | {posixpath.join(h, d) for h in homes
                                             for d in CRITICAL_DIRS_IN_HOME}
    for candidate in sorted(candidates):
        if words.glob_matches(norm, candidate):
            return f"{norm} (matches {candidate})"
    parent = posixpath.dirname(norm)
    if parent in _HOME_PARENTS or words.glob_matches(parent, "/home"):
        return norm
    return None


def critical_file(path: str, home: str, cwd: str) -> str | None:
    """The critical file ``path`` is (``/etc/passwd``, ``~/.bashrc``, ``~/.ssh/*``)."""
    norm = absolute(path, home, cwd)
    if norm is None:
        return None
    if norm in CRITICAL_ETC or any(norm.startswith(d + "/") for d in CRITICAL_DIRS_OF_FILES):
        return norm
    home_n = posixpath.normpath(home)
    for base in {home_n, *words.known_homes()}:
        if not norm.startswith(base + "/"):
            continue
        rel = norm[len(base) + 1:]
        if rel in CRITICAL_IN_HOME or any(rel.startswith(d + "/")
                                          for d in CRITICAL_DIRS_IN_HOME):
            return norm
    return None


def recursive_flag(args: list[str], long_names: tuple[str, ...] = ("--recursive",)) -> bool:
    for a in args:
        if a == "--":
            break
        if a in long_names:
            return True
        if a.startswith("-") and not a.startswith("--") and ("r" in a or "R" in a):
            return True
    return False


def operands(args: list[str]) -> list[str]:
    out: list[str] = []
    rest = False
    for a in args:
        if rest or not a.startswith("-") or a == "-":
            out.append(a)
        elif a == "--":
            rest = True
    return out


def split_targets(ops: list[str]) -> list[str]:
    """An unquoted expansion splits into words: `X="/ ~"; rm -rf $X` removes both."""
    return [piece for op in ops for piece in dict.fromkeys([op, *op.split()])]
