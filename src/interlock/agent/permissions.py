"""Declarative permission rules: the policy of non-interactive runs.

A rule names a tool (a glob on the tool name, so ``mcp__github__*`` works) and
a glob on the call's subject (the terminal command, a file path, else the
arguments as JSON): ``PermissionRule("terminal", "git *", "allow")``.
When several rules match, the strictest wins: deny > ask > allow.
"""

from __future__ import annotations

import enum
import fnmatch
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from interlock._errors import ConfigError


class Action(enum.StrEnum):
    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


_STRENGTH = {Action.ALLOW: 0, Action.ASK: 1, Action.DENY: 2}


@dataclass(frozen=True, slots=True)
class PermissionRule:
    """One rule: tool name glob, argument glob, action."""

    tool: str
    """Glob on the tool name: ``terminal``, ``mcp__github__*``, ``*``."""
    pattern: str = "*"
    """Glob on the call's subject (see :func:`subject_of`)."""
    action: Action | str = Action.ASK
    """allow, ask or deny."""

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "action", Action(self.action))
        except ValueError:
            raise ConfigError(f"unknown permission action {self.action!r}", field="action",
                              fix="use allow, ask or deny") from None

    def matches(self, tool: str, subject: str) -> bool:
        return fnmatch.fnmatchcase(tool, self.tool) and fnmatch.fnmatchcase(
            subject, self.pattern)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "permissions") -> PermissionRule:
        if not isinstance(data, Mapping) or not isinstance(data.get("tool"), str):
            raise ConfigError("a permission rule needs a 'tool' string", field=where,
                              fix='write {tool = "terminal", pattern = "git *", '
                                  'action = "allow"}')
        return cls(str(data["tool"]), str(data.get("pattern", "*")),
                   str(data.get("action", "ask")))

    def to_dict(self) -> dict[str, str]:
        return {"tool": self.tool, "pattern": self.pattern, "action": str(self.action)}


def subject_of(tool: str, args: Mapping[str, Any]) -> str:
    """The text a rule's pattern is matched against."""
    for key in ("command", "path", "task", "title"):
        value = args.get(key)
        if isinstance(value, str):
            return value
    return json.dumps(dict(args), sort_keys=True, default=str)


class PermissionPolicy:
    """An ordered list of rules plus the ones hooks or people added this session."""

    def __init__(self, rules: Iterable[PermissionRule | Any] = ()) -> None:
        self.rules: list[PermissionRule] = [self._coerce(r) for r in rules]

    @staticmethod
    def _coerce(rule: Any) -> PermissionRule:
        if isinstance(rule, PermissionRule):
            return rule
        if isinstance(rule, Mapping):
            return PermissionRule.from_dict(rule)
        # Rules from the registry (issue 3) have the same three attributes.
        return PermissionRule(rule.tool, rule.pattern, str(getattr(rule.action, "value",
                                                                   rule.action)))

    def add(self, rule: PermissionRule | Mapping[str, Any]) -> None:
        self.rules.append(self._coerce(rule))

    def decide(self, tool: str, args: Mapping[str, Any]) -> Action | None:
        """The strictest action of the matching rules; None when none match."""
        subject = subject_of(tool, args)
        best: Action | None = None
        for rule in self.rules:
            if rule.matches(tool, subject):
                action = Action(rule.action)
                if best is None or _STRENGTH[action] > _STRENGTH[best]:
                    best = action
        return best
