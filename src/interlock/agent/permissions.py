"""Declarative permission rules: the policy of non-interactive runs.

There is one rule type, :class:`interlock.config.model.PermissionRule`: the
one ``[[permissions]]`` in a config file becomes, the one ``--allow``/``--deny``
flags and hooks' ``permission_updates`` produce. A rule names a tool (a glob on
the tool name, so ``mcp__github__*`` works) and a glob on the call's subject
(the terminal command, a file path, else the arguments as JSON):
``rule("terminal", "git *", "allow")``. When several rules match, the strictest
wins: deny > ask > allow.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import msgspec

from interlock._errors import ConfigError
from interlock.config.model import PermissionRule

__all__ = ["Action", "PermissionPolicy", "PermissionRule", "rule", "rule_from_dict",
           "subject_of"]


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


def subject_of(tool: str, args: Mapping[str, Any]) -> str:
    """The text a rule's pattern is matched against."""
    for key in ("command", "path", "task", "title"):
        value = args.get(key)
        if isinstance(value, str):
            return value
    return json.dumps(dict(args), sort_keys=True, default=str)


class PermissionPolicy:
    """An ordered list of rules plus the ones hooks or people added this session.

    ``live`` supplies rules read at every decision: the registry's current
    revision, so an edit of ``[[permissions]]`` applies to a running agent the
    moment the registry reloads.
    """

    def __init__(self, rules: Iterable[PermissionRule | Mapping[str, Any]] = (), *,
                 live: Callable[[], Iterable[PermissionRule]] | None = None) -> None:
        self.rules: list[PermissionRule] = [self._coerce(r) for r in rules]
        self.live = live

    @staticmethod
    def _coerce(item: PermissionRule | Mapping[str, Any]) -> PermissionRule:
        if isinstance(item, PermissionRule):
            if item.action not in tuple(Action):
                raise ConfigError(f"unknown permission action {item.action!r}",
                                  field="permissions.action", fix="use allow, ask or deny")
            return item
        return rule_from_dict(item)

    def add(self, item: PermissionRule | Mapping[str, Any]) -> None:
        self.rules.append(self._coerce(item))

    def decide(self, tool: str, args: Mapping[str, Any]) -> Action | None:
        """The strictest action of the matching rules; None when none match."""
        subject = subject_of(tool, args)
        best: Action | None = None
        rules = self.rules if self.live is None else [*self.live(), *self.rules]
        for r in rules:
            if r.matches(tool, subject):
                action = Action(r.action)
                if best is None or _STRENGTH[action] > _STRENGTH[best]:
                    best = action
        return best
