"""Breaker keys name the hook, not where its project sits: the same hook held at
two paths (replicas of a fleet) has one key, two different hooks never share
one (docs/fleet.md, Consistency); and a state taken from another replica makes
the breaker of a hook not called here yet."""

from __future__ import annotations

from pathlib import Path

from helpers.cfg import World
from interlock import Engine
from interlock.config.registry import Registry
from interlock.reliability import BreakerBook, BreakerKey, BreakerState

HOOKS = """
[[hooks]]
name = "inline"
events = ["before_tool_call"]
command = "cat >/dev/null; exit 0"

[[hooks]]
name = "script"
events = ["before_tool_call"]
command = "./check.sh"
"""


def keys(tmp: Path, *, config: str = HOOKS, script: str = "#!/bin/sh\nexit 0\n",
         user: str = "") -> dict[str, BreakerKey]:
    world = World(tmp)
    world.config(world.project, config)
    world.write(world.project / "check.sh", script, mode=0o755)
    if user:
        world.config(world.home, user)
    engine = Engine()
    try:
        registry = Registry(engine, project_root=world.root, home=world.home,
                            managed=world.managed, bundled=world.bundled, accept_hooks=True)
        registry.load()
        return {e.qualified_name: BreakerKey.of(e.hook) for e in registry.hooks
                if e.hook is not None}
    finally:
        engine.close(timeout=2)


def test_the_same_hook_at_two_paths_has_one_key_and_different_hooks_never_share(
        tmp_path: Path) -> None:
    a = keys(tmp_path / "a")
    b = keys(tmp_path / "elsewhere" / "b")
    assert a == b
    assert a["project:inline"] != a["project:script"]
    # The script it runs differs: another key.
    other = keys(tmp_path / "c", script="#!/bin/sh\nexit 1\n")
    assert other["project:script"] != a["project:script"]
    assert other["project:inline"] == a["project:inline"]
    # The command differs: another key.
    edited = keys(tmp_path / "d", config=HOOKS.replace("exit 0", "exit 3"))
    assert edited["project:inline"] != a["project:inline"]
    # The same definition in the user's folder is another hook.
    user = keys(tmp_path / "e", config="", user=HOOKS.split("[[hooks]]\nname = \"script\"")[0])
    assert user["user:inline"] != a["project:inline"]


def test_a_taken_state_makes_the_breaker_and_its_first_call_sets_the_numbers() -> None:
    book = BreakerBook()
    key = BreakerKey("project", "flaky", "d1")
    taken = book.take(key, BreakerState.OPEN, age=5.0, threshold=2, cooldown=600.0)
    assert taken is not None
    assert book.state(key) is BreakerState.OPEN
    assert round(taken.retry_in(book.clock.now())) == 595
    breaker = book.get(key, 4, 300.0)
    assert breaker is taken
    assert (breaker.threshold, breaker.cooldown) == (4, 300.0)
    assert not book.admit(breaker)
    # A key the last reload did not keep is not made.
    book.forget({key})
    assert book.take(BreakerKey("project", "gone", "d2"), BreakerState.OPEN) is None
    assert [b.key for b in book.snapshot()] == [key]
