"""What a command prints, when that is known without running it.

``$(echo /)``, ``printf 'rm -rf ~' | sh`` and ``$(git branch --show-current)``
are read through this: the output of ``echo``, ``printf``, ``cat`` of a
heredoc, ``pwd``, ``dirname`` ... is literal, and the shell parser uses it as
the value of a substitution or as the stdin of the next command in a pipe.
"""

from __future__ import annotations

import posixpath
import re
from typing import Protocol

from interlock.shell import words

UNKNOWN_OUTPUT = "$(...)"
"""The value of a word that is nothing but a substitution whose output is
unknown (``"$(getent passwd root | cut -d: -f6)"``): callers see that they
cannot tell what it is, rather than an empty word."""

_CURRENT_BRANCH = (
    ("branch", "--show-current"),
    ("rev-parse", "--abbrev-ref", "HEAD"),
    ("symbolic-ref", "--short", "HEAD"),
    ("symbolic-ref", "--short", "-q", "HEAD"),
    ("symbolic-ref", "-q", "--short", "HEAD"),
    ("symbolic-ref", "--quiet", "--short", "HEAD"),
    ("name-rev", "--name-only", "HEAD"),
)
# Commands that print nothing on stdout: a substitution of `cd ~ && pwd` is pwd's output.
_SILENT = frozenset({"cd", "export", "set", "true", ":", "unset", "shopt", "local",
                     "declare", "typeset", "readonly", "alias", "umask", "test", "["})


class Printing(Protocol):
    argv: list[str]
    opaque: list[bool]
    cwd: str
    stdin_text: str | None

    @property
    def name(self) -> str: ...

    @property
    def args(self) -> list[str]: ...


def literal_output(cmd: Printing) -> str | None:
    """What ``cmd`` writes to stdout when that is literal, else None."""
    name = cmd.name
    args = cmd.args
    if name == "echo":
        flags = ""
        while args and re.fullmatch(r"-[neE]+", args[0]):
            flags += args[0]
            args = args[1:]
        text = " ".join(args)
        return words.unescape(text, bare_octal=False) if "e" in flags else text
    if name == "printf" and args:
        if args[0] == "-v":
            return ""
        return words.printf(args[1:] if args[0] == "--" else args)
    if name in ("cat", "tee") and cmd.stdin_text is not None and \
            (name == "tee" or not args or args == ["-"]):
        return cmd.stdin_text
    if name in _SILENT or name == "":
        return ""
    if any(cmd.opaque):
        return None
    ops = [a for a in args if not a.startswith("-")]
    if name == "dirname" and len(ops) == 1:
        return posixpath.dirname(ops[0].rstrip("/")) or "/"
    if name == "basename" and ops:
        return posixpath.basename(ops[0].rstrip("/"))
    if name == "pwd" and cmd.cwd:
        return cmd.cwd
    if name in ("realpath", "readlink") and len(ops) == 1 and (name == "realpath" or args[0]
                                                               in ("-f", "-e", "-m")):
        path = ops[0]
        if not path.startswith("/"):
            if not cmd.cwd:
                return None
            path = posixpath.join(cmd.cwd, path)
        return posixpath.normpath(path)
    if name == "mktemp":
        # A fresh name under the temporary directory, never one that exists.
        return "/tmp/tmp.mktemp"
    if name == "git" and tuple(args) in _CURRENT_BRANCH:
        # The checked-out branch: `HEAD` to whoever reads it (git push resolves it).
        return "HEAD"
    return None


def joined_output(cmds: list[Printing]) -> str | None:
    """The output of commands run one after the other, when every part is known."""
    out: list[str] = []
    for cmd in cmds:
        text = literal_output(cmd)
        if text is None:
            return None
        out.append(text)
    return "".join(out)
