"""What bash does to a word after reading it: braces, tildes, field splitting,
and the escapes of ``printf`` and ``echo -e``.

Pure functions on text, used by :mod:`interlock.shell.analyse`. Globs are
not expanded here: the guard matches a glob against the paths it protects
(:func:`glob_matches`), which holds whatever is on this machine's disk, and
the path sandbox expands them against the file system.
"""

from __future__ import annotations

import functools
import posixpath
import pwd
import re

MAX_WORDS = 64
"""A word expands to at most this many words (``{1..100000}`` stays cheap)."""

_SEQUENCE = re.compile(r"^(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?$")


def join_continuations(script: str) -> str:
    """``script`` with every backslash-newline removed where bash removes it:
    outside single quotes (``r\\<newline>m`` is ``rm``)."""
    if "\\\n" not in script:
        return script
    out: list[str] = []
    i = 0
    n = len(script)
    single = False
    while i < n:
        c = script[i]
        if single:
            out.append(c)
            single = c != "'"
            i += 1
            continue
        if c == "'" and not (i and script[i - 1] == "$"):
            single = True
        if c == "\\" and i + 1 < n:
            if script[i + 1] == "\n":
                i += 2
                continue
            out.append(script[i:i + 2])
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def braces(word: str) -> list[str]:
    """Brace expansion: ``/{etc,usr}`` -> ``/etc /usr``; ``{1..3}`` -> ``1 2 3``."""
    if "{" not in word or "}" not in word:
        return [word]
    out = _braces(word)
    return out[:MAX_WORDS] if out else [word]


def _braces(word: str) -> list[str]:
    start = word.find("{")
    while start >= 0:
        depth = 0
        commas: list[int] = []
        for j in range(start, len(word)):
            ch = word[j]
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    inner = word[start + 1:j]
                    pre, post = word[:start], word[j + 1:]
                    if commas:
                        parts, last = [], start + 1
                        for k in commas:
                            parts.append(word[last:k])
                            last = k + 1
                        parts.append(word[last:j])
                    else:
                        seq = _sequence(inner)
                        if seq is None:
                            break
                        parts = seq
                    tails = _braces(post)
                    found: list[str] = []
                    for part in parts:
                        for expanded in _braces(pre + part):
                            found.extend(expanded + t for t in tails)
                            if len(found) > MAX_WORDS:
                                return found
                    return found
            elif ch == "," and depth == 1:
                commas.append(j)
        start = word.find("{", start + 1)
    return [word]


def _sequence(inner: str) -> list[str] | None:
    m = _SEQUENCE.match(inner)
    if m is None:
        return None
    a, b, step_text = m.group(1), m.group(2), m.group(3)
    step = abs(int(step_text)) if step_text else 1
    step = step or 1
    if a.lstrip("-").isdigit() and b.lstrip("-").isdigit():
        lo, hi = int(a), int(b)
        rng = range(lo, hi + 1, step) if lo <= hi else range(lo, hi - 1, -step)
        return [str(x) for x in rng[:MAX_WORDS]]
    if len(a) == 1 and len(b) == 1 and a.isalpha() and b.isalpha():
        lo, hi = ord(a), ord(b)
        rng = range(lo, hi + 1, step) if lo <= hi else range(lo, hi - 1, -step)
        return [chr(x) for x in rng[:MAX_WORDS]]
    return None


@functools.lru_cache(maxsize=256)
def user_home(user: str) -> str:
    """``~user``: the home in the password database, else ``/home/user``.

    Bash leaves ``~nosuchuser`` as it is; the guard assumes the user may exist
    where it runs (a container with other accounts), which errs toward blocking.
    """
    try:
        return pwd.getpwnam(user).pw_dir or "/"
    except (KeyError, OSError):
        return f"/home/{user}"


@functools.lru_cache(maxsize=1)
def known_homes() -> frozenset[str]:
    """Every account's home that is a real home (not ``/``, not ``/nonexistent``)."""
    homes = set()
    try:
        for entry in pwd.getpwall():
            home = posixpath.normpath(entry.pw_dir or "/")
            if home.startswith(("/home/", "/Users/", "/root")) or home == "/root":
                homes.add(home)
    except OSError:
        pass
    return frozenset(homes)


_TILDE_USER = re.compile(r"~([A-Za-z_][\w.-]*)(/|$)")


def tilde(text: str, home: str) -> str:
    """``~`` and ``~user`` at the start of ``text``."""
    if text == "~" or text.startswith("~/"):
        return home + text[1:]
    if text.startswith("~"):
        m = _TILDE_USER.match(text)
        if m is not None:
            return user_home(m.group(1)) + text[m.end(1):]
    return text


def split_fields(value: str, ifs: str | None) -> list[str]:
    """Field splitting of an unquoted expansion (``IFS`` unset: blanks)."""
    if ifs is None:
        ifs = " \t\n"
    if not ifs:
        return [value]
    blanks = "".join(c for c in ifs if c in " \t\n")
    others = "".join(c for c in ifs if c not in " \t\n")
    pattern = "[" + re.escape(others) + "]" if others else None
    pieces = [value]
    if pattern is not None:
        pieces = re.split(pattern, value)
    out: list[str] = []
    for piece in pieces:
        out.extend(piece.split() if blanks else [piece])
    return [p for p in out if p][:MAX_WORDS]


_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|0[0-7]{0,3}|[0-7]{1,3}|u[0-9A-Fa-f]{1,4}|.)", re.S)
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f",
                   "v": "\v", "e": "\x1b", "\\": "\\", "'": "'", '"': '"'}


def unescape(text: str, *, bare_octal: bool = True) -> str:
    """The backslash escapes of ``printf`` (``bare_octal``) and ``echo -e``."""

    def one(m: re.Match[str]) -> str:
        code = m.group(1)
        head = code[0]
        if head == "x":
            return chr(int(code[1:], 16))
        if head == "u":
            return chr(int(code[1:], 16))
        if head.isdigit():
            digits = code[1:] if head == "0" and not bare_octal else code
            return chr(int(digits or "0", 8) & 0xFF)
        return _SIMPLE_ESCAPES.get(head, "\\" + head)

    return _ESCAPE.sub(one, text)


def printf(args: list[str]) -> str:
    """What ``printf FORMAT ARGS...`` prints (``%s``, ``%b``, ``%d``, ``%q``, ``%%``)."""
    if not args:
        return ""
    fmt, rest = args[0], list(args[1:])
    out: list[str] = []
    for _ in range(MAX_WORDS):
        text, used = _format(fmt, rest)
        out.append(text)
        rest = rest[used:]
        if not rest or not used:
            break
    return "".join(out)


def _format(fmt: str, args: list[str]) -> tuple[str, int]:
    """One pass of ``fmt`` over ``args``: the text and how many args it used."""
    used = 0

    def conv(m: re.Match[str]) -> str:
        nonlocal used
        spec = m.group(1)
        if spec == "%":
            return "%"
        value = args[used] if used < len(args) else ""
        used += 1
        return unescape(value) if spec == "b" else value

    return unescape(re.sub(r"%[-+ #0-9.]*([sbdiqcuxXo%])", conv, fmt)), used


def glob_matches(pattern: str, path: str) -> bool:
    """Does the glob ``pattern`` (``*`` not crossing ``/``) match ``path``?"""
    pat = [p for p in pattern.split("/") if p]
    parts = [p for p in path.split("/") if p]
    if len(pat) != len(parts):
        return False
    return all(_component(p, q) for p, q in zip(pat, parts, strict=True))


@functools.lru_cache(maxsize=1024)
def _component_re(pattern: str) -> re.Pattern[str]:
    import fnmatch

    return re.compile(fnmatch.translate(pattern))


def _component(pattern: str, name: str) -> bool:
    if not has_glob(pattern):
        return pattern == name
    if name.startswith(".") and not pattern.startswith("."):
        return False
    return _component_re(pattern).match(name) is not None


def has_glob(text: str) -> bool:
    return any(c in text for c in "*?[")
