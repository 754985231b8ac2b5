"""Refuse, at `bridge install`, a policy the agent would silently not apply.

Some agents ignore every answer but context on some events (Hermes's
``post_tool_call``, Moltis's ``AfterToolCall``): a rewrite Interlock's
hooks make there, such as a redacted tool result, cannot be applied, nor
turned into a deny that stops the original. The bridge says so at run time
where it can, but the original still reaches the model, so installing a
bridge in front of such a hook is refused with the hook's name and a fix
(docs/dialects.md, Conformance).
"""

from __future__ import annotations

from pathlib import Path

from interlock.engine.catalog import from_alias
from interlock.engine.errors import ConfigError


def unfit(agent: str, project: Path, host_events: tuple[str, ...]) -> list[str]:
    """What the project's configured hooks rewrite on ``host_events`` that ``agent``
    cannot apply there, one line per hook and event."""
    from interlock.hosts.bridge import host
    from interlock.hosts.bridge.conformance import applies

    ignored: frozenset[str] = getattr(host(agent), "DENY_IGNORED", frozenset())
    watched: dict[str, tuple[str, list[str]]] = {}
    for he in host_events:
        if he not in ignored:
            continue  # a rewrite the host cannot apply is denied there, not dropped
        for spec in from_alias(agent, he):
            dropped = [f for f in spec.mutable if not applies(agent, he, spec.name, f)]
            if dropped:
                watched[spec.name] = (he, dropped)
    if not watched:
        return []
    from interlock.config.registry import close_engine, open_engine

    try:
        engine, registry = open_engine(project)
    except ConfigError:
        return []  # the bridge denies on a broken configuration anyway
    try:
        out = []
        for entry in registry.hooks:
            if not (entry.enabled and entry.definition.modifies):
                continue
            for event in entry.declared.events:
                if event in watched:
                    he, fields = watched[event]
                    out.append(f"hook {entry.definition.name!r} may rewrite {event} "
                               f"({', '.join(fields)}), which {agent} cannot apply on {he}")
        return out
    finally:
        close_engine(engine, registry, timeout=5.0)


def check(agent: str, project: Path, host_events: tuple[str, ...]) -> None:
    """Raise a ConfigError naming each hook whose rewrite ``agent`` would drop."""
    problems = unfit(agent, project, host_events)
    if problems:
        raise ConfigError(
            f"the {agent} bridge cannot apply this project's rewrites: " + "; ".join(problems)
            + f"; the original would reach {agent} unchanged",
            field="hooks",
            fix=(f"move the rewrite to an event {agent} applies (Moltis: tool_result_persist), "
                 f"disable the hook, or bridge another agent (docs/dialects.md, Conformance)"))
