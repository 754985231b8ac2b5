"""Consent for a repository's ``[[permissions]]`` rules.

A project's rules are one consent item, ``project:permissions``, approved like
a hook (`interlock hooks approve`, ``--accept-hooks``) and pinned to a digest
of its allow and ask rules: until then those do not apply. Its deny rules
apply at once (a deny never needs consent), and like a fail-closed hook they
are remembered per project: a reload or a restart that removes or weakens one
keeps it in force until an operator approves the change (docs/configuration.md,
Trust).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from interlock.config import mcp_servers
from interlock.config.model import PermissionRule
from interlock.config.trust import TrustStore, hook_key
from interlock.engine.logs import logger
from interlock.engine.sha import sha256
from interlock.store.paths import project_dir

log = logger("interlock.registry")

NAME = "project:permissions"
"""The consent item (and the withheld entry) of a project's rules."""
ALIASES = (NAME, "permissions")


class RulesConsent(msgspec.Struct):
    """The project's permission rules and what became of them (`hooks list` shows it)."""

    key: str
    digest: str
    approved: bool
    declared: list[PermissionRule] = msgspec.field(default_factory=list)
    """The project's rules as written."""
    withheld: list[PermissionRule] = msgspec.field(default_factory=list)
    """Deny rules a change removed or weakened, kept in force until an operator approves."""

    @property
    def name(self) -> str:
        return NAME

    @property
    def needs_approval(self) -> bool:
        """Only allow and ask rules wait for consent."""
        return any(r.action != "deny" for r in self.declared)

    @property
    def pending(self) -> bool:
        return self.needs_approval and not self.approved

    @property
    def state(self) -> str:
        if not self.declared and not self.withheld:
            return "none"
        if self.needs_approval and not self.approved:
            return "deny rules only (allow and ask rules wait for approval)"
        return "active"

    def to_dict(self) -> dict[str, Any]:
        return {"name": NAME, "approved": self.approved or not self.needs_approval,
                "needs_approval": self.needs_approval, "state": self.state,
                "digest": self.digest, "rules": len(self.declared),
                "withheld": [_pair(r) for r in self.withheld]}


def _pair(r: PermissionRule) -> list[str]:
    return [r.tool, r.pattern]


def is_project(rule: PermissionRule) -> bool:
    return rule.source.startswith("project:")


def digest(rules: list[PermissionRule]) -> str:
    """sha256 over the allow and ask rules (order does not matter: the strictest wins)."""
    items = sorted({(r.tool, r.pattern, r.action) for r in rules if r.action != "deny"})
    return sha256(json.dumps(items).encode()).hexdigest()


def consent(rules: list[PermissionRule], project: Path,
            approved: Callable[[str, str], bool]) -> RulesConsent:
    """The consent item of the project's rules in ``rules`` (``approved(key, digest)``)."""
    mine = [r for r in rules if is_project(r)]
    key = hook_key(NAME, project)
    dig = digest(mine)
    return RulesConsent(key, dig, approved(key, dig), mine)


def project_rules(trust: TrustStore, rules: list[PermissionRule], project_root: Path, *,
                  accept: bool, operator: bool,
                  baseline: dict[str, dict[str, Any]] | None) -> RulesConsent:
    """The consent of a revision's project rules: approved (with ``accept``) and, unless
    an ``operator`` releases them, the baseline's deny rules the project dropped."""
    c = consent(rules, project_dir(project_root), trust.approved)
    if accept and c.pending and not trust.revoked(c.key, c.digest):
        log.warning("approving the project's permission rules because of --accept-hooks / "
                    "INTERLOCK_ACCEPT_HOOKS")
        trust.approve([(c.key, c.digest, NAME)], by="accept-hooks")
        c.approved = True
    if not operator:
        withhold_denies(c, (baseline or {}).get(NAME))
    return c


def in_force(rules: list[PermissionRule], c: RulesConsent) -> list[PermissionRule]:
    """The rules that apply: everyone else's, the project's denies, and its allow and
    ask rules once approved; then the withheld denies."""
    keep = [r for r in rules
            if not is_project(r) or r.action == "deny" or c.approved]
    return [*keep, *c.withheld]


def withhold_denies(c: RulesConsent, baseline: dict[str, Any] | None) -> bool:
    """Keep the deny rules of ``baseline`` that the project no longer has. True if any."""
    if baseline is None:
        return False
    now = {(r.tool, r.pattern) for r in c.declared if r.action == "deny"}
    for tool, pattern in baseline.get("denies", []):
        if (tool, pattern) not in now:
            c.withheld.append(PermissionRule(
                tool=tool, pattern=pattern, action="deny",
                source=f"{NAME} (withheld: removing it needs `interlock hooks approve "
                       f"{NAME}`)"))
    return bool(c.withheld)


def guard(c: RulesConsent) -> dict[str, Any]:
    """What the baseline keeps of the project's rules: its deny rules in force."""
    denies = {(r.tool, r.pattern) for r in [*c.declared, *c.withheld] if r.action == "deny"}
    return {"denies": sorted([t, p] for t, p in denies)}


def consent_name(name: str) -> str | None:
    """The consent item ``name`` means besides hooks (project:permissions,
    project:mcp_servers), or None."""
    if name in ALIASES:
        return NAME
    if name in mcp_servers.ALIASES:
        return mcp_servers.NAME
    return None
