"""The shell parser's model: the parser itself, a parsed simple command, the
shell's state while a script is walked, and what builtins do to that state
(``set --``, ``read``, ``alias``). The walk is :mod:`interlock.shell.analyse`.
"""

from __future__ import annotations

import functools
import posixpath
import re
import threading
from dataclasses import dataclass, field
from typing import Any

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "busybox-sh", "fish"})


MAX_DEPTH = 8
"""Nested scripts (bash -c inside eval inside ...) deeper than this are a parse error."""


_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\+?=)(.*)$", re.S)


# tree-sitter and tree-sitter-bash are dependencies of interlock: only a broken
# or --no-deps install lacks them.
INSTALL_HINT = ("pip install 'tree-sitter>=0.25' 'tree-sitter-bash>=0.23' "
                "(interlock depends on both)")


_local = threading.local()


def require_parser() -> Any:
    """A tree-sitter parser for bash (one per thread: parsers are not thread-safe).

    A ConfigError with the install hint when tree-sitter or its bash grammar
    is missing. The import is checked on every call (a cheap lookup in
    ``sys.modules``) so an uninstalled parser is noticed even after a first use.
    """
    try:
        import tree_sitter
        import tree_sitter_bash
    except ImportError:
        from interlock.engine.errors import ConfigError

        raise ConfigError("the shell parser (tree-sitter with tree-sitter-bash) is not "
                          "installed; the destructive-command guard and the path sandbox "
                          "need it", fix=INSTALL_HINT) from None
    parser = getattr(_local, "parser", None)
    if parser is None:
        parser = tree_sitter.Parser(_language(tree_sitter, tree_sitter_bash))
        _local.parser = parser
    return parser


@functools.cache
def _language(tree_sitter: Any, tree_sitter_bash: Any) -> Any:
    return tree_sitter.Language(tree_sitter_bash.language())


class ShellParseError(ValueError):
    """The script could not be checked (nesting too deep)."""

    def __init__(self, message: str, text: str = "") -> None:
        super().__init__(message)
        self.text = text
        """The part of the script that failed ('' when not one part)."""


@dataclass(slots=True)
class Command:
    """One simple command as it would run."""

    argv: list[str]
    """Words after expansion and unwrapping; unknown expansions became ''."""
    opaque: list[bool]
    """Per word of argv: True when part of it came from an unknown expansion."""
    cwd: str
    """The directory it would run in (``cd`` earlier in the script is tracked)."""
    redirects: list[tuple[str, str]] = field(default_factory=list)
    """(operator, expanded target) for file redirections, e.g. ('>', '/dev/sda')."""
    stdin_text: str | None = None
    """Literal text on stdin: a heredoc, a here-string, or ``echo ... |``."""
    upstream: list[Command] = field(default_factory=list)
    """Commands earlier in the same pipeline (they feed this one's stdin)."""
    substitutions: list[Command] = field(default_factory=list)
    """Commands run by $(...), `...` or <(...) inside this command's words."""
    wrappers: list[str] = field(default_factory=list)
    """Wrappers that were stripped (sudo, env, xargs ...)."""
    depth: int = 0
    """0 for the top-level script; +1 per nested script (bash -c, eval ...)."""
    via: str = ""
    """How a nested script was reached: 'bash -c', 'eval', 'heredoc' ..."""
    fork_bomb: bool = False
    """A function definition (argv ``["name()"]``) whose body spawns itself."""
    unparsed: str | None = None
    """Text the parser could not understand (argv is empty); callers judge it."""
    error: str = ""
    """Why it could not be parsed."""

    @property
    def name(self) -> str:
        """Basename of argv[0] (``/bin/rm`` -> ``rm``); '' when empty."""
        return basename(self.argv[0]) if self.argv else ""

    @property
    def args(self) -> list[str]:
        return self.argv[1:]


@dataclass
class Scope:
    env: dict[str, str]
    home: str
    cwd: str
    unknown: set[str] = field(default_factory=set)
    """Variables whose value came (in part) from an unknown expansion."""
    functions: dict[str, Any] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    positional: list[str] | None = None
    """``$1 ...`` inside a called function or after ``set --``; None when unknown."""
    calling: tuple[str, ...] = ()
    """Functions and aliases being expanded (a call inside itself is not followed)."""
    misread: int = 0
    """Signs that tree-sitter misread the script without reporting an error."""


@functools.lru_cache(maxsize=1024)
def basename(word: str) -> str:
    return posixpath.basename(word)


def listed(cmd: Command) -> str | None:
    """What a ``while read`` loop fed by ``find ROOT`` or ``ls DIR`` reads, as a stand-in:
    find's root (its entries are paths under it) or ``*`` (ls prints names)."""
    if cmd.name == "find":
        roots = find_roots(cmd.args)
        return roots[0] if roots else cmd.cwd or None
    if cmd.name == "ls":
        return "*"
    return None


def find_roots(args: list[str]) -> list[str]:
    """The starting points of ``find [-H|-L|-P|-D x|-Ox] ROOT... EXPR``."""
    i = 0
    while (i < len(args) and args[i] in ("-H", "-L", "-P", "-D")) or \
            (i < len(args) and re.fullmatch(r"-O\d*", args[i])):
        i += 2 if args[i] == "-D" else 1
    roots: list[str] = []
    for a in args[i:]:
        if a.startswith(("-", "(", "!", ")")) or a == ",":
            break
        roots.append(a)
    return roots


def assign(scope: Scope, name: str, op: str, value: str, unknown: bool = False) -> None:
    scope.env[name] = scope.env.get(name, "") + value if op == "+=" else value
    if unknown:
        scope.unknown.add(name)
    else:
        scope.unknown.discard(name)


def apply_state(cmd: Command, scope: Scope) -> None:
    """What ``alias``, ``set --`` and ``read`` do to the shell's state."""
    name, args = cmd.name, cmd.args
    if name == "alias":
        for word in args:
            alias, eq, value = word.partition("=")
            if eq:
                scope.aliases[alias] = value
    elif name == "set" and args and (args[0] == "--" or not args[0].startswith(("-", "+"))):
        scope.positional = args[1:] if args[0] == "--" else list(args)
    elif name == "read":
        names = read_names(args)
        line = (cmd.stdin_text or "").split("\n", 1)[0] if cmd.stdin_text is not None \
            else None
        read_into(scope, names, line)


def read_names(args: list[str]) -> list[str]:
    names: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-a", "-d", "-i", "-n", "-N", "-p", "-t", "-u"):
            i += 2
            continue
        if not a.startswith("-"):
            names.append(a)
        i += 1
    return names or ["REPLY"]


def read_into(scope: Scope, names: list[str], line: str | None) -> None:
    if line is None:
        for n in names:
            assign(scope, n, "=", "", unknown=True)
        return
    fields = line.split(None, len(names) - 1) if len(names) > 1 else [line.strip()]
    for i, n in enumerate(names):
        assign(scope, n, "=", fields[i] if i < len(fields) else "")


_POSITIONAL = re.compile(r"\$(?:(\d)|\{(\d+)\}|([@*])|\{([@*])\})")


def positional_value(text: str, positional: list[str] | None) -> str | None:
    """``$1``, ``${2}``, ``$@``, ``$*`` when the parameters are known."""
    if positional is None:
        return None
    m = _POSITIONAL.fullmatch(text)
    if m is None:
        return None
    digit = m.group(1) or m.group(2)
    if digit is not None:
        i = int(digit)
        return positional[i - 1] if 0 < i <= len(positional) else ""
    return " ".join(positional)


def decode_ansi_c(raw: str) -> str:
    try:
        return raw.encode("latin-1", "backslashreplace").decode("unicode_escape")
    except UnicodeDecodeError:
        return raw


@functools.lru_cache(maxsize=512)
def is_shell(name: str) -> bool:
    """``bash``, ``sh``, ``zsh5.9``, ``dash`` ..."""
    return name in SHELLS or re.fullmatch(r"(ba|z|da|k)?sh\d*(\.\d+)?", name) is not None


def shell_script_of(cmd: Command) -> tuple[str, str] | None:
    """The script a shell/eval command runs, with how it got it; None if unknown."""
    name = cmd.name
    if name == "eval":
        return " ".join(cmd.args), "eval"
    # `$SHELL -c ...` / `$(which bash) -c ...`: a computed name with -c is a shell.
    computed = bool(cmd.opaque and cmd.opaque[0]) and "-c" in cmd.args
    if computed or is_shell(name):
        args = cmd.args
        for i, word in enumerate(args):
            if word.startswith("-") and not word.startswith("--") and "c" in word[1:]:
                return (args[i + 1], f"{name} -c") if i + 1 < len(args) else None
            if not word.startswith("-"):
                return None  # a script file: not ours to read
        if cmd.stdin_text is not None:
            return cmd.stdin_text, f"{name} <stdin>"
    if name in ("source", ".") and cmd.stdin_text is not None:
        return cmd.stdin_text, name
    return None
