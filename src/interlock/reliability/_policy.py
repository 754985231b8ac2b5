"""Per-hook reliability settings and the clock the wrappers read."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Protocol

from interlock.engine.errors import ConfigError


class Clock(Protocol):
    """Where the wrappers read time and wait. Tests inject a manual clock."""

    def now(self) -> float:
        """Seconds on a monotonic scale."""
        ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The real clock: ``time.monotonic`` and ``asyncio.sleep``."""

    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        import asyncio  # awaited on a loop: imported already

        await asyncio.sleep(seconds)


SYSTEM_CLOCK = SystemClock()


@dataclass(frozen=True, slots=True, kw_only=True)
class Policy:
    """How one hook is retried and guarded. Defaults: docs/reliability.md, Settings."""

    timeout: float | None = 60.0
    """Bounds one attempt (seconds); None means no per-attempt bound."""
    retries: int = 0
    """Extra attempts after the first, for retryable failures only."""
    budget: float | None = None
    """Total time for every attempt and backoff; None means ``timeout * (retries + 1)``
    plus the backoff caps."""
    backoff: float = 0.1
    """First backoff (seconds); doubles per retry, with full jitter."""
    backoff_max: float = 5.0
    """Cap on one backoff."""
    retry_after_cap: float = 30.0
    """A ``Retry-After`` longer than this is cut down to it."""
    breaker_threshold: int = 3
    """Consecutive failed invocations that open the breaker; 0 turns the breaker off."""
    breaker_cooldown: float = 60.0
    """Seconds an open breaker waits before letting one probe through."""

    def __post_init__(self) -> None:
        for name in ("timeout", "budget"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ConfigError(f"must be a positive number of seconds, got {value!r}",
                                  field=name, fix=f"set {name} above 0 or leave it out")
        for name in ("backoff", "backoff_max", "retry_after_cap", "breaker_cooldown"):
            if getattr(self, name) < 0:
                raise ConfigError(f"must not be negative, got {getattr(self, name)!r}",
                                  field=name, fix=f"set {name} to 0 or more")
        for name in ("retries", "breaker_threshold"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ConfigError(f"must be a whole number >= 0, got {value!r}", field=name,
                                  fix=f"write {name} = 0 (or 1, 2, ...)")

    @property
    def total(self) -> float | None:
        """The whole budget of one invocation, retries and backoffs included.

        The engine bounds an executor call by ``Hook.timeout``; a registry that
        wraps an executor sets ``Hook.timeout`` to at least this (see
        docs/reliability.md), so the budget, not the engine, decides.
        """
        if self.budget is not None:
            return self.budget
        if self.timeout is None:
            return None
        return self.timeout * (self.retries + 1) + self.backoff_max * self.retries

    @classmethod
    def parse(cls, data: Mapping[str, Any], *, file: str | None = None,
              prefix: str = "") -> Policy:
        """Build a policy from config keys, naming the file and field on a mistake."""
        known = {f.name for f in fields(cls)}
        for key in data:
            if key not in known:
                raise ConfigError(f"unknown reliability setting {key!r}", file=file,
                                  field=prefix + key,
                                  fix="use one of " + ", ".join(sorted(known)))
        kwargs: dict[str, Any] = {}
        for key, value in data.items():
            expected: tuple[type, ...] = (int,) if key in ("retries", "breaker_threshold") \
                else (int, float)
            if value is not None and (isinstance(value, bool) or not isinstance(value, expected)):
                raise ConfigError(f"expected a number, got {type(value).__name__} {value!r}",
                                  file=file, field=prefix + key, fix=f"write {key} = 3")
            kwargs[key] = value
        try:
            return cls(**kwargs)
        except ConfigError as exc:
            raise ConfigError(exc.message, file=file, field=prefix + (exc.field or ""),
                              fix=exc.fix) from None
