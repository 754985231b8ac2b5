"""Hook approvals and revocations shared by the replicas (``fleet_approvals``).

With ``serve --fleet`` a replica decides whether a hook is approved from the
fleet's table only: the approvals file of the machine it runs on no longer
counts, so one ``interlock hooks approve|revoke --fleet`` governs every
replica. An approval names the declaring file's path and is pinned to a
digest that includes it, as on one machine: replicas share approvals when they
hold the policy at the same path (``serve --policy`` checks it out under the
state dir; a container image has one layout), and the operator approves from
a replica or a machine laid out the same way.

A revocation keeps its row, marked ``revoked`` with the digest it withdrew, so a
replica run with ``--accept-hooks`` (as ``--policy`` runs) approves content no
one decided, never content an operator revoked; an operator's approval (or new
content) clears it.

Consistency (docs/fleet.md, Consistency): a change is announced in its own
transaction; on the notification every replica reloads its hooks, so a
revocation takes effect everywhere within milliseconds. The table is read
through a cache that a notification empties and that is trusted only while
the listener is connected; otherwise every read goes to PostgreSQL. When
PostgreSQL does not answer, the read raises: a reload then keeps the last
good revision (a revocation cannot have committed meanwhile), and a replica
that is starting refuses to start. Nothing reads as approved without a row.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from interlock.config.trust import Approval, TrustStore
from interlock.engine.errors import ConfigError
from interlock.engine.logs import logger
from interlock.hosts.fleet.shared import Fleet, FleetUnavailable

log = logger("interlock.fleet")

KIND = "approval"
"""The notification of a change to ``fleet_approvals``."""


class SharedTrust(TrustStore):
    """A TrustStore whose approvals live in the fleet's PostgreSQL; the rest (toggles,
    baselines, imports) stays in this machine's state dir. A revocation keeps its row
    (``revoked``, with the digest it withdrew): ``--accept-hooks`` approves content no
    one decided, never content an operator revoked; an operator's approval clears it."""

    def __init__(self, fleet: Fleet, state_dir: Path) -> None:
        super().__init__(state_dir)
        self.fleet = fleet
        self._cache: tuple[dict[str, Approval], dict[str, str]] | None = None
        self._generation = 0
        """Counts forget() calls: a read that a notification overtook is not cached."""
        self._lock = threading.Lock()
        self._told: set[tuple[str, str]] = set()
        fleet.on(KIND, lambda _key: self.forget())
        fleet.on_resync(self.forget)

    def forget(self) -> None:
        with self._lock:
            self._cache = None
            self._generation += 1

    def _fail(self, what: str, exc: Exception) -> ConfigError:
        return ConfigError(f"cannot {what} the fleet's approvals in {self.fleet.location}: "
                           f"{exc}", field="--store",
                           fix="check that PostgreSQL is up and reachable; the last good "
                               "revision keeps answering meanwhile")

    def _table(self) -> tuple[dict[str, Approval], dict[str, str]]:
        """(approvals in force by key, revoked digests by key)."""
        fresh = self.fleet.fresh()
        with self._lock:
            cached = self._cache if fresh else None
            generation = self._generation
        if cached is not None:
            return cached
        try:
            rows = self.fleet.rows("SELECT key, digest, name, at, by, revoked "
                                   "FROM fleet_approvals")
        except FleetUnavailable as exc:
            raise self._fail("read", exc) from None
        table = ({str(k): Approval(str(k), str(d), str(n), float(a), str(b))
                  for k, d, n, a, b, revoked in rows if not revoked},
                 {str(k): str(d) for k, d, _n, _a, _b, revoked in rows if revoked})
        with self._lock:
            # Cached only if no notification could have been missed (the listener
            # stayed up) and none arrived while the rows were read: a revocation
            # announced meanwhile must not be overwritten by the table read before it.
            if fresh and self.fleet.fresh() and generation == self._generation:
                self._cache = table
        return table

    # -- the TrustStore's approvals, shared ------------------------------------------
    def approvals(self) -> dict[str, Approval]:
        return self._table()[0]

    def approved(self, key: str, digest: str) -> bool:
        found = self._table()[0].get(key)
        return found is not None and found.digest == digest

    def revoked(self, key: str, digest: str) -> bool:
        if self._table()[1].get(key) != digest:
            return False
        if (key, digest) not in self._told:
            self._told.add((key, digest))
            log.warning("not approving %s despite --accept-hooks: it was revoked in the "
                        "fleet (`interlock hooks approve NAME --fleet` approves it again)",
                        key)
        return True

    def approve(self, items: list[tuple[str, str, str]], *, by: str = "operator") -> None:
        # --accept-hooks never overwrites the revocation of the same content, even one
        # that committed after this replica read the table.
        keep_revoked = (" WHERE NOT fleet_approvals.revoked "
                        "OR fleet_approvals.digest <> EXCLUDED.digest"
                        if by == "accept-hooks" else "")
        now = time.time()
        try:
            with self.fleet.transaction() as cur:
                for key, digest, name in items:
                    cur.execute(
                        "INSERT INTO fleet_approvals (key, digest, name, at, by) "
                        "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (key) DO UPDATE SET "
                        "digest = EXCLUDED.digest, name = EXCLUDED.name, at = EXCLUDED.at, "
                        "by = EXCLUDED.by, revoked = false" + keep_revoked,
                        (key, digest, name, now, by))
                Fleet.announce(cur, KIND, "approve")
        except FleetUnavailable as exc:
            raise self._fail("write", exc) from None
        self.forget()

    def revoke(self, keys: list[str]) -> int:
        try:
            with self.fleet.transaction() as cur:
                cur.execute("UPDATE fleet_approvals SET revoked = true, at = %s, by = %s "
                            "WHERE key = ANY(%s) AND NOT revoked RETURNING key",
                            (time.time(), "revoked", list(keys)))
                removed = len(cur.fetchall())
                if removed:
                    Fleet.announce(cur, KIND, "revoke")
        except FleetUnavailable as exc:
            raise self._fail("write", exc) from None
        self.forget()
        return removed


def share_approvals(fleet: Fleet, registry: Any) -> SharedTrust:
    """Make ``registry`` read and write the fleet's approvals, reload it on them now,
    and again on every change any replica makes (and after a listener reconnect)."""
    trust = SharedTrust(fleet, registry.state_dir)
    registry.trust = trust
    result = registry.reload(operator=True, release=False)
    if result.error is not None:
        raise result.error

    def reload(_payload: str = "") -> None:
        def run() -> None:
            result = registry.reload(operator=True, release=False)
            if result.error is not None:
                log.warning("reload on a fleet approval change failed: %s", result.error)

        threading.Thread(target=run, name="interlock-fleet-approvals", daemon=True).start()

    fleet.on(KIND, reload)
    fleet.on_resync(reload)
    return trust
