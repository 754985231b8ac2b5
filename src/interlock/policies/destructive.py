"""The destructive-command guard: would this shell command wreck something?

It parses the command (:mod:`interlock.policies.shell`) and checks each
simple command it would run, so obfuscation through variables, quotes,
``bash -c``, ``eval``, heredocs and chains is seen through, and harmless
mentions (``grep 'rm -rf' notes.txt``) are not flagged. Caught:

- ``rm -r`` of ``/``, the home directory, a top-level system directory, or
  everything in one (``/*``, ``~/*``); ``find`` there with ``-delete``/``-exec rm``;
- ``mkfs``/``mkswap``/``wipefs``, ``dd``/``shred`` or a redirect onto a block device;
- fork bombs (a function that pipes into itself in the background);
- ``chmod``/``chown -R`` of ``/``, home or a system directory;
- ``git push --force`` (or ``+refspec``, ``--mirror``, deleting) to a
  protected branch (main, master, release*), or with no branch named;
- a download piped or substituted into a shell (``curl | sh``, ``bash <(wget ...)``),
  or decoded opaque text piped into a shell (``base64 -d | sh``);
- DROP / TRUNCATE sent to an SQL client (psql, mysql, sqlite3 ...).

A command that cannot be parsed is dangerous when it mentions any of these
(``SUSPICIOUS``): a parse failure is a block, never a pass.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from interlock.policies.shell import SHELLS, Command, ShellParseError, parse

SYSTEM_DIRS = frozenset({
    "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/opt",
    "/proc", "/root", "/sbin", "/srv", "/sys", "/usr", "/var", "/usr/bin", "/usr/lib",
    "/usr/local", "/usr/sbin", "/var/lib", "/Users", "/System", "/Library", "/Applications",
})
PROTECTED_BRANCHES = ("main", "master", "release*", "production", "prod")
DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "http", "https", "xh"})
DECODERS = frozenset({"base64", "base32", "xxd", "openssl", "gunzip", "zcat", "rev", "tr"})
SQL_CLIENTS: dict[str, tuple[str, ...]] = {
    # client -> options whose value is SQL text
    "psql": ("-c", "--command"),
    "mysql": ("-e", "--execute"),
    "mariadb": ("-e", "--execute"),
    "clickhouse-client": ("-q", "--query"),
    "cockroach": ("-e", "--execute"),
    "sqlite3": (),
    "duckdb": ("-c",),
    "sqlcmd": ("-Q", "-q"),
}
_SQL_DANGER = re.compile(
    r"\b(?:DROP\s+(?:TABLE|DATABASE|SCHEMA|VIEW|INDEX|USER|ROLE|OWNED|TABLESPACE|"
    r"MATERIALIZED\s+VIEW|SEQUENCE|FUNCTION|TRIGGER|EXTENSION)|TRUNCATE)\b", re.I)
_SQL_STRINGS = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/", re.S)
_DEVICE = re.compile(r"^/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|rdisk|md|dm-|loop|mapper/|sr)")
_SAFE_DEVICES = frozenset({"/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr",
                           "/dev/tty", "/dev/random", "/dev/urandom", "/dev/stdin"})

SUSPICIOUS = re.compile(
    r"\brm\b|\bmkfs|\bdd\b|\bchmod\b|\bchown\b|\bgit\b.*\bpush\b|\bcurl\b|\bwget\b|"
    r"\bDROP\b|\bTRUNCATE\b|:\s*\(\s*\)|\beval\b|\bbase64\b|/dev/|\bshred\b|\bwipefs\b|"
    r"\bfind\b.*-delete|\bsh\b|\bbash\b|\bmv\b|\bexec\b|\$\((?!\()|`|\bsudo\b|\bfork\b",
    re.I | re.S)


@dataclass(frozen=True, slots=True)
class _Policy:
    home: str
    branches: tuple[str, ...]
    current_branch: Callable[[str], str | None] | None


@dataclass(frozen=True, slots=True)
class Finding:
    """Why a command was judged destructive."""

    rule: str
    detail: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.detail}"


def check(command: str, *, home: str = "/root", cwd: str = "",
          env: Mapping[str, str] | None = None,
          protected_branches: Iterable[str] = PROTECTED_BRANCHES,
          current_branch: Callable[[str], str | None] | None = None) -> Finding | None:
    """The first destructive thing ``command`` would do, or None.

    ``current_branch(cwd)`` names the branch checked out in ``cwd``, so that
    ``git push --force`` with no branch named (or ``HEAD``) is judged by the
    branch it would push; without it, such a push is assumed to be protected.
    """
    try:
        commands = parse(command, env=env, home=home, cwd=cwd)
    except ShellParseError as exc:
        if SUSPICIOUS.search(exc.text or command):
            return Finding("unparseable", f"could not parse a command that looks dangerous "
                           f"({exc}); rewrite it plainly")
        return None
    pol = _Policy(home, tuple(protected_branches), current_branch)
    downloaded: set[str] = set()
    for cmd in commands:
        for rule in _RULES:
            found = rule(cmd, pol)
            if found is not None:
                return found
        found = _run_downloaded(cmd, downloaded)
        if found is not None:
            return found
    return _fork_bomb(command)


def _run_downloaded(cmd: Command, downloaded: set[str]) -> Finding | None:
    """``curl -o x.sh URL && sh x.sh``: curl | sh in two steps."""
    if cmd.name in DOWNLOADERS:
        args = cmd.args
        for i, a in enumerate(args):
            if a in ("-o", "-O", "--output", "--output-document") and i + 1 < len(args):
                downloaded.add(_norm(args[i + 1], cmd.cwd))
            elif a.startswith(("--output=", "--output-document=")):
                downloaded.add(_norm(a.split("=", 1)[1], cmd.cwd))
        for op, target in cmd.redirects:
            if op in (">", ">>", ">|"):
                downloaded.add(_norm(target, cmd.cwd))
        return None
    if not downloaded or not cmd.argv:
        return None
    runs = _norm(cmd.argv[0], cmd.cwd) if "/" in cmd.argv[0] else None
    if cmd.name in SHELLS or cmd.name in ("source", ".", "python", "python3", "perl", "ruby",
                                            "node"):
        script = next((a for a in cmd.args if not a.startswith("-")), None)
        runs = _norm(script, cmd.cwd) if script else None
    if runs is not None and runs in downloaded:
        return Finding("download-exec", f"a downloaded file is executed by `{cmd.name}`")
    return None


def _norm(path: str, cwd: str) -> str:
    return posixpath.normpath(posixpath.join(cwd or "/", path))


# -- paths ---------------------------------------------------------------------

def _critical(path: str, home: str, cwd: str) -> bool:
    """``path`` is /, home, a system directory, or everything inside one."""
    if not path:
        return False
    if not path.startswith("/"):
        if not cwd:
            return False
        path = posixpath.join(cwd, path)
    # //x and /./x are the same as /x.
    path = re.sub(r"/+", "/", path)
    norm = posixpath.normpath(path)
    home_n = posixpath.normpath(home) if home else None
    base, leaf = posixpath.split(norm)
    candidates = {norm}
    if leaf in ("*", ".*", "{*,.*}", "*.*", "**") or re.fullmatch(r"[\[\]*?.{},]+", leaf):
        candidates.add(base or "/")
    homes = posixpath.dirname(home_n) if home_n else ""
    for c in candidates:
        if c in SYSTEM_DIRS or (home_n is not None and c == home_n):
            return True
        # Another user's home (/home/bob next to /home/alice).
        if homes not in ("", "/") and posixpath.dirname(c) == homes:
            return True
    return False


def _recursive(args: list[str], long_names: tuple[str, ...] = ("--recursive",)) -> bool:
    for a in args:
        if a == "--":
            break
        if a in long_names:
            return True
        if a.startswith("-") and not a.startswith("--") and ("r" in a or "R" in a):
            return True
    return False


def _operands(args: list[str]) -> list[str]:
    out: list[str] = []
    rest = False
    for a in args:
        if rest or not a.startswith("-") or a == "-":
            out.append(a)
        elif a == "--":
            rest = True
    return out


# -- rules ---------------------------------------------------------------------

def _unparsed(cmd: Command, pol: _Policy) -> Finding | None:
    if cmd.unparsed is not None and SUSPICIOUS.search(cmd.unparsed):
        return Finding("unparseable", f"could not parse {cmd.unparsed.strip()[:80]!r}, "
                       f"which looks dangerous ({cmd.error}); rewrite it plainly")
    return None


def _targets(ops: list[str]) -> list[str]:
    # An unquoted expansion splits into words: `X="/ ~"; rm -rf $X` removes both.
    return [piece for op in ops for piece in dict.fromkeys([op, *op.split()])]


def _rm(cmd: Command, pol: _Policy) -> Finding | None:
    if cmd.name not in ("rm", "rmdir", "unlink", "trash", "srm"):
        return None
    if cmd.name == "rm" and not _recursive(cmd.args):
        return None
    no_preserve = "--no-preserve-root" in cmd.args
    for target in _targets(_operands(cmd.args)):
        if _critical(target, pol.home, cmd.cwd) or (no_preserve and target.startswith("/")):
            return Finding("rm-root-or-home",
                           f"`{cmd.name}` would delete {target or 'an empty path'!r} recursively")
    return None


def _find(cmd: Command, pol: _Policy) -> Finding | None:
    if cmd.name != "find" or not cmd.args:
        return None
    deletes = "-delete" in cmd.args or any(
        a in ("-exec", "-execdir", "-ok") and i + 1 < len(cmd.args)
        and posixpath.basename(cmd.args[i + 1]) in ("rm", "shred", "unlink")
        for i, a in enumerate(cmd.args))
    if not deletes:
        return None
    roots = []
    for a in cmd.args:
        if a.startswith(("-", "(", "!")):
            break
        roots.append(a)
    for root in _targets(roots):
        if _critical(root, pol.home, cmd.cwd):
            return Finding("find-delete-root", f"`find {root}` would delete files recursively")
    return None


def _mkfs(cmd: Command, pol: _Policy) -> Finding | None:
    name = cmd.name
    if name.startswith(("mkfs", "mke2fs", "mkswap", "mkdosfs", "mkntfs")) or name == "wipefs":
        return Finding("mkfs", f"`{name}` formats or wipes a filesystem")
    if name in ("fdisk", "sfdisk", "parted", "sgdisk") and any(
            _DEVICE.match(a) for a in cmd.args) and not {"-l", "--list", "print"} & set(cmd.args):
        return Finding("partition", f"`{name}` rewrites a disk's partition table")
    return None


def _device_write(cmd: Command, pol: _Policy) -> Finding | None:
    if cmd.name == "dd":
        for a in cmd.args:
            if a.startswith("of="):
                target = a[3:]
                if target.startswith("/dev/") and target not in _SAFE_DEVICES:
                    return Finding("dd-device", f"`dd` would overwrite the device {target}")
    if cmd.name in ("shred", "cp", "cat", "tee", "pv", "mv") and cmd.name != "cat":
        for a in _operands(cmd.args):
            if _DEVICE.match(a):
                return Finding("device-write", f"`{cmd.name}` would overwrite the device {a}")
    for op, target in cmd.redirects:
        if op in (">", ">>", ">|", "&>", "<>") and _DEVICE.match(target):
            return Finding("device-write", f"a redirect would overwrite the device {target}")
    return None


def _chmod(cmd: Command, pol: _Policy) -> Finding | None:
    if cmd.name not in ("chmod", "chown", "chgrp", "setfacl"):
        return None
    if not _recursive(cmd.args):
        return None
    ops = _operands(cmd.args)
    for target in _targets(ops[1:]):
        if _critical(target, pol.home, cmd.cwd):
            return Finding("chmod-recursive-root",
                           f"`{cmd.name} -R` would change {target!r} recursively")
    return None


def _mv(cmd: Command, pol: _Policy) -> Finding | None:
    if cmd.name != "mv":
        return None
    ops = _operands(cmd.args)
    for src in ops[:-1]:
        if _critical(src, pol.home, cmd.cwd):
            return Finding("mv-root-or-home", f"`mv` would move {src!r} away")
    if ops and ops[-1] == "/dev/null" and len(ops) > 1:
        return Finding("mv-to-null", "`mv` into /dev/null destroys the source")
    return None


def _git_push(cmd: Command, pol: _Policy) -> Finding | None:
    if cmd.name != "git":
        return None
    args = cmd.args
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") else 1
    if i >= len(args) or args[i] != "push":
        return None
    opts = [a for a in args[i + 1:] if a.startswith("-")]
    positional = [a for a in args[i + 1:] if not a.startswith("-")]
    # Options that take a value in the next word.
    cleaned: list[str] = []
    skip = False
    for a in args[i + 1:]:
        if skip:
            skip = False
            continue
        if a in ("-o", "--push-option", "--repo", "--receive-pack", "--exec"):
            skip = True
            continue
        if not a.startswith("-"):
            cleaned.append(a)
    positional = cleaned
    force = any(o in ("-f", "--force", "--force-with-lease", "--force-if-includes")
                or o.startswith("--force-with-lease=")
                or (o.startswith("-") and not o.startswith("--") and "f" in o[1:])
                for o in opts)
    deleting = "--delete" in opts or any(o.startswith("-") and not o.startswith("--")
                                         and "d" in o[1:] for o in opts)
    if "--mirror" in opts:
        return Finding("git-push-mirror", "`git push --mirror` overwrites every remote branch")
    refspecs = positional[1:]
    head = pol.current_branch(cmd.cwd) if pol.current_branch is not None else None
    if not refspecs:
        if force and "--all" not in opts and "--tags" not in opts:
            if head is not None and not _protected(head, pol.branches):
                return None
            return Finding("git-force-push", "`git push --force` with no branch named may "
                           "overwrite a protected branch; name the branch")
        if force and "--all" in opts:
            return Finding("git-force-push", "`git push --force --all` overwrites "
                           "protected branches")
        return None
    for spec in refspecs:
        plus = spec.startswith("+")
        spec_body = spec.lstrip("+")
        src, colon, dst = spec_body.partition(":")
        target = dst if colon else src
        target = target.removeprefix("refs/heads/")
        if colon and not src:
            if _protected(target, pol.branches):
                return Finding("git-delete-protected",
                               f"`git push` would delete the protected branch {target!r}")
            continue
        if target in ("HEAD", "@"):
            if head is None:
                if force or plus:
                    return Finding("git-force-push", "`git push --force` of HEAD to an "
                                   "unnamed branch; name the branch")
                continue
            target = head
        if _protected(target, pol.branches) and (force or plus or deleting):
            what = "delete" if deleting else "force-push to"
            return Finding("git-force-push",
                           f"`git push` would {what} the protected branch {target!r}")
    return None


def _protected(branch: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(branch, p) for p in patterns)


def _download_exec(cmd: Command, pol: _Policy) -> Finding | None:
    is_shell = cmd.name in SHELLS or cmd.name in ("source", ".", "python", "python3",
                                                    "perl", "ruby", "node", "php")
    if not is_shell:
        return None
    feeders = [c.name for c in cmd.upstream]
    if any(f in DOWNLOADERS for f in feeders):
        return Finding("download-exec", f"downloaded content piped into `{cmd.name}`")
    if cmd.name in SHELLS or cmd.name in ("source", "."):
        if any(f in DECODERS for f in feeders) and cmd.stdin_text is None:
            return Finding("opaque-exec", f"decoded, unreadable content piped into `{cmd.name}`")
        for sub in cmd.substitutions:
            if sub.name in DOWNLOADERS:
                return Finding("download-exec",
                               f"downloaded content executed by `{cmd.name}`")
            if sub.name in DECODERS or any(u.name in DECODERS for u in sub.upstream):
                return Finding("opaque-exec",
                               f"decoded, unreadable content executed by `{cmd.name}`")
    return None


def _opaque_name(cmd: Command, pol: _Policy) -> Finding | None:
    """A command whose name is hidden ($(echo rm), unset $X) aimed at a critical path."""
    if not cmd.opaque or not cmd.opaque[0]:
        return None
    for target in _operands(cmd.args):
        if _critical(target, pol.home, cmd.cwd):
            return Finding("opaque-command",
                           f"a command whose name is computed at run time targets {target!r}")
    return None


def _eval_opaque(cmd: Command, pol: _Policy) -> Finding | None:
    if cmd.name == "eval" and any(cmd.opaque[1:]):
        for sub in cmd.substitutions:
            if sub.name in DOWNLOADERS or sub.name in DECODERS or any(
                    u.name in DECODERS for u in sub.upstream):
                return Finding("opaque-exec", "`eval` of downloaded or decoded text")
    return None


def _fork(cmd: Command, pol: _Policy) -> Finding | None:
    if cmd.fork_bomb:
        return Finding("fork-bomb", f"function {cmd.argv[0]} spawns copies of itself")
    return None


def _sql(cmd: Command, pol: _Policy) -> Finding | None:
    if cmd.name not in SQL_CLIENTS:
        return None
    texts: list[str] = []
    flags = SQL_CLIENTS[cmd.name]
    args = cmd.args
    for i, a in enumerate(args):
        for f in flags:
            if a == f and i + 1 < len(args):
                texts.append(args[i + 1])
            elif a.startswith(f + "=") or (len(f) == 2 and a.startswith(f) and len(a) > 2
                                           and not a.startswith("--")):
                texts.append(a.split("=", 1)[1] if "=" in a and a.startswith("--")
                             else a[len(f):].lstrip("="))
    if cmd.name in ("sqlite3", "duckdb"):
        texts.extend(a for a in _operands(args)[1:])
    if cmd.stdin_text is not None:
        texts.append(cmd.stdin_text)
    for text in texts:
        if _SQL_DANGER.search(_SQL_STRINGS.sub(" ", text)):
            return Finding("sql-drop", f"`{cmd.name}` would run DROP/TRUNCATE")
    return None


_RULES = (_unparsed, _rm, _find, _mkfs, _device_write, _chmod, _mv, _git_push, _download_exec,
          _opaque_name, _eval_opaque, _sql, _fork)


def _fork_bomb(command: str) -> Finding | None:
    if re.search(r"\bfork\s+while\s+fork\b|while\s*\(\s*1\s*\)\s*\{?\s*fork", command):
        return Finding("fork-bomb", "an endless fork loop")
    return None
