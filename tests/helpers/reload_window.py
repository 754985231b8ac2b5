"""A live reload held open between its hooks swap and its rules swap.

A reload swaps a revision's hooks into the engine and then makes its
``[[permissions]]`` rules current. A reader that takes the hooks and rules
in force must get both of one revision (docs/configuration.md, Live reload):
:func:`mid_reload` runs a reload on another thread, stops it right after the
hooks swap, and runs a reader there. The reload goes on once the reader has
finished or waits for the registry's pairing lock, whichever comes first, so
no step waits on a clock.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest

from helpers.cfg import GUARD, World
from interlock.config.registry import Registry

T = TypeVar("T")

_HOOKS = """
[[hooks]]
name = "note"
events = ["session_start"]
handler = "note.py"
"""
_GUARD = """
[[hooks]]
name = "guard"
events = ["before_tool_call"]
handler = "guard.py"
"""


def hook_then_rule(world: World, tool: str = "terminal") -> Registry:
    """A loaded registry whose deny of ``rm`` on ``tool`` is in a hook, with the user's
    config already moved on to a revision where it is a ``[[permissions]]`` rule.
    Both revisions also hold a hook that judges no call, so neither is unguarded."""
    world.write(world.home / "guard.py", GUARD)
    world.write(world.home / "note.py", "def handle(event):\n    return None\n")
    world.config(world.home, _HOOKS + _GUARD)
    reg = world.registry()
    reg.load()
    world.config(world.home, _HOOKS + f"""
[[permissions]]
tool = "{tool}"
pattern = "rm *"
action = "deny"
""")
    return reg


class _Announcing:
    """The lock of the registry's pairing (config/pairing.py), saying when a reader
    (not the reload) asks for it: a reader that finds a swap under way waits there."""

    def __init__(self, lock: Any, reloader: threading.Thread, asked: threading.Event) -> None:
        self.lock, self.reloader, self.asked = lock, reloader, asked

    def __enter__(self) -> bool:
        if threading.current_thread() is not self.reloader:
            self.asked.set()
        return bool(self.lock.__enter__())

    def __exit__(self, *exc: object) -> None:
        self.lock.__exit__(*exc)


@contextlib.contextmanager
def mid_reload(reg: Registry, monkeypatch: pytest.MonkeyPatch
               ) -> Iterator[Callable[[Callable[[], T]], T]]:
    """Reload ``reg`` on a thread (as an operator: a guard's removal is approved),
    held after its hooks swap; yields ``during(read)``, which runs ``read`` on a
    thread of its own while the reload is held there and returns what it returned.
    The reload has finished when the block ends."""
    swapped, reader_in = threading.Event(), threading.Event()
    results: list[Any] = []
    reloader = threading.Thread(target=lambda: results.append(reg.reload(operator=True)))
    swap = reg._swap

    def held_swap(hooks: Any) -> int:
        number = swap(hooks)
        swapped.set()
        assert reader_in.wait(30), "the reader never ran"
        return number

    monkeypatch.setattr(reg, "_swap", held_swap)
    pairing = getattr(reg, "_pairing", None)
    if pairing is not None:
        monkeypatch.setattr(pairing, "_lock", _Announcing(pairing._lock, reloader, reader_in))

    def during(read: Callable[[], T]) -> T:
        box: list[T] = []

        def run() -> None:
            try:
                box.append(read())
            finally:
                reader_in.set()

        reader = threading.Thread(target=run)
        reader.start()
        reader.join(30)
        assert box, "the reader failed or did not finish"
        return box[0]

    reloader.start()
    try:
        assert swapped.wait(30), "the reload never swapped the hooks"
        yield during
    finally:
        reader_in.set()
        reloader.join(30)
    assert results, "the reload did not finish"
    assert results[0].changed, results
