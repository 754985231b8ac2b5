"""The path sandbox: allow and deny roots for file tools and terminal commands.

Every path is resolved the way the OS would resolve it before it is judged:
``~`` and ``$HOME`` expanded, relative paths joined to the working directory
(``cd`` inside a command is followed), ``..`` collapsed, and symlinks
followed with ``os.path.realpath``. A path is refused when either its written
form or its real target falls under a deny root or matches a denied name, or
when allow roots are set and its real target is outside all of them. A
command that acts recursively (``rm -r``, ``cp -r``, ``tar``, ``grep -r``,
``rg`` ...) on a directory that contains a deny root (``~`` holds ``~/.ssh``)
is refused too.

Denied by default: ``~/.ssh``, ``~/.gnupg``, ``~/.aws``, ``~/.kube``,
``~/.docker/config.json``, ``~/.netrc``, ``~/.config/gcloud``, other
users' (profiles') homes next to ours (``/home/bob`` when HOME is
``/home/alice``), and ``.env`` / ``.env.*`` files anywhere
(``.env.example`` and ``.env.sample`` stay readable).
"""

from __future__ import annotations

import functools
import glob
import os
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from interlock.shell.analyse import Command, ShellParseError, parse

DEFAULT_DENY_IN_HOME = (".ssh", ".gnupg", ".aws", ".kube", ".docker/config.json", ".netrc",
                        ".config/gcloud", ".azure", ".password-store", ".pgpass")
DEFAULT_DENY_NAMES = (".env", ".env.*", "*.pem", "id_rsa", "id_ed25519", "id_ecdsa")
DEFAULT_ALLOW_NAMES = (".env.example", ".env.sample", ".env.template")
PATH_KEYS = ("path", "file_path", "filepath", "paths", "target", "source", "destination",
             "src", "dst", "directory", "dir", "cwd", "workdir")
TERMINAL_TOOLS = ("terminal", "shell", "bash", "exec_command", "run_command")
_GLOB = re.compile(r"[*?\[]")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_EMBEDDED = re.compile(r"(?<![\w.:/])(?:~|\$HOME|\$\{HOME\})?/[^\s'\"`;|&<>(),]+"
                       r"|(?<![\w/])[\w./-]*\.env(?:\.[\w-]+)?(?![\w-])")


@dataclass
class Sandbox:
    """A resolved policy; call :meth:`check_path` or :meth:`check_command`."""

    home: str
    allow: list[str] = field(default_factory=list)
    """Roots a path must be under (empty: anywhere not denied)."""
    deny: list[str] = field(default_factory=list)
    """Roots a path must not be under (added to the defaults unless defaults=False)."""
    deny_names: tuple[str, ...] = DEFAULT_DENY_NAMES
    allow_names: tuple[str, ...] = DEFAULT_ALLOW_NAMES
    deny_other_homes: bool = True

    @classmethod
    def from_options(cls, options: Mapping[str, Any] | None = None,
                     *, home: str | None = None) -> Sandbox:
        opts = dict(options or {})
        home = opts.get("home") or home or os.path.expanduser("~")
        assert home is not None
        deny = [str(p) for p in opts.get("deny", [])]
        if opts.get("defaults", True):
            deny += [posixpath.join(home, d) for d in DEFAULT_DENY_IN_HOME]
        allow = [str(p) for p in opts.get("allow", [])]
        return cls(home=home,
                   allow=[_expand_root(a, home) for a in allow],
                   deny=[_expand_root(d, home) for d in deny],
                   deny_names=tuple(opts.get("deny_names", DEFAULT_DENY_NAMES)),
                   allow_names=tuple(opts.get("allow_names", DEFAULT_ALLOW_NAMES)),
                   deny_other_homes=bool(opts.get("deny_other_homes", True)))

    # -- paths -----------------------------------------------------------------
    def resolve(self, path: str, cwd: str) -> tuple[str, str]:
        """(lexical, real) absolute forms of ``path``."""
        if path == "~" or path.startswith("~/"):
            path = self.home + path[1:]
        path = path.replace("${HOME}", self.home).replace("$HOME", self.home)
        if not path.startswith("/"):
            path = posixpath.join(cwd or os.getcwd(), path)
        lexical = posixpath.normpath(path)
        return lexical, os.path.realpath(path)

    def check_path(self, path: str, cwd: str = "", *, require_allow: bool = True) -> str | None:
        """Why ``path`` is refused, or None when it is fine."""
        lexical, real = self.resolve(path, cwd)
        for form in dict.fromkeys((lexical, real)):
            why = self._denied(form)
            if why:
                return f"{path!r} {why}"
        if require_allow and self.allow and not any(_under(real, root) for root in self.allow):
            return f"{path!r} resolves to {real!r}, outside the allowed roots"
        return None

    @functools.cached_property
    def _deny_roots(self) -> tuple[tuple[str, str], ...]:
        """(root, its realpath) of every deny root, resolved once: realpath was most of
        the time of a check when it ran per word."""
        return tuple((root, os.path.realpath(root)) for root in self.deny)

    @functools.cached_property
    def _real_home(self) -> str:
        return os.path.realpath(self.home)

    def _denied(self, path: str) -> str | None:
        for root, real in self._deny_roots:
            if _under(path, root) or _under(path, real):
                return f"is under the denied root {root!r}"
        for part in path.split("/"):
            if part and _matches(part, self.deny_names) and not _matches(part, self.allow_names):
                return f"is a protected file ({part!r})"
        if self.deny_other_homes:
            homes = posixpath.dirname(posixpath.normpath(self.home))
            real_home = self._real_home
            if homes not in ("", "/") and _under(path, homes) and not (
                    _under(path, self.home) or _under(path, real_home)) and path != homes:
                return "is inside another user's home"
        return None

    # -- terminal commands -------------------------------------------------------
    def check_command(self, command: str, cwd: str = "",
                      env: Mapping[str, str] | None = None) -> str | None:
        """Why a shell command touches a refused path, or None."""
        try:
            commands = parse(command, env=env, home=self.home, cwd=cwd)
        except ShellParseError as exc:
            if any(n.strip("*.") and n.strip("*") in command for n in self.deny_names) or any(
                    token in command for token in ("~", "..", "/", "$")):
                return f"could not parse the command ({exc}), and it names paths"
            return None
        # One command line names the same words again and again (`cd a && make && cd ..`):
        # each (word, directory) is resolved once per call, never across calls, as
        # the file system may change between them.
        memo: dict[tuple[str, str, bool], str | None] = {}
        for cmd in commands:
            why = self._check_unparsed(cmd) if cmd.unparsed is not None else \
                self._check_words(cmd, memo)
            if why:
                return why
        return None

    def _check_unparsed(self, cmd: Command) -> str | None:
        """Text the parser could not read: every path-like token must pass."""
        assert cmd.unparsed is not None
        for token in re.findall(r"[^\s;&|<>()'\"`]+", cmd.unparsed):
            looks_like_path = "/" in token or token.startswith(("~", ".", "$"))
            if looks_like_path or _matches(posixpath.basename(token), self.deny_names):
                why = self.check_path(token, cmd.cwd, require_allow=looks_like_path)
                if why:
                    return f"{why} (in {cmd.unparsed.strip()[:60]!r}, which could not be parsed)"
        return None

    def _contains_denied(self, cmd: Command) -> str | None:
        """A recursive command over a directory that holds a deny root (``grep -r x ~``)."""
        words = [w for w in cmd.args if w and not w.startswith("-")]
        if cmd.name in _RECURSIVE_DEFAULT_CWD:
            if words and not any(a in ("-e", "-f", "--regexp", "--file") or
                                 a.startswith(("--regexp=", "--file=")) for a in cmd.args):
                words = words[1:]  # the pattern
            words = words or ["."]
        homes = posixpath.dirname(posixpath.normpath(self.home))
        for word in words:
            for candidate in _path_candidates(word):
                lexical, real = self.resolve(candidate, cmd.cwd)
                for form in dict.fromkeys((lexical, real)):
                    for root, real_root in self._deny_roots:
                        if form not in (root, real_root) and (
                                _under(root, form) or _under(real_root, form)):
                            return (f"{word!r} contains the denied root {root!r}: a "
                                    f"recursive `{cmd.name}` would reach it")
                    if self.deny_other_homes and homes not in ("", "/") and \
                            _under(homes, form):
                        return (f"{word!r} contains other users' homes: a recursive "
                                f"`{cmd.name}` would reach them")
        return None

    def _check_words(self, cmd: Command, memo: dict[tuple[str, str, bool], str | None]
                     ) -> str | None:
        if _recursive(cmd):
            why = self._contains_denied(cmd)
            if why:
                return why
        words = list(cmd.argv)
        targets = [t for _op, t in cmd.redirects]
        for i, word in enumerate(words + targets):
            # Paths inside inline scripts (python -c "open('/x')"): deny lists only.
            for embedded in _EMBEDDED.findall(word):
                if embedded != word:
                    why = self._check_once(memo, embedded, cmd.cwd, False)
                    if why:
                        return why
            if i == 0 and "/" not in word and not word.startswith("~"):
                # A program name without a slash is looked up on PATH, not in the
                # working directory: only its name can be denied.
                if _matches(word, self.deny_names) and not _matches(word, self.allow_names):
                    return f"{word!r} is a protected file ({word!r})"
                continue
            for candidate in _path_candidates(word):
                looks_like_path = "/" in candidate or candidate.startswith(("~", "."))
                for path in self._globbed(candidate, cmd.cwd):
                    # Program names and plain words are only checked against the
                    # deny lists; allow roots apply to things written as paths.
                    why = self._check_once(memo, path, cmd.cwd, looks_like_path and i > 0)
                    if why:
                        return why
        return None

    def _check_once(self, memo: dict[tuple[str, str, bool], str | None], path: str, cwd: str,
                    require_allow: bool) -> str | None:
        key = (path, cwd, require_allow)
        if key not in memo:
            memo[key] = self.check_path(path, cwd, require_allow=require_allow)
        return memo[key]

    def _globbed(self, word: str, cwd: str) -> list[str]:
        if not _GLOB.search(word):
            return [word]
        lexical, _ = self.resolve(word, cwd)
        found = glob.glob(lexical, include_hidden=True)
        return found[:256] or [word]


_ALWAYS_RECURSIVE = frozenset({"tar", "bsdtar", "rg", "ag", "ack", "7z", "7za", "borg",
                               "restic", "rclone"})
_RECURSIVE_DEFAULT_CWD = frozenset({"rg", "ag", "ack", "grep", "egrep", "fgrep"})
_RECURSIVE_FLAG = frozenset({"rm", "cp", "scp", "grep", "egrep", "fgrep", "zip", "chmod",
                             "chown", "chgrp", "diff", "rsync", "gsutil", "shred"})


def _recursive(cmd: Command) -> bool:
    """Does ``cmd`` read or change whole directory trees?"""
    name = cmd.name
    if name in _ALWAYS_RECURSIVE:
        return True
    if name == "find":
        return any(a in ("-exec", "-execdir", "-ok", "-okdir", "-delete") for a in cmd.args)
    if name not in _RECURSIVE_FLAG:
        return False
    for a in cmd.args:
        if a in ("--recursive", "--archive", "--dereference-recursive"):
            return True
        if a.startswith("-") and not a.startswith("--") and (
                "r" in a or "R" in a or (name in ("cp", "rsync") and "a" in a)):
            return True
    return False


def _path_candidates(word: str) -> Iterable[str]:
    if not word or _URL.match(word):
        return
    if word.startswith("-"):
        # --file=/x, -o/x
        if "=" in word:
            yield word.split("=", 1)[1]
        return
    if "=" in word and "/" in word.split("=", 1)[1] and not word.startswith("/"):
        yield word.split("=", 1)[1]  # dd of=/x, KEY=/path
    if ":" in word and not word.startswith("/") and "/" in word:
        host, _, rest = word.partition(":")
        if "/" not in host and rest:
            yield rest  # scp host:path, rsync -e ...
            return
    yield word


def _expand_root(root: str, home: str) -> str:
    if root == "~" or root.startswith("~/"):
        root = home + root[1:]
    return posixpath.normpath(root)


def _under(path: str, root: str) -> bool:
    root = root.rstrip("/") or "/"
    return path == root or path.startswith(root + "/") or root == "/"


def _matches(name: str, patterns: Iterable[str]) -> bool:
    import fnmatch

    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def file_paths(args: Mapping[str, Any], keys: Iterable[str] = PATH_KEYS) -> list[str]:
    """Path-like argument values of a file tool call."""
    out: list[str] = []
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value:
            out.append(value)
        elif isinstance(value, list):
            out.extend(v for v in value if isinstance(v, str) and v)
    return out
