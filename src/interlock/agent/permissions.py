"""Declarative permission rules: the policy of non-interactive runs.

There is one rule type, :class:`interlock.models.tooling.PermissionRule`: the
one ``[[permissions]]`` in a config file becomes, the one ``--allow``/``--deny``
flags and hooks' ``permission_updates`` produce. A rule names a tool (a glob on
the tool name, so ``mcp__github__*`` works) and a glob on the call's subject
(the terminal command, a file path, else the arguments as JSON):
``rule("terminal", "git *", "allow")``. When several rules match, the strictest
wins: deny > ask > allow.

A ``command`` argument is a shell line, and a glob on the whole line is fooled
by its other commands (``true; rm -rf /``, ``git status; curl x | sh``), so it
is also split into its simple commands (:mod:`interlock.shell.split`):

- a deny or ask rule matches when it matches the whole line or any command;
- an allow rule alone no longer decides: the allow rules together cover the
  line only when each command matches one of them, and never a line that could
  not be read whole (a syntax error, a heredoc without the ``shell`` extra ...).
  An allow whose pattern is ``*`` still covers any line: it names no command.

A deny or ask rule also sees what a command runs through another
(:mod:`interlock.shell.inner`): ``sudo rm``, ``bash -c 'rm ...'``, ``eval``,
``xargs rm``, ``find -exec rm``, ``/bin/rm``, as the inner command's words
(``rm -rf /``). Allow rules do not: they read the commands as written, and a
line whose inner commands cannot all be read is covered by none of them while
a deny or ask rule is looking. Scripts in files, aliases from startup files
and other languages' ``system()`` stay out of reach (docs/agent.md, Permissions).

Hosts that run no agent of their own (the framework adapters, the bridges) judge
a tool call with :class:`RuleJudge` after its hooks, and :func:`overrule` says
what the rule's action makes of the hooks' decision (docs/agent.md, Permissions).
"""

from __future__ import annotations

import contextlib
import enum
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from types import ModuleType
from typing import Any

import msgspec

from interlock.engine.decisions import Decision, Verdict
from interlock.engine.errors import ConfigError
from interlock.engine.events import Event
from interlock.engine.hooks import Hook, Source
from interlock.engine.outcome import HookResult, Outcome, Status
from interlock.models.permission import PermissionRule
from interlock.shell.split import CommandLine, split

__all__ = ["RULES_HOOK", "RULE_ASKS", "RULE_DENIES", "Action", "PermissionPolicy", "PermissionRule",
           "RuleJudge", "overrule", "pinnable", "pinned", "rule", "rule_from_dict",
           "rule_outcome", "subject_of"]


class Action(enum.StrEnum):
    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


_STRENGTH = {Action.ALLOW: 0, Action.ASK: 1, Action.DENY: 2}


def rule(tool: str, pattern: str = "*", action: str = "ask", *,
         source: str = "") -> PermissionRule:
    """A checked rule (a struct built directly would take any action string)."""
    return rule_from_dict({"tool": tool, "pattern": pattern, "action": str(action),
                           "source": source})


def rule_from_dict(data: Any, *, where: str = "permissions") -> PermissionRule:
    if not isinstance(data, Mapping) or not isinstance(data.get("tool"), str):
        raise ConfigError("a permission rule needs a 'tool' string", field=where,
                          fix='write {tool = "terminal", pattern = "git *", '
                              'action = "allow"}')
    action = data.get("action", "ask")
    if action not in tuple(Action):
        raise ConfigError(f"unknown permission action {action!r}", field=f"{where}.action",
                          fix="use allow, ask or deny")
    try:
        return msgspec.convert({**data, "action": str(action)}, PermissionRule)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"bad permission rule: {exc}", field=where,
                          fix='write {tool = "terminal", pattern = "git *", '
                              'action = "allow"}') from None


SUBJECT_KEYS = ("command", "path", "task", "title")


def subject_of(tool: str, args: Mapping[str, Any]) -> str:
    """The text a rule's pattern is matched against."""
    for key in SUBJECT_KEYS:
        value = args.get(key)
        if isinstance(value, str):
            return value
    return _as_json(args)


_PINNED: ContextVar[Sequence[PermissionRule] | None] = ContextVar("interlock_pinned_rules",
                                                                 default=None)


@contextlib.contextmanager
def pinned(rules: Sequence[PermissionRule] | None) -> Iterator[None]:
    """Within the block, a :func:`pinnable` source of live rules answers ``rules``:
    those of the revision whose hooks judged the call, not the ones a reload made
    current since (docs/configuration.md, Live reload). None: no pin."""
    if rules is None:
        yield
        return
    token = _PINNED.set(rules)
    try:
        yield
    finally:
        _PINNED.reset(token)


def pinnable(live: Callable[[], Iterable[PermissionRule]]
             ) -> Callable[[], Iterable[PermissionRule]]:
    """``live``, answering the rules :func:`pinned` holds while a block pins them."""
    def read() -> Iterable[PermissionRule]:
        rules = _PINNED.get()
        return live() if rules is None else rules
    return read


def _as_json(args: Mapping[str, Any]) -> str:
    # The text as written: a pattern names "café", not its JSON escape.
    return json.dumps(dict(args), sort_keys=True, default=str, ensure_ascii=False)


def _subjects(args: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """What an allow rule must match (every subject argument present, else the
    JSON) and what a deny or ask rule may match (any of those, and the JSON).

    The model chooses the argument keys: a ``title`` added to a call whose real
    argument is ``text`` must neither hide that argument from a deny rule nor
    stand in for it before an allow rule."""
    present = [v for k in SUBJECT_KEYS if isinstance(v := args.get(k), str)]
    whole = _as_json(args)
    return (present or [whole]), [*present, whole]


class PermissionPolicy:
    """An ordered list of rules plus the ones hooks or people added this session.

    ``live`` supplies rules read at every decision: the registry's current
    revision, so an edit of ``[[permissions]]`` applies to a running agent the
    moment the registry reloads.
    """

    def __init__(self, rules: Iterable[PermissionRule | Mapping[str, Any]] = (), *,
                 live: Callable[[], Iterable[PermissionRule]] | None = None,
                 unmatched: Callable[[str], str | None] | None = None) -> None:
        self.rules: list[PermissionRule] = [self.coerce(r) for r in rules]
        self.live = live
        self.unmatched = unmatched
        """The action for a call that no rule matches, by tool name (None: no
        opinion). The chat gateway denies strangers the tools that change things
        this way: a rule that names a tool for some calls leaves the others
        denied, instead of lifting the default for all of them."""

    @staticmethod
    def coerce(item: PermissionRule | Mapping[str, Any]) -> PermissionRule:
        """A checked rule from a rule or a mapping; ConfigError when it is not one."""
        if isinstance(item, PermissionRule):
            if item.action not in tuple(Action):
                raise ConfigError(f"unknown permission action {item.action!r}",
                                  field="permissions.action", fix="use allow, ask or deny")
            return item
        return rule_from_dict(item)

    def add(self, item: PermissionRule | Mapping[str, Any]) -> None:
        self.rules.append(self.coerce(item))

    def decide(self, tool: str, args: Mapping[str, Any]) -> Action | None:
        """The strictest action of the matching rules; None when none match.

        A command line is judged command by command (see the module docstring).
        """
        rules = self.rules if self.live is None else [*self.live(), *self.rules]
        mine = [r for r in rules if r.matches_tool(tool)]
        best: Action | None = None
        if mine:
            best = self._strictest(mine, tool, args)
        if best is None and self.unmatched is not None:
            fallback = self.unmatched(tool)
            best = Action(fallback) if fallback is not None else None
        return best

    @staticmethod
    def _strictest(mine: list[PermissionRule], tool: str,
                   args: Mapping[str, Any]) -> Action | None:
        """What the rules for this tool say of this call, or None."""
        command = args.get("command")
        # Split the line only when some rule looks at the argument: parsing
        # every terminal call of a run with no such rule is work for nothing.
        line = (split(command) if isinstance(command, str)
                and any(not r.any_argument for r in mine) else None)
        each, anywhere = _subjects(args)
        texts = anywhere if line is None else [*anywhere, *line.commands]
        if line is not None and isinstance(command, str) \
                and any(r.action != "allow" and not r.any_argument for r in mine) \
                and _inner().runs_others(line.commands):
            # What runs through a wrapper or a shell string is for deny and
            # ask rules only; allow rules read the commands as written. A run
            # command that cannot be read leaves the line unread for them too.
            inner = _inner().inner_commands(command)
            texts.extend(inner.commands)
            if not inner.complete:
                line = CommandLine(line.commands, complete=False)
        best: Action | None = None
        allows: list[PermissionRule] = []
        for r in mine:
            action = Action(r.action)
            if action is Action.ALLOW and not r.any_argument:
                if line is not None:
                    allows.append(r)
                elif all(r.matches(tool, text) for text in each) and best is None:
                    best = action
            elif any(r.matches(tool, text) for text in texts) and \
                    (best is None or _STRENGTH[action] > _STRENGTH[best]):
                best = action
        # A command line is in ``each`` first: the subject its allow rules read.
        if best is None and allows and _covers(allows, tool, each[0], line):
            best = Action.ALLOW
        return best


def _covers(allows: list[PermissionRule], tool: str, subject: str,
            line: CommandLine | None) -> bool:
    """True when the allow rules together allow the whole call."""
    if line is None or not line.commands:  # not a command line, or a blank one
        return any(r.matches(tool, subject) for r in allows)
    # In doubt an allow never applies: a line not read whole may run more
    # than its commands show.
    return line.complete and all(any(r.matches(tool, text) for r in allows)
                                 for text in line.commands)


def _inner() -> ModuleType:
    """:mod:`interlock.shell.inner`, imported by the first deny or ask rule with a
    pattern that judges a command (about 8 ms; a project of allow rules never does)."""
    import interlock.shell.inner

    return interlock.shell.inner


RULE_DENIES = "a permission rule denies it"
"""The reason of a tool call a ``deny`` rule refused."""
RULE_ASKS = "a permission rule asks for approval"
"""The reason of a tool call an ``ask`` rule sent to a person."""
RULES_HOOK = "permissions"
"""The ``hook`` named by a decision the rules made, wherever they are judged."""


def overrule(decision: str, action: str | None) -> str | None:
    """What a rule's ``action`` makes of the hooks' ``decision`` on a tool call:
    ``"block"`` or ``"ask"`` in its place, or None when the hooks' stands
    (docs/agent.md, Permissions). ``decision`` is a ``Verdict`` value, or
    ``modify`` for a bare rewrite (as an outcome record has it).

    - ``deny`` blocks the call, even over a hook's ``approve`` or ``ask``; a
      hook's block, respond, skip or stop stands (the call does not run anyway).
    - ``ask`` asks where no hook had an opinion (a rewrite is none); a hook's
      ``approve`` is the approval it asks for, and a hook's ``ask`` keeps its reason.
    - ``allow`` never decides: a call no hook approved goes on to the agent's
      own permission step.
    """
    if action == "deny" and decision in _DENIABLE:
        return "block"
    if action == "ask" and decision in ("none", "modify"):
        return "ask"
    return None


_DENIABLE = frozenset({"none", "modify", "approve", "ask", "retry"})


def _never(event: Event) -> None:
    raise AssertionError("the rules' stand-in hook is never called")  # pragma: no cover


_RULES = Hook(name=RULES_HOOK, events=("before_tool_call",), fn=_never, source=Source.CODE)
"""Who a rule's decision is by in the audit log and metrics (``code:permissions``)."""


def rule_outcome(call: Event, ruled: str, reason: str, revision: int = 0) -> Outcome:
    """What the rules decided of the tool ``call`` (``"block"`` or ``"ask"``, from
    :func:`overrule`) as an outcome of its own, for ``Engine.record``: after the
    hooks' dispatch of the call, the audit log has one row by ``code:permissions``
    saying what the rule made of it (docs/agent.md, Permissions)."""
    verdict = Verdict(ruled)
    decision = Decision(verdict=verdict, reason=reason)
    return Outcome(name=call.name, event=call, verdict=verdict, reason=reason, hook=_RULES,
                   revision=revision, _raw=(HookResult(_RULES, decision, None, 0,
                                                       Status.APPLIED),))


class RuleJudge:
    """What the rules in force say of one tool call (``deny``, ``ask``, ``allow``
    or None), keeping the policy of the rules last judged by: a revision's rules
    are built into a :class:`PermissionPolicy` once, not at every call."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: tuple[tuple[PermissionRule, ...], PermissionPolicy] | None = None

    def action(self, rules: Iterable[PermissionRule], tool: str,
               args: Mapping[str, Any]) -> str | None:
        key = tuple(rules)
        last = self._last
        if last is None or last[0] != key:
            # One assignment: a judge shared by threads never pairs one revision's
            # rules with another's policy.
            last = self._last = (key, PermissionPolicy(key))
        found = last[1].decide(tool, args)
        return found.value if found is not None else None
