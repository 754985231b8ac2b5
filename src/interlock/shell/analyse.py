"""A shell script, seen as the simple commands it would run.

The destructive-command guard and the path sandbox both ask "what would this
command line execute, and on which paths?". Substring matching cannot answer
that (``grep 'rm -rf' notes.txt`` is harmless, ``r''m -rf ~`` is not), so this
module parses the script with tree-sitter's bash grammar and walks the tree:

- every simple command in lists, pipelines, compound commands, loops,
  ``case``, functions, command and process substitutions;
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

tree-sitter never fails: text it cannot read becomes ERROR or MISSING nodes.
A script that contains one comes back, whole, as a command with ``unparsed``
set, and its commands are still walked as well as they can be; callers
decide what the unparsed text means (the guard blocks it if it looks dangerous).
:class:`ShellParseError` is raised only for scripts nested deeper than
:data:`MAX_DEPTH` (``bash -c`` in ``eval`` ...) or too deep for the walk.
"""

from __future__ import annotations

import functools
import posixpath
from collections.abc import Iterator, Mapping
from typing import Any

from interlock.shell import expand, words
from interlock.shell.expand import node_text as _text
from interlock.shell.model import (
    _ASSIGNMENT,
    INSTALL_HINT,
    MAX_DEPTH,
    SHELLS,
    Command,
    Scope,
    ShellParseError,
    apply_state,
    assign,
    find_roots,
    is_shell,
    listed,
    read_into,
    read_names,
    require_parser,
    shell_script_of,
)
from interlock.shell.output import UNKNOWN_OUTPUT, joined_output, literal_output
from interlock.shell.wrappers import unwrap

__all__ = ["INSTALL_HINT", "MAX_DEPTH", "SHELLS", "Command", "ShellParseError", "find_roots",
           "is_shell", "parse", "require_parser", "shell_script_of"]

_ASSIGNING = frozenset({"export", "declare", "typeset", "local", "readonly"})
def parse(script: str, *, env: Mapping[str, str] | None = None, home: str = "~",
          cwd: str = "") -> list[Command]:
    """Every simple command ``script`` would run, in order.

    Results are cached (the guard and the sandbox parse the same command):
    treat the returned commands as read-only.
    """
    return list(_parse_cached(script, tuple(sorted((env or {}).items())), home, cwd))


@functools.lru_cache(maxsize=512)
def _parse_cached(script: str, env: tuple[tuple[str, str], ...], home: str,
                  cwd: str) -> tuple[Command, ...]:
    scope = Scope(env=dict(env), home=home, cwd=cwd)
    try:
        return tuple(_script(script, scope, 0, ""))
    except RecursionError:
        # The walk recurses per level of nesting (`$($($(...)))`, `{ { ... } }`).
        raise ShellParseError("the script is nested too deeply to check", script) from None


def _script(script: str, scope: Scope, depth: int, via: str) -> Iterator[Command]:
    if depth > MAX_DEPTH:
        raise ShellParseError(f"scripts nested more than {MAX_DEPTH} deep")
    if not script.strip():
        return
    script = words.join_continuations(script)
    root = require_parser().parse(script.encode("utf-8", "surrogateescape")).root_node
    if root.has_error:
        # The whole script, not the broken statement: an error can cut a
        # command in two (`rm -rf 'x` parses as `rm -rf` then an ERROR).
        yield Command(argv=[], opaque=[], cwd=scope.cwd, depth=depth, via=via,
                      unparsed=script, error=_syntax_error(root))
    misread = scope.misread
    for stmt in root.named_children:
        yield from _node(stmt, scope, depth, via, [])
    if scope.misread > misread and not root.has_error:
        yield Command(argv=[], opaque=[], cwd=scope.cwd, depth=depth, via=via,
                      unparsed=script, error="misread: an unquoted word spans lines")


def _syntax_error(node: Any) -> str:
    """Where the first ERROR or MISSING node is, for the message."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.is_missing:
            return f"syntax error: missing {n.type!r}"
        if n.type == "ERROR":
            return f"syntax error near {_text(n)[:40]!r}"
        stack.extend(reversed([c for c in n.children if c.has_error]))
    return "syntax error"


# Nodes that only hold statements: walked child by child.
_CONTAINERS = frozenset({
    "program", "list", "compound_statement", "subshell", "if_statement", "elif_clause",
    "else_clause", "while_statement", "do_group", "case_statement", "case_item",
    "negated_command", "c_style_for_statement", "ERROR",
})
# Nodes that are (parts of) words: only their substitutions run anything.
_WORDS = frozenset({
    "word", "string", "raw_string", "ansi_c_string", "translated_string", "concatenation",
    "simple_expansion", "expansion", "command_substitution", "process_substitution",
    "arithmetic_expansion", "number", "brace_expression", "array", "string_content",
})
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_RESERVED = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until",
                       "for", "select", "case", "esac", "in", "function", "{", "}", "!",
                       "[[", "]]"})


def _node(node: Any, scope: Scope, depth: int, via: str,
          upstream: list[Command]) -> Iterator[Command]:
    kind = node.type
    if kind == "command":
        yield from _command(node, [], scope, depth, via, upstream)
    elif kind == "redirected_statement":
        yield from _redirected(node, scope, depth, via, upstream)
    elif kind in _REDIRECTS:  # `$(> /dev/sda)`: a redirection with no command
        yield from _with_redirects(None, [node], scope, depth, via, upstream)
    elif kind == "pipeline":
        yield from _pipeline(node.named_children, scope, depth, via, list(upstream))
    elif kind in ("declaration_command", "unset_command"):
        yield from _declaration(node, scope, depth, via)
    elif kind in ("variable_assignment", "variable_assignments"):
        subs: list[Command] = []
        for name, op, value, unknown in _assignments(node, scope, depth, subs):
            assign(scope, name, op, value, unknown)
        yield from subs
    elif kind == "function_definition":
        yield from _function(node, scope, depth, via, upstream)
    elif kind == "for_statement":
        yield from _for(node, scope, depth, via)
    elif kind == "while_statement":
        yield from _while(node, scope, depth, via, upstream, None)
    elif kind == "test_command":
        yield from _test(node, scope, depth, via)
    elif kind in _WORDS:
        subs = []
        _expand(node, scope, depth, subs)
        yield from subs
    elif kind == "list":
        # `a && b && c` nests to the left, one level per operator: walked flat, so a
        # long chain costs no deeper generator stack than a short one.
        for part in _flatten_list(node):
            yield from _node(part, scope, depth, via, upstream)
    elif kind in _CONTAINERS or node.named_child_count:
        # Unknown kinds are walked too: a command inside one still counts.
        for child in node.named_children:
            if child.type not in ("comment", "variable_name"):
                yield from _node(child, scope, depth, via, upstream)


def _flatten_list(node: Any) -> list[Any]:
    parts: list[Any] = []
    while node.type == "list":
        children = [c for c in node.named_children if c.type != "comment"]
        if not children:
            break
        parts[:0] = children[1:]
        node = children[0]
    else:
        parts.insert(0, node)
        return parts
    return parts


def _pipeline(parts: list[Any], scope: Scope, depth: int, via: str,
              seen: list[Command]) -> Iterator[Command]:
    """Each part, knowing the commands earlier in the pipeline (they feed its stdin)."""
    for part in parts:
        if part.type == "comment":
            continue
        out = list(_node(part, scope, depth, via, list(seen)))
        yield from out
        seen.extend(c for c in out if c.depth == depth and c.via == via)


def _redirected(node: Any, scope: Scope, depth: int, via: str,
                upstream: list[Command]) -> Iterator[Command]:
    body = node.child_by_field_name("body")
    redirects = [c for c in node.named_children if c.type in _REDIRECTS]
    yield from _with_redirects(body, redirects, scope, depth, via, upstream)


def _with_redirects(body: Any, redirects: list[Any], scope: Scope, depth: int, via: str,
                    upstream: list[Command]) -> Iterator[Command]:
    """``body`` run with ``redirects``.

    tree-sitter hangs a redirection written after ``a && b`` or ``a | b`` on
    the whole list or pipeline; bash gives it to the last command, and so
    does this.
    """
    kind = body.type if body is not None else ""
    if kind == "command":
        yield from _command(body, redirects, scope, depth, via, upstream)
        return
    if kind == "redirected_statement":
        inner = [c for c in body.named_children if c.type in _REDIRECTS]
        yield from _with_redirects(body.child_by_field_name("body"), inner + redirects, scope,
                                   depth, via, upstream)
        return
    parts = [c for c in body.named_children if c.type != "comment"] \
        if kind in ("list", "pipeline") else []
    if parts:
        seen = list(upstream)
        if kind == "list":
            for part in parts[:-1]:
                yield from _node(part, scope, depth, via, upstream)
        else:
            yield from _pipeline(parts[:-1], scope, depth, via, seen)
        yield from _with_redirects(parts[-1], redirects, scope, depth, via, seen)
        return
    # A compound command with redirections: the body runs, and the
    # redirections are checked as a command of their own.
    if body is not None and kind == "while_statement":
        fed: list[Command] = []
        stdin = _stdin_of(redirects, scope, depth, fed)
        yield from fed
        yield from _while(body, scope, depth, via, upstream, stdin)
    elif body is not None:
        yield from _node(body, scope, depth, via, upstream)
    bare = Command(argv=[], opaque=[], cwd=scope.cwd, depth=depth, via=via)
    then: list[Any] = []
    subs: list[Command] = []
    for redirect in redirects:
        _redirect(redirect, bare, scope, depth, subs, then)
    yield from subs
    if bare.redirects:
        yield bare
    yield from _continue(then, bare, scope, depth, via)


def _redirect(node: Any, cmd: Command, scope: Scope, depth: int, subs: list[Command],
              then: list[Any]) -> None:
    """Record one redirection on ``cmd``; words after a file redirection's target
    are more arguments (``cat > out file``); what follows a heredoc's opening
    line (``| sh``, ``&& next``) goes to ``then``."""
    if node.type == "herestring_redirect":
        word = node.named_children[-1] if node.named_child_count else None
        if word is not None:
            text = _expand(word, scope, depth, subs)[0]
            cmd.stdin_text = None if text == UNKNOWN_OUTPUT else text
        return
    if node.type == "heredoc_redirect":
        for child in node.named_children:
            if child.type == "heredoc_body":
                _expand_inner(child, scope, depth, subs)  # $(...) in the body runs
                cmd.stdin_text = _text(child).removesuffix("\n")
            elif child.type == "file_redirect":
                _redirect(child, cmd, scope, depth, subs, then)
            elif child.type in _WORDS:  # `cat <<EOF file`: more arguments
                value, unknown = _expand(child, scope, depth, subs)
                cmd.argv.append(value)
                cmd.opaque.append(unknown)
            elif child.type not in ("heredoc_start", "heredoc_end"):
                then.append(child)
        return
    op = next((c.type for c in node.children if not c.is_named), ">")
    targets = node.children_by_field_name("destination")
    if not targets:
        return
    first, *extra = targets
    if not (first.type == "number" and "&" in op):  # 2>&1 duplicates a descriptor
        cmd.redirects.append((op, _expand(first, scope, depth, subs)[0]))
    for word in extra:
        value, unknown = _expand(word, scope, depth, subs)
        cmd.argv.append(value)
        cmd.opaque.append(unknown)


def _continue(then: list[Any], cmd: Command, scope: Scope, depth: int,
              via: str) -> Iterator[Command]:
    for node in then:
        if node.type == "pipeline":
            yield from _pipeline(node.named_children, scope, depth, via, [cmd])
        else:
            yield from _node(node, scope, depth, via, [])


def _function(node: Any, scope: Scope, depth: int, via: str,
              upstream: list[Command]) -> Iterator[Command]:
    name_node = node.child_by_field_name("name")
    body = node.child_by_field_name("body")
    name = _text(name_node) if name_node is not None else ""
    scope.functions[name] = node
    if body is None:
        return
    if _spawns_self(body, name):
        yield Command(argv=[f"{name}()"], opaque=[False], cwd=scope.cwd, depth=depth,
                      via=via, fork_bomb=True)
    yield from _node(body, scope, depth, via, upstream)


def _spawns_self(body: Any, name: str) -> bool:
    """Does a function body call itself through a pipe, in the background, or twice?"""
    calls = 0
    piped = background = False

    def visit(node: Any, in_pipeline: bool) -> None:
        nonlocal calls, piped, background
        if node.type == "command":
            called = node.child_by_field_name("name")
            if called is not None and _text(called) == name:
                calls += 1
                piped = piped or in_pipeline
        elif node.type == "&" and not node.is_named:
            background = True
        for child in node.children:
            visit(child, in_pipeline or node.type == "pipeline")

    visit(body, False)
    return calls >= 2 or (calls >= 1 and (piped or background))


def _for(node: Any, scope: Scope, depth: int, via: str) -> Iterator[Command]:
    var_node = node.child_by_field_name("variable")
    var = _text(var_node) if var_node is not None else ""
    subs: list[Command] = []
    values: list[str] = []
    for word in node.children_by_field_name("value"):
        value, unknown = _expand(word, scope, depth, subs)
        # An unquoted expansion splits into words: `for d in $DIRS`.
        values.extend(value.split() if word.type != "string" and not unknown else [value])
    yield from subs
    body = node.child_by_field_name("body")
    for value in values[:16] or [""]:
        scope.env[var] = value
        if body is not None:
            yield from _node(body, scope, depth, via, [])


def _stdin_of(redirects: list[Any], scope: Scope, depth: int,
              subs: list[Command]) -> str | None:
    """The text a compound command reads on stdin: ``<<< text``, ``< <(echo /)``."""
    for redirect in redirects:
        if redirect.type == "herestring_redirect" and redirect.named_child_count:
            return _expand(redirect.named_children[-1], scope, depth, subs)[0]
        if redirect.type == "heredoc_redirect":
            body = next((c for c in redirect.named_children if c.type == "heredoc_body"), None)
            return _text(body) if body is not None else None
        targets = redirect.children_by_field_name("destination")
        if redirect.type == "file_redirect" and targets and \
                targets[0].type == "process_substitution":
            inner: list[Command] = []
            for child in targets[0].named_children:
                inner.extend(_node(child, scope, depth, "substitution", []))
            subs.extend(inner)
            return joined_output([c for c in inner if c.depth == depth])
    return None


def _while(node: Any, scope: Scope, depth: int, via: str, upstream: list[Command],
           stdin: str | None) -> Iterator[Command]:
    """``... | while read x; do ...; done``: the body once per line read, when known."""
    cond = node.child_by_field_name("condition")
    body = node.child_by_field_name("body")
    names = None
    if cond is not None and cond.type == "command":
        called = cond.child_by_field_name("name")
        if called is not None and _text(called) == "read":
            probe = Command(argv=[], opaque=[], cwd=scope.cwd)
            for child in cond.children_by_field_name("argument"):
                _word_fields(child, probe, scope, depth, [])
            names = read_names(probe.argv)
    if names is None or body is None:
        for child in node.named_children:
            if child.type != "comment":
                yield from _node(child, scope, depth, via, upstream)
        return
    lines: list[str | None] = [None]
    if stdin is None and upstream:
        stdin = literal_output(upstream[-1])
        if stdin is None:
            stdin = listed(upstream[-1])
    if stdin is not None:
        lines = [*[line for line in stdin.splitlines() if line.strip()][:16]] or [None]
    for line in lines:
        read_into(scope, names, line)
        yield from _node(body, scope, depth, via, [])


def _test(node: Any, scope: Scope, depth: int, via: str) -> Iterator[Command]:
    """``[[ -f x ]]`` runs nothing, but its words name paths (seen as ``test ...``)."""
    subs: list[Command] = []
    argv, opaque = ["test"], [False]
    stack = list(reversed(node.named_children))
    while stack:
        child = stack.pop()
        if child.type in _WORDS:
            value, unknown = _expand(child, scope, depth, subs)
            argv.append(value)
            opaque.append(unknown)
        elif child.type == "unary_expression" and child.child_count == 2 and \
                child.children[0].type == "~":
            # The grammar reads `[ -f ~/x ]` as arithmetic not (`~`) of `/x`.
            value, unknown = _expand(child.children[1], scope, depth, subs)
            argv.append(words.tilde("~" + value, scope.home))
            opaque.append(unknown)
        else:
            stack.extend(reversed(child.named_children))
    yield from subs
    yield Command(argv=argv, opaque=opaque, cwd=scope.cwd, depth=depth, via=via)


def _assignments(node: Any, scope: Scope, depth: int,
                 subs: list[Command]) -> Iterator[tuple[str, str, str, bool]]:
    """(name, '=' or '+=', expanded value, unknown) of each variable_assignment in ``node``."""
    nodes = [node] if node.type == "variable_assignment" else [
        c for c in node.named_children if c.type == "variable_assignment"]
    for assignment in nodes:
        name_node = assignment.child_by_field_name("name")
        value_node = assignment.child_by_field_name("value")
        if name_node is None:
            continue
        name = _text(name_node).split("[", 1)[0]
        op = "+=" if any(c.type == "+=" for c in assignment.children) else "="
        value, unknown = _expand(value_node, scope, depth, subs) if value_node is not None \
            else ("", False)
        if value == UNKNOWN_OUTPUT:
            value = ""
        yield name, op, value, unknown


def _declaration(node: Any, scope: Scope, depth: int, via: str) -> Iterator[Command]:
    """``export X=1``, ``local -r Y=$(pwd)``, ``unset X``: a command like any other."""
    argv = [_text(node.children[0])]
    opaque = [False]
    subs: list[Command] = []
    for child in node.named_children:
        if child.type == "variable_assignment":
            for name, op, value, unknown in _assignments(child, scope, depth, subs):
                argv.append(f"{name}{op}{value}")
                opaque.append(unknown)
        elif child.type == "variable_name":
            argv.append(_text(child))
            opaque.append(False)
        elif child.type != "comment":
            value, unknown = _expand(child, scope, depth, subs)
            argv.append(value)
            opaque.append(unknown)
    yield from subs
    cmd = Command(argv=argv, opaque=opaque, cwd=scope.cwd, substitutions=subs, depth=depth,
                  via=via)
    yield from _finish(cmd, scope, depth)


def _command(node: Any, redirects: list[Any], scope: Scope, depth: int, via: str,
             upstream: list[Command]) -> Iterator[Command]:
    cmd = Command(argv=[], opaque=[], cwd=scope.cwd, upstream=upstream, depth=depth, via=via)
    subs: list[Command] = []
    then: list[Any] = []
    assignments: list[tuple[str, str, str, bool]] = []
    for child in node.named_children:
        kind = child.type
        if kind == "variable_assignment":
            assignments.extend(_assignments(child, scope, depth, subs))
        elif kind in _REDIRECTS:
            _redirect(child, cmd, scope, depth, subs, then)
        elif kind != "comment":
            inner = child
            if kind == "command_name":
                inner = child.named_children[0] if child.named_child_count else child
            _word_fields(inner, cmd, scope, depth, subs)
    for redirect in redirects:
        _redirect(redirect, cmd, scope, depth, subs, then)
    for name, op, value, unknown in assignments:
        assign(scope, name, op, value, unknown)
    yield from subs
    cmd.substitutions = subs
    if cmd.argv:
        if cmd.stdin_text is None and upstream:
            cmd.stdin_text = literal_output(upstream[-1])
        yield from _finish(cmd, scope, depth)
    elif cmd.redirects:  # a bare `> /dev/sda` still writes
        yield cmd
    yield from _continue(then, cmd, scope, depth, via)


def _finish(cmd: Command, scope: Scope, depth: int) -> Iterator[Command]:
    """Unwrap ``cmd``, apply what it does to the shell's state, then its nested script."""
    unwrap(cmd)
    if cmd.wrappers[-1:] == ["coproc"]:
        # tree-sitter reads `coproc [NAME] { cmd; }` as words: drop NAME and `{`.
        brace = cmd.argv.index("{") if "{" in cmd.argv[:2] else -1
        cmd.argv, cmd.opaque = cmd.argv[brace + 1:], cmd.opaque[brace + 1:]
    # tree-sitter reads some broken scripts (`sudo if true; then rm -rf /; fi`)
    # as commands named `then`, `do` ...: bash refuses them, the guard checks
    # what follows the keyword.
    while len(cmd.argv) > 1 and cmd.argv[0] in _RESERVED and not cmd.opaque[0]:
        cmd.argv, cmd.opaque = cmd.argv[1:], cmd.opaque[1:]
        unwrap(cmd)
    if cmd.argv and not cmd.opaque[0] and cmd.argv[0] in scope.aliases and \
            cmd.argv[0] not in scope.calling:
        yield from _alias(cmd, scope, depth)
        return
    if cmd.name in _ASSIGNING:
        for word, unknown in zip(cmd.args, cmd.opaque[1:], strict=False):
            m = _ASSIGNMENT.match(word)
            if m:
                assign(scope, m.group(1), m.group(2), m.group(3), unknown)
    if cmd.name in ("cd", "pushd") and cmd.args and not cmd.args[-1].startswith(("-", "+")):
        target = cmd.args[-1]
        scope.cwd = posixpath.normpath(posixpath.join(scope.cwd or "/", target))
    elif cmd.name == "unset":
        for word in cmd.args:
            scope.env.pop(word, None)
    apply_state(cmd, scope)
    yield cmd
    if cmd.argv and cmd.argv[0] in scope.functions and not cmd.opaque[0]:
        yield from _call(cmd, scope, depth)
    yield from _nested(cmd, scope, depth)


def _alias(cmd: Command, scope: Scope, depth: int) -> Iterator[Command]:
    """An alias defined earlier, expanded as bash would (its text, then the words)."""
    import shlex

    name = cmd.argv[0]
    text = scope.aliases[name] + " " + shlex.join(cmd.args)
    outer = scope.calling
    scope.calling = (*outer, name)
    try:
        yield from _script(text, scope, depth + 1, "alias")
    finally:
        scope.calling = outer


def _call(cmd: Command, scope: Scope, depth: int) -> Iterator[Command]:
    """A function defined earlier, run with its arguments as ``$1 ...``."""
    name = cmd.argv[0]
    if name in scope.calling or depth + len(scope.calling) > MAX_DEPTH:
        return
    body = scope.functions[name].child_by_field_name("body")
    if body is None:
        return
    outer, positional = scope.calling, scope.positional
    scope.calling, scope.positional = (*outer, name), list(cmd.args)
    try:
        yield from _node(body, scope, depth, "function", [])
    finally:
        scope.calling, scope.positional = outer, positional


def _expand(word: Any, scope: Scope, depth: int,
            subs: list[Command] | None = None) -> tuple[str, bool]:
    return expand.expand(word, scope, depth, subs, _node)


def _expand_inner(node: Any, scope: Scope, depth: int, subs: list[Command]) -> None:
    expand.expand_inner(node, scope, depth, subs, _node)


def _word_fields(node: Any, cmd: Command, scope: Scope, depth: int,
                 subs: list[Command]) -> None:
    expand.word_fields(node, cmd, scope, depth, subs, _node)


def _nested(cmd: Command, scope: Scope, depth: int) -> Iterator[Command]:
    found = shell_script_of(cmd)
    if found is None:
        return
    script, via = found
    inner = Scope(env=dict(scope.env), home=scope.home, cwd=scope.cwd,
                   functions=dict(scope.functions))
    yield from _script(script, inner, depth + 1, via)
