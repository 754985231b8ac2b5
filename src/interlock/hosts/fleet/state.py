"""Tokens, breaker state, rate-limit buckets and revision history, shared by replicas.

The consistency each one keeps is written in docs/fleet.md (Consistency);
in short:

- **Tokens** are read through a cache that a ``token`` notification empties
  and that is trusted only while the listener is connected; otherwise every
  request reads PostgreSQL, and when PostgreSQL does not answer the request
  is refused (503). A revocation therefore counts on every replica once its
  notification arrives (milliseconds), and at worst within the listener's
  ping (:data:`interlock.hosts.fleet.shared.PING_S`) when that connection broke.
- **Breakers** stay per replica (each counts its own failures) and an open or
  a close is copied to the others, keyed by the hook's portable digest (paths
  relative to its place): a hook that fails on one replica is cut off on all
  of them, also where it was never called, and on a replica started later
  (it reads ``fleet_breakers``).
- **Rate limits** are one token bucket per key in a row taken with
  ``SELECT ... FOR UPDATE`` on PostgreSQL's clock: exact across replicas.
  When PostgreSQL does not answer, the message is refused.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
import time
from typing import Any

from interlock.engine.errors import ConfigError
from interlock.engine.logs import logger
from interlock.hosts.fleet.shared import Fleet, FleetUnavailable
from interlock.hosts.server.auth import TOKEN_PREFIX, Role, TokenInfo, TokenStore, TokensUnavailable
from interlock.reliability._breaker import Breaker, BreakerBook, BreakerKey, BreakerState

log = logger("interlock.fleet")

CACHE_S = 30.0
"""A cached token is re-read at least this often even while notifications flow."""


class SharedTokens(TokenStore):
    """The server's tokens in PostgreSQL (``fleet_tokens``), for every replica."""

    def __init__(self, fleet: Fleet) -> None:
        super().__init__(None)
        self.fleet = fleet
        self._cache: dict[str, tuple[TokenInfo | None, float]] = {}
        self._cache_lock = threading.Lock()
        fleet.on("token", lambda _name: self._forget())
        fleet.on_resync(self._forget)

    def _forget(self) -> None:
        with self._cache_lock:
            self._cache.clear()

    @staticmethod
    def _info(row: tuple[Any, ...]) -> TokenInfo:
        name, role, digest, created, expires, sender = row
        return TokenInfo(name=str(name), role=Role(role), digest=str(digest),
                         created=float(created), sender=str(sender), expires=float(expires))

    def verify(self, token: str) -> TokenInfo | None:
        if not token.startswith(TOKEN_PREFIX):
            return None
        digest = "sha256:" + hashlib.sha256(token.encode()).hexdigest()
        now = time.monotonic()
        fresh = self.fleet.fresh()
        cached = self._cache.get(digest) if fresh else None
        if cached is not None and now - cached[1] < CACHE_S:
            info = cached[0]
        else:
            try:
                rows = self.fleet.rows("SELECT name, role, digest, created, expires, sender "
                                       "FROM fleet_tokens WHERE digest = %s", (digest,))
            except FleetUnavailable as exc:
                raise TokensUnavailable(f"the fleet's token table cannot be read: {exc}") from None
            info = self._info(rows[0]) if rows else None
            if fresh and self.fleet.fresh():  # no notification could have been missed
                with self._cache_lock:
                    self._cache[digest] = (info, now)
        if info is not None and info.expired(time.time()):
            return None
        return info

    def create(self, name: str, role: Role | str = Role.EVENTS, *,
               sender: str | None = None, ttl: float | None = None) -> str:
        TokenStore().create(name, role, sender=sender, ttl=ttl)  # the same checks of the input
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        digest = "sha256:" + hashlib.sha256(token.encode()).hexdigest()
        now = time.time()
        try:
            with self.fleet.transaction() as cur:
                cur.execute("INSERT INTO fleet_tokens (name, role, digest, created, expires, "
                            "sender) VALUES (%s, %s, %s, %s, %s, %s) "
                            "ON CONFLICT (name) DO NOTHING RETURNING name",
                            (name, Role(role).value, digest, now, now + ttl if ttl else 0.0,
                             sender or ""))
                if cur.fetchone() is None:
                    raise ConfigError(f"a token named {name!r} exists", field="name",
                                      fix=f"revoke it first: `interlock serve token revoke "
                                          f"{name} --fleet`")
                Fleet.announce(cur, "token", name)
        except FleetUnavailable as exc:
            raise ConfigError(f"cannot write the token to {self.fleet.location}: {exc}",
                              field="--store") from None
        return token

    def revoke(self, name: str) -> bool:
        try:
            with self.fleet.transaction() as cur:
                cur.execute("DELETE FROM fleet_tokens WHERE name = %s RETURNING name", (name,))
                gone = cur.fetchone() is not None
                if gone:
                    Fleet.announce(cur, "token", name)
        except FleetUnavailable as exc:
            raise ConfigError(f"cannot revoke the token in {self.fleet.location}: {exc}",
                              field="--store") from None
        if gone:
            self._forget()
        return gone

    def entries(self) -> list[TokenInfo]:
        try:
            rows = self.fleet.rows("SELECT name, role, digest, created, expires, sender "
                                   "FROM fleet_tokens ORDER BY name")
        except FleetUnavailable as exc:
            raise ConfigError(f"cannot read the tokens in {self.fleet.location}: {exc}",
                              field="--store") from None
        return [self._info(r) for r in rows]


def _key_text(key: BreakerKey) -> str:
    """The fleet's name of a breaker: source, name and the hook's portable digest, so
    replicas holding the project at other paths share it (docs/fleet.md, Consistency)."""
    return json.dumps(list(key))


class SharedBreakers:
    """Copies every open and close of this replica's breakers to the others, and takes
    theirs, also for a hook not called here yet (its breaker is made then)."""

    def __init__(self, fleet: Fleet, book: BreakerBook) -> None:
        self.fleet = fleet
        self.book = book
        self._adopting = threading.local()
        book.listen(self._moved)
        fleet.on("breaker", self._heard)
        fleet.on_resync(self.load)

    def _moved(self, breaker: Breaker, old: BreakerState, new: BreakerState) -> None:
        if getattr(self._adopting, "on", False) or new is BreakerState.HALF_OPEN:
            return
        key = _key_text(breaker.key)
        now = time.time()
        try:
            with self.fleet.transaction() as cur:
                cur.execute("INSERT INTO fleet_breakers (key, state, changed, replica, "
                            "threshold, cooldown) VALUES (%s, %s, %s, %s, %s, %s) "
                            "ON CONFLICT (key) DO UPDATE SET state = EXCLUDED.state, "
                            "changed = EXCLUDED.changed, replica = EXCLUDED.replica, "
                            "threshold = EXCLUDED.threshold, cooldown = EXCLUDED.cooldown",
                            (key, new.value, now, self.fleet.replica, breaker.threshold,
                             breaker.cooldown))
                Fleet.announce(cur, "breaker", json.dumps(
                    {"key": key, "state": new.value, "replica": self.fleet.replica,
                     "at": now, "threshold": breaker.threshold,
                     "cooldown": breaker.cooldown}))
        except FleetUnavailable as exc:  # this replica's breaker still works on its own
            log.warning("fleet: breaker %s not shared: %s", breaker.key.hook, exc)

    def _heard(self, payload: str) -> None:
        data = json.loads(payload)
        if data.get("replica") == self.fleet.replica:
            return
        self._adopt(data["key"], BreakerState(data["state"]), float(data["at"]),
                    int(data.get("threshold", 3)), float(data.get("cooldown", 60.0)))

    def _adopt(self, key_text: str, state: BreakerState, at: float, threshold: int,
               cooldown: float) -> None:
        key = BreakerKey(*json.loads(key_text))
        self._adopting.on = True
        try:
            self.book.take(key, state, age=max(0.0, time.time() - at), threshold=threshold,
                           cooldown=cooldown)
        finally:
            self._adopting.on = False

    def load(self) -> None:
        """Adopt what the table says (at start, after a reload, after a reconnect)."""
        try:
            rows = self.fleet.rows("SELECT key, state, changed, threshold, cooldown "
                                   "FROM fleet_breakers WHERE replica <> %s",
                                   (self.fleet.replica,))
        except FleetUnavailable as exc:
            log.warning("fleet: breakers not loaded: %s", exc)
            return
        for key_text, state, changed, threshold, cooldown in rows:
            self._adopt(str(key_text), BreakerState(state), float(changed), int(threshold),
                        float(cooldown))


class SharedBuckets:
    """Token buckets in ``fleet_rate``, on PostgreSQL's clock; ``take`` as RateLimiter's."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet

    def take(self, key: str, rate: float, burst: int) -> float:
        """0.0 if a token was taken, else seconds until one is free (inf: refused, as when
        PostgreSQL does not answer)."""
        try:
            with self.fleet.transaction() as cur:
                cur.execute("INSERT INTO fleet_rate (bucket, tokens, last) VALUES "
                            "(%s, %s, extract(epoch FROM clock_timestamp())) "
                            "ON CONFLICT (bucket) DO NOTHING", (key, float(burst)))
                cur.execute("SELECT tokens, last, extract(epoch FROM clock_timestamp()) "
                            "FROM fleet_rate WHERE bucket = %s FOR UPDATE", (key,))
                tokens, last, now = (float(v) for v in cur.fetchone())
                tokens = min(float(burst), tokens + max(0.0, now - last) * rate)
                wait = 0.0
                if tokens >= 1.0:
                    tokens -= 1.0
                else:
                    wait = (1.0 - tokens) / rate if rate > 0 else float("inf")
                cur.execute("UPDATE fleet_rate SET tokens = %s, last = %s WHERE bucket = %s",
                            (tokens, now, key))
        except FleetUnavailable as exc:
            log.warning("fleet: rate limit refused (PostgreSQL did not answer): %s", exc)
            return float("inf")
        return wait


def record_revision(fleet: Fleet, revision: int, policy: str, dispatches: str) -> None:
    """Add one line to the fleet's revision history: which replica ran which policy
    as ``revision``, from when. ``dispatches``: the prefix of the ``dispatch_id`` of
    every audit row this replica writes, so each row joins to its policy."""
    try:
        with fleet.transaction() as cur:
            cur.execute("INSERT INTO fleet_revisions (replica, dispatches, revision, policy, "
                        "at) VALUES (%s, %s, %s, %s, %s)",
                        (fleet.replica, dispatches, revision, policy, time.time()))
    except FleetUnavailable as exc:
        log.warning("fleet: revision %s not recorded: %s", revision, exc)
