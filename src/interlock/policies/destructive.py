"""The destructive-command guard: would this shell command wreck something?

It parses the command (:mod:`interlock.shell.analyse`) into the simple
commands bash would run, with variables, functions, aliases, braces, tildes,
``set --``, ``while read`` loops and wrappers resolved, and checks each one
against the rules of :mod:`~interlock.policies.guard_fs` (files, disks,
processes, git) and :mod:`~interlock.policies.guard_code` (programs fed to a
shell or interpreter, inline code, databases). The categories, their options
and the guard's stance are in docs/guard.md.

Where the guard cannot tell (a target computed by a command it cannot see
into, text of unknown origin fed to ``sh``, a script that cannot be parsed),
its stance decides: ``when_unsure = "block"`` by default, and the reason says
it could not tell.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from interlock.policies import guard_fs as fs
from interlock.policies.guard_code import (
    DB_CLIENTS,
    DOWNLOADERS,
    SQL_CLIENTS,
    database,
    fork_bomb,
    pipe_exec,
    record_writes,
)
from interlock.policies.guard_model import (
    CATEGORIES,
    PROTECTED_BRANCHES,
    SYSTEM_DIRS,
    Context,
    Finding,
    GuardOptions,
    critical_dir,
    operands,
)
from interlock.shell.analyse import Command, ShellParseError, parse

__all__ = ["CATEGORIES", "DOWNLOADERS", "PROTECTED_BRANCHES", "SQL_CLIENTS", "SUSPICIOUS",
           "SYSTEM_DIRS", "Finding", "GuardOptions", "check", "check_cached"]

SUSPICIOUS = re.compile(
    r"\brm\b|\bmkfs|\bdd\b|\bchmod\b|\bchown\b|\bgit\b.*\bpush\b|\bcurl\b|\bwget\b|"
    r"\bDROP\b|\bTRUNCATE\b|:\s*\(\s*\)|\beval\b|\bbase64\b|/dev/|\bshred\b|\bwipefs\b|"
    r"\bfind\b.*-delete|\bsh\b|\bbash\b|\bmv\b|\bexec\b|\$\((?!\()|`|\bsudo\b|\bfork\b|"
    r"\bkill\b|\brsync\b|\btruncate\b|\bpython|\bperl\b|\bruby\b|\bnode\b",
    re.I | re.S)
MAX_NESTED_CHECKS = 4
"""Shell text inside inline code inside ... is checked this deep."""


def check(command: str, *, home: str = "/root", cwd: str = "",
          env: Mapping[str, str] | None = None,
          protected_branches: Iterable[str] = PROTECTED_BRANCHES,
          current_branch: Callable[[str], str | None] | None = None,
          options: GuardOptions | None = None) -> Finding | None:
    """The first destructive thing ``command`` would do, or None.

    ``options`` carries every setting (docs/guard.md); without it, ``home``,
    ``protected_branches`` and ``current_branch`` build the defaults.
    ``current_branch(cwd)`` names the branch checked out in ``cwd``, so that
    ``git push --force`` with no branch named (or ``HEAD``) is judged by the
    branch it would push; without it, such a push counts as protected.
    """
    if options is None:
        options = GuardOptions(home=home, protected_branches=tuple(protected_branches),
                               current_branch=current_branch)
    return _check(command, cwd, Context(options), env)


_CACHE_SIZE = 1024
_decisions: OrderedDict[tuple[Any, ...], Finding | None] = OrderedDict()
_cache_lock = threading.Lock()


def check_cached(command: str, cwd: str, options: GuardOptions) -> Finding | None:
    """:func:`check`, with verdicts kept for commands seen before (an agent retries
    and the same command comes through every hook).

    A verdict depends on the command, the directory and the options, and on two
    things outside them: the branch checked out (for ``git push``), which is part
    of the key, and SQL files read by a client, whose verdicts are never kept.
    """
    branch = options.current_branch(cwd) if options.current_branch is not None and \
        "push" in command else None
    key = (command, cwd, options, branch)
    with _cache_lock:
        if key in _decisions:
            _decisions.move_to_end(key)
            return _decisions[key]
    ctx = Context(options)
    found = _check(command, cwd, ctx)
    if not ctx.volatile[0]:
        with _cache_lock:
            _decisions[key] = found
            if len(_decisions) > _CACHE_SIZE:
                _decisions.popitem(last=False)
    return found


def _check(command: str, cwd: str, ctx: Context,
           env: Mapping[str, str] | None = None) -> Finding | None:
    try:
        commands = parse(command, env=env, home=ctx.home, cwd=cwd)
    except ShellParseError as exc:
        if SUSPICIOUS.search(exc.text or command):
            return ctx.unsure("unparseable", f"could not parse a command that looks "
                              f"dangerous ({exc}); rewrite it plainly")
        return None
    for cmd in commands:
        for rule in _rules_for(cmd):
            found = rule(cmd, ctx)
            if found is not None:
                return found
        found = pipe_exec(cmd, ctx, _nested_check)
        if found is not None:
            return found
        if cmd.redirects or cmd.name in _WRITERS:
            record_writes(cmd, ctx)
    return _fork_bomb_text(command, ctx)


def _nested_check(text: str, cwd: str, ctx: Context) -> Finding | None:
    """Shell text found inside code (``os.system("...")``), checked like a command."""
    if ctx.depth >= MAX_NESTED_CHECKS:
        return None
    return _check(text, cwd, Context(ctx.options, dict(ctx.written), ctx.depth + 1,
                                     ctx.volatile))


def _unparsed(cmd: Command, ctx: Context) -> Finding | None:
    if cmd.unparsed is not None and SUSPICIOUS.search(cmd.unparsed):
        return ctx.unsure("unparseable", f"could not parse {cmd.unparsed.strip()[:80]!r}, "
                          f"which looks dangerous ({cmd.error}); rewrite it plainly")
    return None


def _opaque_name(cmd: Command, ctx: Context) -> Finding | None:
    """A command whose name is hidden (``$(cmd) -rf /``) aimed at a protected path."""
    if not cmd.opaque or not cmd.opaque[0]:
        return None
    for target in operands(cmd.args):
        hit = critical_dir(target, ctx.home, cmd.cwd)
        if hit is not None:
            return ctx.unsure("rm-critical", f"a command whose name is computed at run time "
                              f"targets {hit}", hit)
    return None


Rule = Callable[[Command, Context], "Finding | None"]
# Which rules can fire on a command, by its name: checking only those keeps a
# long script cheap. The case table and tests/policies/test_guard.py (one command per
# category) fail if a rule is missing for a name it handles.
_BY_NAME: dict[str, tuple[Rule, ...]] = {}
for _rule, _names in (
        (fs.rm, fs.REMOVERS),
        (fs.find, {"find"} | fs.DELETERS),
        (fs.mv, {"mv"}),
        (fs.chmod, {"chmod", "chown", "chgrp", "setfacl"}),
        (fs.disk, fs.DISK_TOOLS),
        (fs.files, fs.FILE_WRITERS),
        (fs.rsync, {"rsync"}),
        (fs.kill, fs.KILLERS),
        (fs.git_push, {"git"}),
        (database, DB_CLIENTS)):
    for _name in _names:
        _BY_NAME[_name] = (*_BY_NAME.get(_name, ()), _rule)
_WRITERS = frozenset({"tee", *DOWNLOADERS})


def _rules_for(cmd: Command) -> tuple[Rule, ...]:
    name = cmd.name
    rules = _BY_NAME.get(name, ())
    if name.startswith(fs.FORMATTERS) and fs.disk not in rules:
        rules = (*rules, fs.disk)
    if cmd.redirects:
        rules = (*rules, *(r for r in (fs.disk, fs.files) if r not in rules))
    if cmd.unparsed is not None:
        rules = (_unparsed, *rules)
    if cmd.opaque and cmd.opaque[0]:
        rules = (*rules, _opaque_name)
    if cmd.fork_bomb:
        rules = (*rules, fork_bomb)
    if ("xargs" in cmd.wrappers or "parallel" in cmd.wrappers) and fs.find not in rules:
        rules = (*rules, fs.find)
    return rules


def _fork_bomb_text(command: str, ctx: Context) -> Finding | None:
    if re.search(r"\bfork\s+while\s+fork\b|while\s*\(\s*1\s*\)\s*\{?\s*fork", command):
        return ctx.finding("fork-bomb", "an endless fork loop", "fork")
    return None
