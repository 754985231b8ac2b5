"""A shell script, seen as the simple commands it would run.

The destructive-command guard and the path sandbox both ask "what would this
command line execute, and on which paths?". Substring matching cannot answer
that (``grep 'rm -rf' notes.txt`` is harmless, ``r''m -rf ~`` is not), so this
module parses the script with bashlex and walks the tree:

- every simple command in lists, pipelines, compound commands, loops,
  functions, command and process substitutions;
- words with quotes removed, ``$VAR`` / ``${VAR}`` expanded from assignments
  seen earlier in the script and from the given environment, ``~`` expanded,
  ANSI-C ``$'\\x72m'`` strings decoded;
- wrappers unwrapped (``sudo``, ``env``, ``nohup``, ``timeout``, ``xargs`` ...);
- nested scripts parsed again: ``bash -c``, ``sh -c``, ``eval``, and scripts
  fed to a shell through a heredoc, a here-string or a pipe from ``echo``;
- ``cd`` tracked, so relative paths resolve where they would run.

An unknown expansion (an unset variable, a command substitution) becomes the
empty string in ``argv`` and marks the word ``opaque``: ``rm -rf "$DIR/"``
with ``DIR`` unknown is checked as ``rm -rf /``, which is what bash would run
if it were unset.

Text the parser cannot understand (even after splitting the script into
pieces at ``;``, ``&&``, ``||`` and newlines) comes back as a command with
``unparsed`` set; callers decide what it means (the guard blocks it if it
looks dangerous). :class:`ShellParseError` is raised only for nesting deeper
than :data:`MAX_DEPTH`.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "busybox-sh", "fish"})
MAX_DEPTH = 8
"""Nested scripts (bash -c inside eval inside ...) deeper than this are a parse error."""

# Wrappers: the command they run follows their own options. Values: options
# of that wrapper that take an argument.
_WRAPPERS: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"}),
    "doas": frozenset({"-u", "-C"}),
    "env": frozenset({"-u", "-C", "-S", "--unset", "--chdir"}),
    "nohup": frozenset(),
    "time": frozenset({"-f", "-o"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "ionice": frozenset({"-c", "-n", "-p"}),
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
    "watch": frozenset({"-n", "-d", "--interval"}),
}
_ASSIGNING = frozenset({"export", "declare", "typeset", "local", "readonly"})
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:\[[^\]]*\])?(?:(:?[-=?+])([^}]*))?\}"
                  r"|\$([A-Za-z_][A-Za-z0-9_]*)")
_ANSI_C = re.compile(r"\$'((?:[^'\\]|\\.)*)'")
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\+?=)(.*)$", re.S)


INSTALL_HINT = "pip install 'interlock[shell]'"


def require_parser() -> Any:
    """The bashlex module; a ConfigError with the install hint when it is missing."""
    try:
        import bashlex
    except ImportError:
        from interlock._errors import ConfigError

        raise ConfigError("the shell parser (bashlex) is not installed; the destructive-"
                          "command guard and the path sandbox need it",
                          fix=INSTALL_HINT) from None
    return bashlex


class ShellParseError(ValueError):
    """The script could not be parsed (bashlex error, nesting too deep, ...)."""

    def __init__(self, message: str, text: str = "") -> None:
        super().__init__(message)
        self.text = text
        """The part of the script that failed ('' when not one part)."""


@dataclass
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
        return posixpath.basename(self.argv[0]) if self.argv else ""

    @property
    def args(self) -> list[str]:
        return self.argv[1:]


@dataclass
class _Scope:
    env: dict[str, str]
    home: str
    cwd: str
    unknown: set[str] = field(default_factory=set)
    functions: dict[str, Any] = field(default_factory=dict)


def _decode_ansi_c(text: str) -> str:
    """Rewrite $'...' strings as plain single-quoted text (bashlex reads them wrong)."""

    def repl(m: re.Match[str]) -> str:
        raw = m.group(1)
        try:
            decoded = raw.encode("latin-1", "backslashreplace").decode("unicode_escape")
        except UnicodeDecodeError:
            decoded = raw
        return "'" + decoded.replace("'", "'\\''") + "'"

    return _ANSI_C.sub(repl, text)


def parse(script: str, *, env: Mapping[str, str] | None = None, home: str = "~",
          cwd: str = "") -> list[Command]:
    """Every simple command ``script`` would run, in order.

    Results are cached (bashlex takes ~0.1-0.5 ms a command, and the guard and
    the sandbox parse the same command): treat the returned commands as
    read-only.
    """
    return list(_parse_cached(script, tuple(sorted((env or {}).items())), home, cwd))


@functools.lru_cache(maxsize=512)
def _parse_cached(script: str, env: tuple[tuple[str, str], ...], home: str,
                  cwd: str) -> tuple[Command, ...]:
    scope = _Scope(env=dict(env), home=home, cwd=cwd)
    return tuple(_script(script, scope, 0, ""))


def _script(script: str, scope: _Scope, depth: int, via: str) -> Iterator[Command]:
    if depth > MAX_DEPTH:
        raise ShellParseError(f"scripts nested more than {MAX_DEPTH} deep")
    text = _simplify(_decode_ansi_c(script))
    if not text.strip():
        return
    bashlex = require_parser()
    try:
        trees = bashlex.parse(text)
    except Exception as exc:  # bashlex raises several unrelated types
        # bashlex lacks `case`, `select`, `coproc` ...: parse the script piece by
        # piece instead; a piece that still fails is returned as `unparsed`.
        pieces = _pieces(text)
        if pieces is None or pieces == [text.strip()]:
            yield Command(argv=[], opaque=[], cwd=scope.cwd, depth=depth, via=via,
                          unparsed=text, error=f"{type(exc).__name__}: {str(exc)[:80]}")
            return
        for piece in pieces:
            yield from _script(piece, scope, depth, via)
        return
    for tree in trees:
        yield from _node(tree, scope, depth, via, [])


_ARITH = re.compile(r"\$\(\((.*?)\)\)", re.S)
_TEST = re.compile(r"\[\[(.*?)\]\]", re.S)
_TIME = re.compile(r"(^|[;&|(\n]\s*)time(?:\s+-p)?\s+")
_ARRAY = re.compile(r"(?<![\w$])([A-Za-z_][A-Za-z0-9_]*)=\(([^()]*)\)")
_KEYWORDS = re.compile(r"^(?:then|do|else|elif|if|while|until|fi|done|esac|\{|\})\s+|"
                       r"^case\s+.*?\s+in\s+|^\(?[^\s()$`]+\)\s*")


def _simplify(text: str) -> str:
    """Rewrite what bashlex cannot parse but cannot hide a command either.

    ``$((1+2))`` becomes ``0`` and ``[[ -f x ]]`` becomes ``true`` unless they
    contain a command substitution; ``time`` prefixes go; arrays become
    space-joined strings.
    """

    def inert(replacement: str) -> Callable[[re.Match[str]], str]:
        def sub(m: re.Match[str]) -> str:
            inner = m.group(1)
            return m.group(0) if "$(" in inner or "`" in inner or "<(" in inner \
                else replacement
        return sub

    text = _ARITH.sub(inert("0"), text)
    text = _TEST.sub(inert("true"), text)
    text = _TIME.sub(r"\1", text)
    return _ARRAY.sub(lambda m: f"{m.group(1)}='{' '.join(m.group(2).split())}'"
                      if "'" not in m.group(2) else m.group(0), text)


def _pieces(text: str) -> list[str] | None:
    """Split on ``;``, ``;;``, ``&&``, ``||`` and newlines outside quotes (pipes
    stay whole), dropping control keywords and case patterns; None for
    scripts with heredocs, which cannot be split safely."""
    if "<<" in text:
        return None
    pieces: list[str] = []
    cur: list[str] = []
    quote = ""
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            cur.append(ch)
            if ch == "\\" and quote == '"' and i + 1 < len(text):
                cur.append(text[i + 1])
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
            cur.append(ch)
        elif ch == "\\" and i + 1 < len(text):
            cur.append(text[i:i + 2])
            i += 1
        elif ch in ";\n" or text.startswith(("&&", "||"), i):
            pieces.append("".join(cur))
            cur = []
            if text.startswith(("&&", "||", ";;"), i):
                i += 1
        else:
            cur.append(ch)
        i += 1
    if quote:
        return None
    pieces.append("".join(cur))
    out = []
    for piece in pieces:
        piece = piece.strip()
        while True:
            stripped = _KEYWORDS.sub("", piece, count=1).strip()
            if stripped == piece:
                break
            piece = stripped
        if piece and piece not in ("esac", "fi", "done", "}", "then", "do", "else"):
            out.append(piece)
    return out


def _node(node: Any, scope: _Scope, depth: int, via: str,
          upstream: list[Command]) -> Iterator[Command]:
    kind = node.kind
    if kind == "command":
        yield from _command(node, scope, depth, via, upstream)
    elif kind == "pipeline":
        seen: list[Command] = []
        for part in node.parts:
            if part.kind == "pipe":
                continue
            out = list(_node(part, scope, depth, via, list(seen)))
            yield from out
            seen.extend(c for c in out if c.depth == depth and c.via == via)
    elif kind == "function":
        name = node.parts[0].word
        scope.functions[name] = node
        if _spawns_self(node.parts[1:], name):
            yield Command(argv=[f"{name}()"], opaque=[False], cwd=scope.cwd, depth=depth,
                          via=via, fork_bomb=True)
        for part in node.parts[1:]:
            if part.kind not in ("reservedword",):
                yield from _node(part, scope, depth, via, upstream)
    elif kind == "for":
        yield from _for(node, scope, depth, via)
    elif kind in ("list", "compound", "if", "while", "until"):
        parts = node.list if kind == "compound" else node.parts
        for part in parts:
            yield from _node(part, scope, depth, via, upstream)
        for redirect in getattr(node, "redirects", None) or ():
            yield from _node(redirect, scope, depth, via, upstream)
    elif kind in ("reservedword", "operator", "pipe", "word", "tilde", "parameter",
                  "redirect", "heredoc", "assignment"):
        return
    else:
        raise ShellParseError(f"unsupported shell construct {kind!r}")


def _spawns_self(parts: list[Any], name: str) -> bool:
    """Does a function body call itself through a pipe, in the background, or twice?"""
    calls = 0
    piped = background = False

    def visit(node: Any, in_pipeline: bool) -> None:
        nonlocal calls, piped, background
        kind = getattr(node, "kind", "")
        if kind == "command":
            words = [p for p in node.parts if p.kind == "word"]
            if words and words[0].word == name:
                calls += 1
                piped = piped or in_pipeline
        if kind == "operator" and node.op == "&":
            background = True
        for child in (getattr(node, "parts", None) or []) + (getattr(node, "list", None) or []):
            visit(child, in_pipeline or kind == "pipeline")

    for part in parts:
        visit(part, False)
    return calls >= 2 or (calls >= 1 and (piped or background))


def _for(node: Any, scope: _Scope, depth: int, via: str) -> Iterator[Command]:
    parts = node.parts
    var = parts[1].word
    values: list[str] = []
    i = 2
    if i < len(parts) and parts[i].kind == "reservedword" and parts[i].word == "in":
        i += 1
        while i < len(parts) and parts[i].kind == "word":
            values.append(_expand(parts[i], scope, depth)[0])
            i += 1
    body = [p for p in parts[i:] if p.kind not in ("reservedword",)]
    for value in values[:16] or [""]:
        scope.env[var] = value
        for part in body:
            yield from _node(part, scope, depth, via, [])


def _expand(word: Any, scope: _Scope, depth: int,
            subs: list[Command] | None = None) -> tuple[str, bool]:
    """A word's value and whether part of it is unknown."""
    text: str = word.word
    opaque = False
    outputs: list[str] = []
    for part in getattr(word, "parts", None) or ():
        if part.kind in ("commandsubstitution", "processsubstitution"):
            inner = list(_node(part.command, scope, depth, "substitution", []))
            if subs is not None:
                subs.extend(inner)
            # $(echo /), $(dirname /x): output known without running anything.
            top = [c for c in inner if c.depth == depth]
            known = _literal_output(top[-1]) if len(top) == 1 and \
                part.kind == "commandsubstitution" else None
            if known is None:
                opaque = True
            outputs.append((known or "").strip())
    if outputs:
        text = _strip_substitutions(text, outputs)

    def var(m: re.Match[str]) -> str:
        nonlocal opaque
        name = m.group(1) or m.group(4)
        op, alt = m.group(2), m.group(3)
        if name == "HOME":
            return scope.home
        if name in scope.env:
            value = scope.env[name]
            return alt if op and "+" in op and alt is not None else value
        if (op and "-" in op) or (op and "=" in op):
            return alt or ""
        opaque = True
        if op and "?" in op:
            # ${VAR:?} aborts when VAR is unset or empty: never the empty string.
            return f"<{name}>"
        return ""

    has_params = any(p.kind == "parameter" for p in getattr(word, "parts", None) or ())
    if has_params or "$" in text:
        text = _VAR.sub(var, text)
    if text == "~" or text.startswith("~/"):
        text = scope.home + text[1:]
    elif text.startswith("~") and re.match(r"~[A-Za-z_][\w.-]*(/|$)", text):
        user, _, rest = text[1:].partition("/")
        text = posixpath.join(posixpath.dirname(scope.home.rstrip("/")) or "/", user)
        text = text + ("/" + rest if rest else "")
    return text, opaque


def _strip_substitutions(text: str, outputs: list[str]) -> str:
    """``text`` with its substitutions replaced, in order, by ``outputs``."""
    out = []
    i = 0
    pending = iter(outputs)
    while i < len(text):
        if text.startswith(("$(", "<(", ">("), i):
            level = 0
            j = i + 1
            while j < len(text):
                if text[j] == "(":
                    level += 1
                elif text[j] == ")":
                    level -= 1
                    if level == 0:
                        break
                j += 1
            i = j + 1
            out.append(next(pending, ""))
            continue
        if text[i] == "`":
            j = text.find("`", i + 1)
            i = len(text) if j < 0 else j + 1
            out.append(next(pending, ""))
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def _command(node: Any, scope: _Scope, depth: int, via: str,
             upstream: list[Command]) -> Iterator[Command]:
    argv: list[str] = []
    opaque: list[bool] = []
    redirects: list[tuple[str, str]] = []
    subs: list[Command] = []
    stdin_text: str | None = None
    assignments: list[tuple[str, str]] = []
    for part in node.parts:
        if part.kind == "assignment":
            value, _ = _expand(part, scope, depth, subs)
            m = _ASSIGNMENT.match(value)
            if m:
                assignments.append((m.group(1), m.group(3)))
        elif part.kind == "word":
            value, unknown = _expand(part, scope, depth, subs)
            argv.append(value)
            opaque.append(unknown)
        elif part.kind == "redirect":
            rtype = part.type
            target = part.output
            if getattr(part, "heredoc", None) is not None:
                body = part.heredoc.value
                delim = target.word if hasattr(target, "word") else ""
                lines = body.split("\n")
                if lines and lines[-1].strip() == delim:
                    lines = lines[:-1]
                stdin_text = "\n".join(lines)
            elif rtype == "<<<" and hasattr(target, "word"):
                stdin_text = _expand(target, scope, depth, subs)[0]
            elif hasattr(target, "word"):
                redirects.append((rtype, _expand(target, scope, depth, subs)[0]))
    for name, value in assignments:
        scope.env[name] = value
    yield from subs
    if not argv:
        if redirects:  # a bare `> /dev/sda` still writes
            yield Command(argv=[], opaque=[], cwd=scope.cwd, redirects=redirects,
                          depth=depth, via=via)
        return
    if stdin_text is None and upstream:
        stdin_text = _literal_output(upstream[-1])
    cmd = Command(argv=argv, opaque=opaque, cwd=scope.cwd, redirects=redirects,
                  stdin_text=stdin_text, upstream=upstream, substitutions=subs,
                  depth=depth, via=via)
    cmd = _unwrap(cmd)
    if cmd.name in _ASSIGNING:
        for word in cmd.args:
            m = _ASSIGNMENT.match(word)
            if m:
                scope.env[m.group(1)] = m.group(3)
    if cmd.name == "cd" and cmd.args:
        target = cmd.args[-1]
        scope.cwd = posixpath.normpath(posixpath.join(scope.cwd or "/", target))
    elif cmd.name == "unset":
        for word in cmd.args:
            scope.env.pop(word, None)
    yield cmd
    yield from _nested(cmd, scope, depth)


def _literal_output(cmd: Command) -> str | None:
    """What ``cmd`` writes to stdout when that is literal (echo, printf, cat <<EOF)."""
    if cmd.name == "echo":
        words = [w for w in cmd.args if not re.fullmatch(r"-[neE]+", w)]
        return " ".join(words)
    if cmd.name == "printf" and cmd.args:
        text = " ".join(cmd.args)
        return text.replace("\\n", "\n").replace("\\t", "\t")
    if cmd.name == "cat" and not cmd.args and cmd.stdin_text is not None:
        return cmd.stdin_text
    ops = [a for a in cmd.args if not a.startswith("-")]
    if cmd.name == "dirname" and len(ops) == 1 and not any(cmd.opaque):
        return posixpath.dirname(ops[0].rstrip("/")) or "/"
    if cmd.name == "basename" and ops and not any(cmd.opaque):
        return posixpath.basename(ops[0].rstrip("/"))
    if cmd.name == "pwd" and cmd.cwd:
        return cmd.cwd
    return None


def _unwrap(cmd: Command) -> Command:
    """Strip wrappers (sudo rm -> rm), remembering them."""
    for _ in range(8):
        name = cmd.name
        if name not in _WRAPPERS or len(cmd.argv) < 2:
            return cmd
        takes_arg = _WRAPPERS[name]
        i = 1
        while i < len(cmd.argv):
            word = cmd.argv[i]
            if name == "env" and _ASSIGNMENT.match(word):
                i += 1
            elif word == "--":
                i += 1
                break
            elif word.startswith("-") and len(word) > 1:
                i += 2 if (word in takes_arg) else 1
            elif name == "timeout" and re.fullmatch(r"[\d.]+[smhd]?", word):
                i += 1
                break
            elif name in ("nice", "chrt") and word.isdigit():
                i += 1
            else:
                break
        if i >= len(cmd.argv):
            return cmd
        if name == "xargs" and cmd.stdin_text is not None:
            extra = cmd.stdin_text.split()
            cmd.argv = cmd.argv[i:] + extra
            cmd.opaque = cmd.opaque[i:] + [False] * len(extra)
        else:
            if name == "xargs" and cmd.upstream:
                cmd.argv, cmd.opaque = [*cmd.argv[i:], ""], [*cmd.opaque[i:], True]
            else:
                cmd.argv, cmd.opaque = cmd.argv[i:], cmd.opaque[i:]
        cmd.wrappers.append(name)
    return cmd


def shell_script_of(cmd: Command) -> tuple[str, str] | None:
    """The script a shell/eval command runs, with how it got it; None if unknown."""
    name = cmd.name
    if name == "eval":
        return " ".join(cmd.args), "eval"
    # `$SHELL -c ...` / `$(which bash) -c ...`: a computed name with -c is a shell.
    computed = bool(cmd.opaque and cmd.opaque[0]) and "-c" in cmd.args
    if computed or name in SHELLS or re.fullmatch(r"(ba|z|da|k)?sh\d*(\.\d+)?", name):
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


def _nested(cmd: Command, scope: _Scope, depth: int) -> Iterator[Command]:
    found = shell_script_of(cmd)
    if found is None:
        return
    script, via = found
    inner = _Scope(env=dict(scope.env), home=scope.home, cwd=scope.cwd,
                   functions=dict(scope.functions))
    yield from _script(script, inner, depth + 1, via)
