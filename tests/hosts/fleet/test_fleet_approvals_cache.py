"""SharedTrust's cache of ``fleet_approvals`` never outlives a notification
(docs/fleet.md, Consistency): a read that a revocation's notification overtook
is returned once but not cached, so the reload the notification starts reads
the table again. PostgreSQL is stood in for by a table in memory; the real
server is in test_fleet_approvals.py."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from interlock.hosts.fleet.approvals import KIND, SharedTrust


class TableFleet:
    """The parts of a Fleet SharedTrust uses, over a list of rows."""

    location = "memory"

    def __init__(self) -> None:
        self.table: list[tuple[Any, ...]] = [("k", "d", "hook", 0.0, "op", False)]
        self.handlers: dict[str, Callable[[str], None]] = {}
        self.during_read: Callable[[], None] = lambda: None

    def on(self, kind: str, handler: Callable[[str], None]) -> None:
        self.handlers[kind] = handler

    def on_resync(self, fn: Callable[[], None]) -> None:
        pass

    def fresh(self) -> bool:
        return True  # the listener stays connected throughout

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        out = list(self.table)
        self.during_read()
        return out

    def revoke_elsewhere(self) -> None:
        """Another replica revokes the approval and its notification arrives here."""
        self.table = [("k", "d", "hook", 1.0, "revoked", True)]
        self.handlers[KIND]("revoke")


def test_a_revocation_during_a_read_is_not_lost_to_the_cache(tmp_path: Path) -> None:
    fleet = TableFleet()
    trust = SharedTrust(fleet, tmp_path)  # type: ignore[arg-type]
    done = threading.Event()

    def revoke_once() -> None:
        if not done.is_set():
            done.set()
            fleet.revoke_elsewhere()

    fleet.during_read = revoke_once
    assert trust.approved("k", "d")  # this read began before the revocation
    assert not trust.approved("k", "d")  # the next one reads the table as it is now


def test_reads_between_notifications_come_from_the_cache(tmp_path: Path) -> None:
    fleet = TableFleet()
    trust = SharedTrust(fleet, tmp_path)  # type: ignore[arg-type]
    reads: list[int] = []
    fleet.during_read = lambda: reads.append(1)
    assert trust.approved("k", "d")
    assert trust.approved("k", "d")
    assert len(reads) == 1
    fleet.revoke_elsewhere()
    assert not trust.approved("k", "d")
    assert len(reads) == 2
