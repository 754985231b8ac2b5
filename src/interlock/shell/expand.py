"""One bash word's value: quotes removed, variables, ``~`` and braces expanded,
command substitutions walked for what they run (and, where it is known
without running anything, their output).

Part of :mod:`interlock.shell.analyse`, which hands its node walker in as
``walk`` so a substitution inside a word is read like any other script.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from interlock.shell import words
from interlock.shell.model import Command, Scope, decode_ansi_c, positional_value
from interlock.shell.output import UNKNOWN_OUTPUT, joined_output

Walk = Callable[[Any, Scope, int, str, list[Command]], Iterator[Command]]
"""``walk(node, scope, depth, via, upstream)``: the commands a syntax node runs."""

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:\[[^\]]*\])?(?:(:?[-=?+])([^}]*))?\}"
                  r"|\$([A-Za-z_][A-Za-z0-9_]*)")


def node_text(node: Any) -> str:
    return bytes(node.text).decode("utf-8", "surrogateescape")


_SPECIAL = re.compile(r"[\\~{}$`'\"\n]")
_SPLIT_KINDS = frozenset({"simple_expansion", "expansion", "command_substitution"})


def word_fields(node: Any, cmd: Command, scope: Scope, depth: int,
                subs: list[Command], walk: Walk) -> None:
    """Append the words ``node`` becomes to ``cmd``: bash splits an unquoted
    expansion on IFS (``c="rm -rf ~"; $c``), expands braces (``/{etc,usr}``),
    and ``"$@"`` / ``"${a[@]}"`` become one word per element."""
    kind = node.type
    text = node_text(node)
    if kind == "word" and not _SPECIAL.search(text):
        cmd.argv.append(text)  # a plain word is itself: most words of most commands
        cmd.opaque.append(False)
        return
    value, unknown = expand(node, scope, depth, subs, walk)
    parts = [kind] if kind != "concatenation" else [c.type for c in node.named_children]
    fields = [value]
    if any(p in _SPLIT_KINDS for p in parts) and value != UNKNOWN_OUTPUT:
        fields = words.split_fields(value, scope.env.get("IFS"))
    elif ("$@" in text or "[@]}" in text or "${@}" in text) and value:
        fields = value.split()
    if "{" in text and "}" in text and kind in ("word", "concatenation", "brace_expression"):
        fields = [words.tilde(b, scope.home) for f in fields for b in words.braces(f)]
    if not fields and unknown:
        fields = [""]
    for f in fields[:words.MAX_WORDS]:
        cmd.argv.append(f)
        cmd.opaque.append(unknown)


_DQ_ESCAPE = re.compile(r"\\([\"\\$`\n])")
_UNQUOTED_ESCAPE = re.compile(r"\\(.)", re.S)
_SIMPLE_VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")


def expand(word: Any, scope: Scope, depth: int, subs: list[Command] | None,
           walk: Walk) -> tuple[str, bool]:
    """A word's value and whether part of it is unknown."""
    state = _Word(scope, depth, subs if subs is not None else [], walk)
    value = words.tilde(state.value(word, quoted=False), scope.home)
    if not value and state.unknown_output:
        return UNKNOWN_OUTPUT, True
    return value, state.opaque


def expand_inner(node: Any, scope: Scope, depth: int, subs: list[Command],
                 walk: Walk) -> None:
    """Walk the substitutions inside ``node`` (a heredoc body) for what they run."""
    for child in node.named_children:
        if child.type in ("command_substitution", "process_substitution"):
            expand(child, scope, depth, subs, walk)


class _Word:
    """One word's expansion: its text, gathered piece by piece."""

    def __init__(self, scope: Scope, depth: int, subs: list[Command], walk: Walk) -> None:
        self.scope = scope
        self.walk = walk
        self.depth = depth
        self.subs = subs
        self.opaque = False
        self.unknown_output = False
        """A command substitution's output was unknown."""

    def value(self, node: Any, *, quoted: bool) -> str:
        kind = node.type
        if kind == "word":
            text = node_text(node).replace("\\\n", "")
            if "\n" in text:
                # No unquoted word holds a newline: tree-sitter-bash 0.25 reads
                # a heredoc whose body starts with `\` this way and loses the body.
                self.scope.misread += 1
            return _UNQUOTED_ESCAPE.sub(r"\1", text)
        if kind == "raw_string":
            return node_text(node)[1:-1]
        if kind == "ansi_c_string":
            return decode_ansi_c(node_text(node)[2:-1])
        if kind == "string_content":
            return _DQ_ESCAPE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1),
                                  node_text(node))
        if kind in ("simple_expansion", "expansion"):
            return self.variable(node)
        if kind in ("command_substitution", "process_substitution"):
            return self.substitution(node)
        if kind == "arithmetic_expansion":
            before = len(self.subs)
            self.pieces(node, quoted=True)
            if len(self.subs) != before:  # $(( $(cmd) )): output unknown
                self.opaque = True
                return ""
            return "0"
        if kind == "array":
            return " ".join(self.value(c, quoted=False) for c in node.named_children
                            if c.type != "comment")
        if kind in ("string", "translated_string"):
            return self.pieces(node, quoted=True)
        return self.pieces(node, quoted=quoted)

    def pieces(self, node: Any, *, quoted: bool) -> str:
        """The children's values, with the text between them kept as written."""
        if not node.child_count:
            return node_text(node)
        out: list[str] = []
        pos = node.start_byte
        src = node.text
        base = node.start_byte
        for child in node.children:
            if not child.is_named:
                pos = child.end_byte  # quotes, $(, ), `...
                continue
            gap = bytes(src[pos - base:child.start_byte - base]).decode("utf-8", "replace")
            if gap:
                out.append(gap)
            out.append(self.value(child, quoted=quoted))
            pos = child.end_byte
        return "".join(out)

    def variable(self, node: Any) -> str:
        text = node_text(node)
        scope = self.scope
        positional = positional_value(text, scope.positional)
        if positional is not None:
            return positional
        m = _VAR.fullmatch(text)
        if m is None:
            # $1, $@, ${#x}, ${x%/*} ...: unknown. $HOME under any operator
            # stays the home directory: what is cut from it still lies inside.
            simple = _SIMPLE_VAR.match(text)
            if simple is not None and simple.group(1) == "HOME":
                return scope.home
            self.opaque = True
            return ""
        name = m.group(1) or m.group(4)
        op, alt = m.group(2), m.group(3)
        if name == "HOME":
            return scope.home
        if name in scope.env:
            value = scope.env[name]
            if name in scope.unknown:
                self.opaque = True
            return alt if op and "+" in op and alt is not None else value
        if (op and "-" in op) or (op and "=" in op):
            return alt or ""
        self.opaque = True
        if op and "?" in op:
            # ${VAR:?} aborts when VAR is unset or empty: never the empty string.
            return f"<{name}>"
        return ""

    def substitution(self, node: Any) -> str:
        inner: list[Command] = []
        for child in node.named_children:
            inner.extend(self.walk(child, self.scope, self.depth, "substitution", []))
        self.subs.extend(inner)
        # $(echo /), $(dirname /x): output known without running anything.
        top = [c for c in inner if c.depth == self.depth]
        known = joined_output(list(top)) if top and \
            node.type == "command_substitution" else None
        if known is None:
            self.opaque = True
            self.unknown_output = True
            return ""
        return known.strip()
