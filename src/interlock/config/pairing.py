"""A revision's hooks and ``[[permissions]]`` rules, swapped in and read as one.

The registry swaps a revision's hooks into the engine and then makes its rules
current: two steps. A host that reads them apart while a reload lands (the
watcher's thread, an admin's reload) could judge a call by one revision's
hooks and another's rules, and a deny an operator moved from a hook into a
rule, or back, would be in neither (docs/configuration.md, Live reload).

:class:`Pairing` is a sequence lock. A swap runs under its lock, with the
generation odd meanwhile. A reader takes both with no lock while the
generation stays the same even number from before to after (the hot path: two
reads of an int); else (a swap under way, or one that began meanwhile) it
takes them again under the lock, once the swap is done. Taking them runs no
hook (``Engine.emit`` returns a coroutine not yet started,
``Engine.prepare_sync`` a function not yet called), so a read thrown away has
done nothing.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Coroutine, Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from interlock.config.model import PermissionRule
    from interlock.engine.dispatch import Engine
    from interlock.engine.events import Event
    from interlock.engine.outcome import Outcome

__all__ = ["Pairing"]


class Pairing:
    """Swap both under :meth:`swapping`; take both with :meth:`dispatch`."""

    def __init__(self, engine: Engine, rules: Callable[[], Sequence[PermissionRule]]) -> None:
        self._engine = engine
        self._rules = rules
        """The rules current now (the registry's current revision's)."""
        self._lock = threading.Lock()
        self._generation = 0
        """Odd while a swap is under way; one writer at a time (under the lock)."""

    @contextlib.contextmanager
    def swapping(self) -> Iterator[None]:
        """Around a swap of the engine's hooks and the current rules."""
        with self._lock:
            self._generation += 1
            try:
                yield
            finally:
                self._generation += 1

    def dispatch(self, event: Event) -> tuple[Coroutine[Any, Any, Outcome],
                                              Sequence[PermissionRule]]:
        """``engine.emit(event)`` and the rules of the revision whose hooks it runs."""
        seen = self._generation
        if not seen & 1:
            rules, dispatched = self._rules(), self._engine.emit(event)
            if self._generation == seen:
                return dispatched, rules
            dispatched.close()  # never started: nothing ran
        with self._lock:
            return self._engine.emit(event), self._rules()

    def dispatch_sync(self, event: Event) -> tuple[Outcome, Sequence[PermissionRule]]:
        """The outcome of ``engine.emit_sync(event)`` and the rules of its revision."""
        seen = self._generation
        if not seen & 1:
            rules, run = self._rules(), self._engine.prepare_sync(event)
            if self._generation == seen:
                return run(), rules
        with self._lock:
            rules, run = self._rules(), self._engine.prepare_sync(event)
        return run(), rules  # the hooks run outside the lock
