"""What a command line runs through other commands, for deny and ask rules.

:func:`interlock.shell.split.split` finds the simple commands of a line as
written; ``sudo rm -rf /``, ``bash -c 'rm -rf /'`` or ``ls | xargs rm`` are
then commands named ``sudo``, ``bash`` and ``xargs``, and ``deny "rm *"``
misses them. :func:`inner_commands` says what such commands run, seen through
the wrappers the destructive-command guard knows (:mod:`interlock.shell.wrappers`),
``find -exec``, and the scripts of ``sh -c``/``bash -c``/``eval`` (read again as
scripts, :data:`~interlock.shell.model.MAX_DEPTH` deep at most).

Each command comes back as its words after quote removal, the name cut to its
basename (``/usr/bin/rm`` is ``rm``), wrappers and their options gone, joined
by single spaces; a word holding whitespace, or empty, is quoted
(``git commit -m 'a b'``), no other is. With tree-sitter-bash the line is read
by :func:`interlock.shell.analyse.parse`, which also follows a script fed to a
shell on stdin (``echo 'rm -rf /' | sh``) and variables assigned in the line;
without it each command is cut into words by :mod:`shlex`.

``complete`` is False when a run command could not be read: a shell string
with a syntax error or nested past the cap, a script or command name that
comes from an unknown expansion (``bash -c "$S"``, ``sudo $CMD``). What
stays out of reach (a script file, an alias from a startup file, another
language's ``system()``) is in docs/agent.md, Permissions.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from interlock.engine.errors import ConfigError
from interlock.shell.model import (
    MAX_DEPTH,
    Command,
    ShellParseError,
    basename,
    is_shell,
    require_parser,
    shell_script_of,
)
from interlock.shell.split import split
from interlock.shell.wrappers import NAMES, unwrap

__all__ = ["InnerCommands", "inner_commands", "runs_others"]


@dataclass(frozen=True, slots=True)
class InnerCommands:
    """The commands a line runs, as their normalised text."""

    commands: tuple[str, ...]
    """Every simple command found, wrappers and shell strings seen through."""
    complete: bool
    """False when a command run through another could not be read."""


# Command names that run another command; any other plain name runs itself.
_RUNNERS = NAMES | {"eval", "find"}
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+:@%,-]*")
_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_REDIRECTION = re.compile(r"\d*(?:[<>]|&>)")
_OPERATOR = re.compile(r"\d*(?:[<>&|]+)")
_VIA_EXEC = "find -exec"

_Reader = Callable[[str, int, list[str]], bool]
"""``read(script, depth, found)``: add what ``script`` runs to ``found``; False
when some of it could not be read."""


def runs_others(commands: Iterable[str]) -> bool:
    """Could one of these commands (as :func:`split` gives them) run another, or
    be a command its text does not name? A cheap look at each first word, so a
    line of plain commands (``git status && ls -la``) is never parsed again.

    True for a wrapper or a shell, ``eval``, ``find``, and any first word that
    is not a plain name: a path (``/bin/rm``), quotes or escapes (``r''m``,
    ``\\rm``), an assignment (``FOO=1 rm``), an expansion, a redirection.
    """
    for text in commands:
        first = text.split(None, 1)[0] if text.strip() else ""
        if first and (not _PLAIN_NAME.fullmatch(first) or first in _RUNNERS
                      or is_shell(first)):
            return True
    return False


def inner_commands(line: str) -> InnerCommands:
    """The commands ``line`` runs, wrappers and shell strings seen through."""
    try:
        require_parser()
    except ConfigError:
        return _read(line, parser=False)
    return _read(line, parser=True)


@functools.lru_cache(maxsize=256)
def _read(line: str, *, parser: bool) -> InnerCommands:
    found: list[str] = []
    complete = (_by_parser if parser else _by_words)(line, 0, found)
    return InnerCommands(tuple(dict.fromkeys(found)), complete)


def _by_parser(script: str, depth: int, found: list[str]) -> bool:
    from interlock.shell.analyse import parse  # the walk is only needed here

    try:
        commands = parse(script)
    except ShellParseError:  # nested past the cap: what the words show, unread
        _by_words(script, depth, found)
        return False
    complete = True
    for cmd in commands:
        if cmd.unparsed is not None or depth + cmd.depth > MAX_DEPTH:
            complete = False
        if cmd.argv:
            complete = _add(cmd, depth + cmd.depth, found, _by_parser,
                            walked=True) and complete
    return complete


def _by_words(script: str, depth: int, found: list[str]) -> bool:
    """``script`` cut by :func:`split`, each command into words by :mod:`shlex`;
    a nested script is read the same way. An expansion is not expanded: a word
    holding one is unknown."""
    line = split(script)
    complete = line.complete
    for text in line.commands:
        try:
            argv = _command_words(shlex.split(text))
        except ValueError:
            complete = False
            continue
        if argv:
            cmd = Command(argv=argv, opaque=["$" in w or "`" in w for w in argv], cwd="")
            unwrap(cmd)
            if cmd.argv:
                complete = _add(cmd, depth, found, _by_words, walked=False) and complete
    return complete


def _command_words(words: list[str]) -> list[str]:
    """The words from the command name on: leading assignments and redirections
    (``FOO=1 >log rm x``) are not the command."""
    i = 0
    while i < len(words):
        word = words[i]
        if _ASSIGNMENT.match(word):
            i += 1
        elif _OPERATOR.fullmatch(word):
            i += 2  # `> log`: the operator, then its target
        elif _REDIRECTION.match(word):
            i += 1  # `>log`, `2>&1`
        else:
            break
    return words[i:]


def _add(cmd: Command, depth: int, found: list[str], read: _Reader, *,
         walked: bool) -> bool:
    """Record ``cmd`` (already unwrapped) and what it runs in turn; False when
    something it runs cannot be read. ``walked``: the parser has already walked
    the script it hands a shell (it does so for every command it yields)."""
    argv = cmd.argv
    if "xargs" in cmd.wrappers and cmd.stdin_text is None and \
            not (argv[-1] == "" and cmd.opaque[-1]):
        argv = [*argv, ""]  # the words xargs reads are arguments too, unknown ones
    found.append(_text(argv))
    reached = bool(depth or cmd.wrappers or cmd.via == _VIA_EXEC)
    complete = not (reached and cmd.opaque[0])  # `sudo $CMD`: which command is unknown
    for inner in _exec_commands(cmd):
        complete = _add(inner, depth, found, read, walked=False) and complete
    nested = shell_script_of(cmd)
    if nested is None:
        return complete
    if any(cmd.opaque[1:]):
        complete = False  # `bash -c "$S"`: (part of) the script is unknown
    if walked:
        return complete
    if depth >= MAX_DEPTH:
        return False
    return read(nested[0], depth + 1, found) and complete


def _exec_commands(cmd: Command) -> Iterator[Command]:
    """The commands ``find ... -exec CMD ;`` (or ``+``) runs, unwrapped."""
    if cmd.name != "find":
        return
    argv, opaque = cmd.argv, cmd.opaque
    for i, word in enumerate(argv):
        if word in _EXEC:
            end = next((j for j in range(i + 1, len(argv)) if argv[j] in (";", "+")),
                       len(argv))
            if end > i + 1:
                inner = Command(argv=argv[i + 1:end], opaque=opaque[i + 1:end], cwd=cmd.cwd,
                                via=_VIA_EXEC)
                unwrap(inner)
                if inner.argv:
                    yield inner


def _text(argv: list[str]) -> str:
    return " ".join(_quoted(word) for word in [basename(argv[0]), *argv[1:]])


def _quoted(word: str) -> str:
    return shlex.quote(word) if not word or any(c.isspace() for c in word) else word
