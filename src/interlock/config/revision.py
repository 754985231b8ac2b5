"""One registry revision and what became of each hook in it.

Pure functions over discovered definitions: which references turn hooks on
or off, what shadows what, which fail-closed hooks a revision removed or
weakened (and so keeps blocking until an operator approves), and how two
revisions differ. The registry (:mod:`interlock.config.registry`) drives them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from interlock.config.build import guarded_events, refusal_hook
from interlock.config.drift import PinSet
from interlock.config.mcp_servers import McpServer, ServersConsent
from interlock.config.model import HookDef, HookKind, PermissionRule
from interlock.config.rules import RulesConsent
from interlock.config.sources import Declared, Discovered, Reference
from interlock.config.trust import hook_key
from interlock.engine.errors import ConfigError, FailureMode
from interlock.engine.hooks import Executor, Hook, OnError, Source
from interlock.engine.sha import sha256

if TYPE_CHECKING:
    import asyncio


class HookEntry(msgspec.Struct):
    """One configured hook and what became of it (what `hooks list` shows)."""

    declared: Declared
    digest: str
    enabled: bool
    eligible: bool
    why: str
    """Why it is ineligible (or empty)."""
    approved: bool
    needs_approval: bool
    shadows: str | None = None
    """The qualified name of the hook this one shadows."""
    shadowed_by: str | None = None
    hook: Hook | None = None
    """What is registered: the hook itself, a refusal, or nothing."""
    state: str = ""
    """active, disabled, shadowed, blocking (unapproved/ineligible), skipped (...)."""
    command: str | list[str] | None = None
    """The command with relative paths resolved."""
    files: list[Path] = msgspec.field(default_factory=list)
    """Every file the approval pins: the digest covers them and each call checks
    them (docs/configuration.md, Trust)."""
    pins: PinSet | None = None
    """Those files as read for the digest, checked before each call."""
    options: dict[str, Any] = msgspec.field(default_factory=dict)
    """What the handler's ``configure`` gets: its own options, then a reference's."""
    load_error: ConfigError | None = None
    """Why its Python handler could not be loaded (the hook fails on every call)."""

    @property
    def definition(self) -> HookDef:
        return self.declared.definition

    @property
    def source(self) -> Source:
        return self.declared.source

    @property
    def qualified_name(self) -> str:
        return self.declared.qualified_name

    @property
    def key(self) -> str:
        return hook_key(self.qualified_name, self.declared.file)

    def portable_digest(self, places: dict[str, Path]) -> str:
        """The definition's digest with every path relative to its place (``places``:
        name to folder; the deepest that holds a path names it): the same for this hook
        held at other paths, as on replicas whose projects sit at different places,
        different when its definition or a file it runs differs. Breakers key on it
        (docs/fleet.md, Consistency); approvals keep :attr:`digest`, which names paths."""
        if self.pins is None:
            return self.digest

        def label(path: Path) -> str:
            held = [(len(root.parts), name, path.relative_to(root))
                    for name, root in places.items() if path.is_relative_to(root)]
            if not held:
                return str(path)
            _depth, name, rel = max(held)
            return f"<{name}>/{rel}"

        definition = {**self.definition.normalised(), "source": self.source.label,
                      "declared_in": label(self.declared.file), "options": self.options}
        h = sha256(json.dumps(definition, sort_keys=True, default=str).encode())
        for name, sha in sorted(zip(map(label, self.pins.paths), self.pins.shas,
                                    strict=True)):
            h.update(f"\0file\0{name}\0{sha}".encode())
        return h.hexdigest()

    @property
    def fail_closed(self) -> bool:
        d = self.definition
        return bool(guarded_events(self.declared.events,
                                   None if d.on_error is None else _on_error(d.on_error)))


def _on_error(value: str) -> OnError:
    return OnError(value)


_BUILT_KINDS = frozenset({"command", "worker", "http", "prompt", "agent"})
"""Kinds whose executors are reused across reloads and closed when dropped."""


class Revision(msgspec.Struct):
    entries: list[HookEntry]
    hooks: list[Hook]
    permissions: list[PermissionRule]
    found: Discovered
    guards: dict[str, dict[str, Any]]
    """Fail-closed hooks in force (the new baseline)."""
    withheld: list[str]
    """Fail-closed hooks (and ``project:permissions``) whose removal or weakening
    waits for an operator."""
    rules: RulesConsent | None = None
    """The consent of the project's ``[[permissions]]`` (``permissions`` are those in force)."""
    servers: list[McpServer] = msgspec.field(default_factory=list)
    """The ``[[mcp_servers]]`` that may start (config/mcp_servers.py)."""
    mcp: ServersConsent | None = None
    """The consent of the project's ``[[mcp_servers]]``."""
    number: int = 0

    def executors(self) -> dict[tuple[str, str], Executor]:
        # The executors themselves, not their reliability wrappers: a reload re-wraps
        # them (the breaker state lives in the registry's book), and closing one
        # must reach the process or pool it holds.
        return {(h.qualified_name, h.digest): getattr(h.executor, "inner", h.executor)
                for h in self.hooks if h.executor is not None and h.kind in _BUILT_KINDS}


class ReloadResult(msgspec.Struct):
    ok: bool
    """False when the change was rejected (invalid, or blocked by config_change)."""
    changed: bool
    """True when a new revision became active."""
    revision: int
    files: list[str] = msgspec.field(default_factory=list)
    error: ConfigError | None = None
    blocked: str | None = None
    """The reason a config_change hook gave for blocking the change."""
    withheld: list[str] = msgspec.field(default_factory=list)
    unapproved: list[str] = msgspec.field(default_factory=list)


Options = dict[str, tuple[dict[str, Any], Source]]
"""Qualified name -> (options a reference set, the place that set them)."""


def apply_references(found: Discovered, toggles: dict[str, bool],
                     options: Options | None = None) -> dict[str, bool]:
    """Config entries and CLI toggles that turn hooks on or off -> qualified name: on.

    Options that references set go into ``options`` (the same precedence).
    """
    options = options if options is not None else {}
    allowed: dict[Source, set[Source]] = {
        # Who may turn what on or off. A project must not switch off the
        # user's own guards; nobody but the administrator touches managed hooks.
        Source.MANAGED: {Source.MANAGED, Source.PROJECT, Source.USER, Source.BUNDLED},
        Source.USER: {Source.USER, Source.PROJECT, Source.BUNDLED},
        Source.PROJECT: {Source.PROJECT, Source.BUNDLED},
    }
    out: dict[str, bool] = {}
    # Later entries win: project, then user (a repository cannot undo the
    # user's choice), then the CLI's toggles, then the administrator.
    refs = sorted(found.references, key=lambda r: r.source is Source.USER)
    managed_refs = [r for r in refs if r.source is Source.MANAGED]
    for ref in [r for r in refs if r.source is not Source.MANAGED]:
        _apply(ref, found, allowed, out, options)
    for qname, on in toggles.items():
        if not qname.startswith("managed:"):
            out[qname] = on
    for ref in managed_refs:  # the administrator's word stands
        _apply(ref, found, allowed, out, options)
    return out


def _apply(ref: Reference, found: Discovered, allowed: dict[Source, set[Source]],
           out: dict[str, bool], options: Options) -> None:
    targets = [d for d in found.hooks
               if ref.name in (d.qualified_name, d.definition.name)]
    where: dict[str, Any] = {"file": str(ref.file), "line": ref.line, "field": "enabled"}
    if not targets:
        raise ConfigError(f"no hook named {ref.name!r} to turn on or off",
                          fix="check the name with `interlock hooks list`", **where)
    managed = [d for d in targets if d.source is Source.MANAGED]
    targets = [d for d in targets if d.source in allowed[ref.source]]
    if not targets and managed and ref.enabled is False:
        raise ConfigError(f"{managed[0].qualified_name} is a managed hook and cannot "
                          "be disabled", fix="remove this entry; ask the administrator "
                                             "to change the managed config", **where)
    if not targets:
        raise ConfigError(f"{ref.source.label} config cannot turn {ref.name!r} on or off",
                          fix="change it in the config that declares it", **where)
    if len(targets) > 1:
        raise ConfigError(f"{ref.name!r} names several hooks: "
                          f"{', '.join(d.qualified_name for d in targets)}",
                          fix=f'write name = "{targets[0].qualified_name}"', **where)
    target = targets[0]
    if ref.enabled is not None:
        out[target.qualified_name] = ref.enabled
    if ref.options is not None:
        if target.definition.effective_kind is not HookKind.PYTHON:
            raise ConfigError(f"{target.qualified_name} is a {target.definition.effective_kind}"
                              " hook; only Python handlers take options",
                              fix="remove options (a command hook reads its own config)",
                              **{**where, "field": "options"})
        options[target.qualified_name] = (ref.options, ref.source)



def shadow(entries: list[HookEntry]) -> None:
    """Mark which hooks a same-named hook from a stronger place shadows."""
    by_name: dict[str, list[HookEntry]] = {}
    for e in entries:
        if e.enabled:
            by_name.setdefault(e.definition.name, []).append(e)
    for group in by_name.values():
        group.sort(key=lambda e: int(e.source))
        for i, strong in enumerate(group):
            if strong.source not in (Source.PROJECT, Source.USER) \
                    or strong.shadowed_by is not None:
                continue
            for weak in group[i + 1:]:
                # docs/configuration.md: a project hook shadows a user (or bundled) hook
                # only where that hook says overridable = true.
                if weak.source > strong.source and weak.shadowed_by is None \
                        and weak.definition.overridable:
                    weak.shadowed_by = strong.qualified_name
                    strong.shadows = weak.qualified_name
                    break



def withhold(baseline: dict[str, dict[str, Any]] | None, guards: dict[str, dict[str, Any]],
             hooks: list[Hook]) -> list[str]:
    """Keep removed or weakened fail-closed hooks blocking until an operator approves.

    ``baseline`` holds the guards in force before; each one missing from
    ``guards`` (or with fewer events, or a different matcher) gets a refusal
    in ``hooks`` and stays in ``guards``. Returns their qualified names.
    """
    withheld: list[str] = []
    if baseline is None:
        return withheld
    for qname, old in baseline.items():
        if "events" not in old:  # the project's deny rules (config/rules.py)
            continue
        new = guards.get(qname)
        if new is not None and set(old["events"]) <= set(new["events"]) and (
                new["matcher"] is None or new["matcher"] == old["matcher"]):
            continue
        source_label, _, name = qname.partition(":")
        try:
            source = Source[source_label.upper()]
        except KeyError:
            continue
        what = "removed" if new is None else "weakened"
        hooks.append(refusal_hook(
            name, source, tuple(old["events"]), old["matcher"], FailureMode.UNAPPROVED,
            f"fail-closed hook {qname} was {what}; an operator must approve that: run "
            f"`interlock hooks approve {qname}`"))
        withheld.append(qname)
        guards[qname] = old
    return withheld



def guard_record(e: HookEntry) -> dict[str, Any]:
    h = e.hook
    if h is None or h.background or h.shadow:
        return {"events": [], "matcher": None}
    return {"events": sorted(guarded_events(h.events, h.on_error)),
            "matcher": e.definition.matcher}


def changed_files(old: dict[str, str], new: dict[str, str]) -> list[str]:
    return sorted(p for p in old.keys() | new.keys() if old.get(p) != new.get(p))


def signature(rev: Revision) -> list[tuple[str, str, str]]:
    consents = [(c.name, c.digest, str(c.approved)) for c in (rev.rules, rev.mcp)
                if c is not None]
    return sorted((e.qualified_name, e.digest, e.state) for e in rev.entries) + \
        sorted(("withheld", w, "") for w in rev.withheld) + consents


def summary(old: Revision | None, new: Revision) -> str:
    before = {e.qualified_name: (e.digest, e.state) for e in (old.entries if old else [])}
    after = {e.qualified_name: (e.digest, e.state) for e in new.entries}
    parts = []
    added = sorted(after.keys() - before.keys())
    removed = sorted(before.keys() - after.keys())
    changed = sorted(k for k in after.keys() & before.keys() if after[k] != before[k])
    if added:
        parts.append("added " + ", ".join(added))
    if removed:
        parts.append("removed " + ", ".join(removed))
    if changed:
        parts.append("changed " + ", ".join(changed))
    return "; ".join(parts) or "no hook changed"


_closing: set[asyncio.Task[None]] = set()
"""Closes scheduled on a running loop (kept referenced until they finish)."""


def close_executor(ex: Executor) -> None:
    """Release what an executor holds (processes, connection pools): ``aclose()``."""
    import asyncio

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(ex.aclose())
        return
    # A reload called from async code: close on this loop without blocking it.
    task = loop.create_task(ex.aclose())
    _closing.add(task)
    task.add_done_callback(_closing.discard)
