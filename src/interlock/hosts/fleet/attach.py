"""`interlock serve --fleet`: share this replica's state through the PostgreSQL store."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from interlock.engine.errors import ConfigError
from interlock.hosts.fleet.shared import Fleet
from interlock.hosts.fleet.state import SharedBreakers, SharedBuckets, SharedTokens, record_revision


class Attached:
    """What a replica shares: keep it for the server's life, then close it."""

    def __init__(self, fleet: Fleet, tokens: SharedTokens, breakers: SharedBreakers) -> None:
        self.fleet = fleet
        self.tokens = tokens
        self.breakers = breakers

    def close(self) -> None:
        from interlock.policies import ratelimit

        ratelimit.SHARED = None
        self.fleet.close()


def fleet_url(store: str | None) -> str:
    if not store or not store.startswith(("postgresql://", "postgres://")):
        raise ConfigError("--fleet shares tokens, breakers and rate limits through the "
                          "PostgreSQL store", field="--store",
                          fix="give --store postgresql://... (or set INTERLOCK_STORE)")
    return store


def attach(store: str | None, registry: Any, *, policy: Callable[[], str]) -> Attached:
    """Share ``registry``'s breakers, the rate limits and the tokens of this replica;
    ``policy()`` names the policy served now (its revision history)."""
    from interlock.hosts.fleet.approvals import share_approvals
    from interlock.policies import ratelimit

    fleet = Fleet(fleet_url(store))
    try:
        share_approvals(fleet, registry)
    except BaseException:
        fleet.close()
        raise
    tokens = SharedTokens(fleet)
    breakers = SharedBreakers(fleet, registry.breakers)
    breakers.load()
    ratelimit.SHARED = SharedBuckets(fleet).take
    dispatches = registry.recording.store.dispatch_prefix if registry.recording else ""
    record_revision(fleet, int(registry.engine.revision), policy(), dispatches)

    def reloaded(result: Any) -> None:
        if result.changed:
            record_revision(fleet, int(result.revision), policy(), dispatches)
            breakers.load()  # a hook new to this replica starts as the fleet has it

    registry.add_listener(reloaded)
    return Attached(fleet, tokens, breakers)


def shared_trust(store: str | None, registry: Any) -> Fleet:
    """For `hooks approve|revoke --fleet`: ``registry`` reads and writes the fleet's
    approvals (no listener); close the returned Fleet when done."""
    from interlock.hosts.fleet.approvals import SharedTrust

    fleet = Fleet(fleet_url(store), listen=False)
    registry.trust = SharedTrust(fleet, registry.state_dir)
    result = registry.reload(operator=True, release=False)
    if result.error is not None:
        fleet.close()
        raise result.error
    return fleet


def shared_tokens(store: str | None) -> SharedTokens:
    """The fleet's tokens, for `serve token ... --fleet` (no listener needed)."""
    return SharedTokens(Fleet(fleet_url(store), listen=False))
