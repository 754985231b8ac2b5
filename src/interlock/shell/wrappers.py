"""Commands that run another command: ``sudo rm`` is ``rm``.

:func:`unwrap` strips wrappers recursively and records them. A wrapper that
hands its command to a shell as one string (``su -c``, ``script -c``,
``flock -c``, ``watch``, ``tmux new``, ``tmux send-keys``, ``screen -X stuff``)
becomes ``sh -c STRING``, so the caller parses the string as a script; one that
reads a shell's commands from stdin (``sudo -s``, ``su`` or ``script`` with no
``-c``) becomes ``sh`` and keeps its stdin.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import Protocol

# Wrappers whose command follows their own options. Values: the options of
# that wrapper that take an argument in the next word.
SIMPLE: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "-R",
                       "--user", "--group", "--chdir", "--prompt", "--host"}),
    "doas": frozenset({"-u", "-C"}),
    "pkexec": frozenset({"--user"}),
    "env": frozenset({"-u", "-C", "--unset", "--chdir"}),
    "nohup": frozenset(),
    "time": frozenset({"-f", "-o", "--format", "--output"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "ionice": frozenset({"-c", "-n", "--class", "--classdata"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset({"-a"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "chrt": frozenset(),
    "setsid": frozenset(),
    "unbuffer": frozenset(),
    "busybox": frozenset(),
    "caffeinate": frozenset(),
    "xargs": frozenset({"-I", "-i", "-n", "-P", "-L", "-l", "-s", "-d", "-E", "-a",
                        "--max-args", "--max-procs", "--delimiter", "--arg-file"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "coproc": frozenset(),
    "unshare": frozenset({"--propagation", "--setgroups", "-S", "-G", "--setuid",
                          "--setgid", "-R", "--root", "-w", "--wd"}),
    "runuser": frozenset({"-u", "-g", "-G", "--user", "--group", "--supp-group"}),
    "systemd-run": frozenset({"-p", "--property", "-u", "--unit", "-E", "--setenv",
                              "--uid", "--gid", "--nice", "-M", "--machine", "--slice",
                              "--description", "--working-directory"}),
    "numactl": frozenset({"-C", "-N", "-m", "-p", "-i"}),
    "strace": frozenset({"-o", "-e", "-p", "-s", "-u", "-E"}),
    "ltrace": frozenset({"-o", "-e", "-p", "-s", "-u"}),
    "proxychains": frozenset({"-f"}),
    "proxychains4": frozenset({"-f"}),
    "torsocks": frozenset(),
    "chronic": frozenset(),
    "faketime": frozenset(),
    "firejail": frozenset(),
}
# Wrappers with a positional argument before the command (a lock file, a CPU
# mask, a new root), then the command; flock may take `-c STRING` instead.
POSITIONAL: dict[str, frozenset[str]] = {
    "flock": frozenset({"-w", "--timeout", "-E", "--conflict-exit-code"}),
    "taskset": frozenset(),
    "chroot": frozenset({"--userspec", "--groups"}),
}
# Options of these wrappers that are flags, though they look like they
# take a value in other wrappers.
_FLAGS = {"taskset": frozenset({"-c", "--cpu-list", "-a", "--all-tasks"})}
SHELL_STRING = frozenset({"su", "watch", "tmux", "screen", "parallel", "sg", "script"})
NAMES = frozenset(SIMPLE) | frozenset(POSITIONAL) | SHELL_STRING
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_DURATION = re.compile(r"[\d.]+[smhd]?")
_TMUX_RUN = frozenset({"new", "new-session", "neww", "new-window", "splitw", "split-window",
                       "respawn-pane", "respawnp", "respawn-window", "respawnw", "run-shell",
                       "run"})
_TMUX_ARG = frozenset({"-s", "-n", "-t", "-c", "-x", "-y", "-e", "-F", "-l", "-p", "-f"})
_ENTER = frozenset({"Enter", "C-m", "KPEnter", "C-j"})


class Wrapped(Protocol):
    """What :func:`unwrap` reads and changes (a :class:`~interlock.shell.analyse.Command`)."""

    argv: list[str]
    opaque: list[bool]
    stdin_text: str | None
    wrappers: list[str]

    @property
    def name(self) -> str: ...

    @property
    def upstream(self) -> Sequence[object]: ...


def unwrap(cmd: Wrapped) -> None:
    """Strip wrappers from ``cmd`` in place (``sudo nice rm`` -> ``rm``)."""
    for _ in range(12):
        name = cmd.name
        if name not in NAMES or (len(cmd.argv) < 2 and name not in ("sudo", "su", "script")):
            return
        if not _strip(cmd, name):
            return
        cmd.wrappers.append(name)


def _set(cmd: Wrapped, start: int, extra: list[str] | None = None) -> None:
    cmd.argv, cmd.opaque = cmd.argv[start:], cmd.opaque[start:]
    if extra:
        cmd.argv = [*cmd.argv, *extra]
        cmd.opaque = [*cmd.opaque, *([False] * len(extra))]


def _as_shell(cmd: Wrapped, script: str | None, opaque: bool = False) -> None:
    """Make ``cmd`` ``sh -c SCRIPT`` (or ``sh`` reading stdin when None)."""
    if script is None:
        cmd.argv, cmd.opaque = ["sh"], [False]
    else:
        cmd.argv, cmd.opaque = ["sh", "-c", script], [False, False, opaque]


def _skip_options(argv: list[str], i: int, takes_arg: frozenset[str],
                  flags: frozenset[str] = frozenset()) -> int:
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return i + 1
        if not word.startswith("-") or len(word) < 2:
            return i
        i += 2 if word in takes_arg and word not in flags else 1
    return i


def _strip(cmd: Wrapped, name: str) -> bool:
    argv = cmd.argv
    if name in SIMPLE:
        return _simple(cmd, name)
    if name in POSITIONAL:
        i = _skip_options(argv, 1, POSITIONAL[name], _FLAGS.get(name, frozenset()))
        if name == "taskset" and "-p" in argv[1:i]:
            return False  # taskset -p MASK PID: no command
        if i >= len(argv):
            return False
        i += 1  # the lock file, the mask, the new root
        if name == "flock" and i < len(argv) and argv[i] in ("-c", "--command"):
            if i + 1 >= len(argv):
                return False
            _as_shell(cmd, argv[i + 1], cmd.opaque[i + 1])
            return True
        if i >= len(argv):
            if name == "chroot":
                _as_shell(cmd, None)
                return True
            return False
        _set(cmd, i)
        return True
    if name in ("su", "sg", "script"):
        return _su(cmd)
    if name == "watch":
        i = _skip_options(argv, 1, frozenset({"-n", "--interval"}))
        if i >= len(argv):
            return False
        _as_shell(cmd, " ".join(argv[i:]), any(cmd.opaque[i:]))
        return True
    if name == "tmux":
        return _tmux(cmd)
    if name == "screen":
        return _screen(cmd)
    if name == "parallel":
        return _parallel(cmd)
    return False


def _simple(cmd: Wrapped, name: str) -> bool:
    argv = cmd.argv
    takes_arg = SIMPLE[name]
    i = 1
    shell_opt = False
    split: list[str] = []
    while i < len(argv):
        word = argv[i]
        if name == "env" and _ASSIGNMENT.match(word):
            i += 1
        elif name == "env" and (word in ("-S", "--split-string") or
                                word.startswith(("-S", "--split-string="))):
            text = argv[i + 1] if word in ("-S", "--split-string") and i + 1 < len(argv) \
                else word.split("=", 1)[1] if word.startswith("--") else word[2:]
            try:
                split = shlex.split(text)
            except ValueError:
                split = text.split()
            i += 2 if word in ("-S", "--split-string") else 1
            break
        elif word == "--":
            i += 1
            break
        elif word.startswith("-") and len(word) > 1:
            if name in ("sudo", "su") and word in ("-s", "-i", "--shell", "--login"):
                shell_opt = True
            i += 2 if word in takes_arg else 1
        elif name == "timeout" and _DURATION.fullmatch(word):
            i += 1
            break
        elif name in ("nice", "chrt") and word.lstrip("-").isdigit():
            i += 1
        else:
            break
    if split:
        cmd.argv = split + argv[i:]
        cmd.opaque = [False] * len(split) + cmd.opaque[i:]
        return True
    if name == "sudo" and shell_opt:
        # sudo -s CMD runs CMD through the shell; sudo -s alone reads the shell's stdin.
        _as_shell(cmd, " ".join(argv[i:]) if i < len(argv) else None, any(cmd.opaque[i:]))
        return True
    if i >= len(argv):
        return False
    if name == "xargs" and cmd.stdin_text is not None:
        _set(cmd, i, cmd.stdin_text.replace("\0", "\n").split())
    elif name == "xargs" and cmd.upstream:
        _set(cmd, i)
        cmd.argv.append("")
        cmd.opaque.append(True)
    else:
        _set(cmd, i)
    return True


def _su(cmd: Wrapped) -> bool:
    """``su [-] [user] [-c CMD]`` (``script [file] [-c CMD]`` alike): CMD through the
    user's shell, else the shell reads stdin."""
    argv = cmd.argv
    for i, word in enumerate(argv[1:], 1):
        if word in ("-c", "--command") and i + 1 < len(argv):
            _as_shell(cmd, argv[i + 1], cmd.opaque[i + 1])
            return True
        if word.startswith("--command="):
            _as_shell(cmd, word.split("=", 1)[1], cmd.opaque[i])
            return True
    _as_shell(cmd, None)
    return True


def _tmux(cmd: Wrapped) -> bool:
    argv = cmd.argv
    i = _skip_options(argv, 1, frozenset({"-L", "-S", "-f", "-c", "-T"}))
    if i >= len(argv):
        return False
    sub = argv[i]
    if sub in _TMUX_RUN:
        j = _skip_options(argv, i + 1, _TMUX_ARG)
        if j >= len(argv):
            return False
        _as_shell(cmd, " ".join(argv[j:]), any(cmd.opaque[j:]))
        return True
    if sub in ("send-keys", "send"):
        j = _skip_options(argv, i + 1, frozenset({"-t", "-N"}))
        keys = ["\n" if k in _ENTER else k for k in argv[j:]]
        _as_shell(cmd, " ".join(keys).replace(" \n", "\n"), any(cmd.opaque[j:]))
        return True
    return False


def _screen(cmd: Wrapped) -> bool:
    argv = cmd.argv
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        word = argv[i]
        if word == "-X":
            rest = argv[i + 1:]
            if rest[:1] == ["stuff"] and len(rest) > 1:
                _as_shell(cmd, " ".join(rest[1:]).replace("\\n", "\n").replace("^M", "\n"),
                          any(cmd.opaque[i + 2:]))
                return True
            return False
        # `-dmS NAME`: a cluster of flags whose last one takes the next word.
        i += 2 if word in ("-Logfile",) or (word[-1] in "StcpThes" and len(word) >= 2) else 1
    if i >= len(argv):
        return False
    _set(cmd, i)
    return True


def _parallel(cmd: Wrapped) -> bool:
    """``parallel CMD ::: ITEMS`` (or items on stdin): CMD with every item."""
    argv = cmd.argv
    i = _skip_options(argv, 1, frozenset({"-j", "--jobs", "-S", "--sshlogin", "-d",
                                          "--delimiter", "-a", "--arg-file"}))
    if i >= len(argv):
        return False
    template = argv[i:]
    items: list[str] = []
    opaque_items = False
    if ":::" in template:
        k = template.index(":::")
        items = [w for w in template[k + 1:] if w not in (":::", "::::")]
        template = template[:k]
    elif cmd.stdin_text is not None:
        items = cmd.stdin_text.split()
    else:
        items, opaque_items = [""], True
    if not template:
        return False
    out: list[str] = []
    placed = False
    for word in template:
        if word == "{}":
            out.extend(items)
            placed = True
        else:
            out.append(word)
    if not placed:
        out.extend(items)
    cmd.argv = out
    cmd.opaque = [opaque_items and w == "" for w in out]
    return True
