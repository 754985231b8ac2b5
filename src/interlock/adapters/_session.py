"""The end of an adapter's session, as its objects offer it (docs/adapters.md,
Events each adapter fires)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from interlock.adapters._core import Policy

__all__ = ["SessionEnd"]


class SessionEnd:
    """``close()``, ``aclose()`` and ``with``/``async with`` for an adapter object:
    the end of its session, ``session_end`` once if a run started it; the next
    run starts a new one (docs/adapters.md, Events each adapter fires)."""

    policy: Policy

    def close(self) -> None:
        self.policy.end_session()

    async def aclose(self) -> None:
        self.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()
