"""The sequence lock that keeps a revision's hooks and rules one pair
(interlock.config.pairing; docs/configuration.md, Live reload)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import pytest

from interlock import Engine, Verdict, block
from interlock.agent.permissions import rule
from interlock.config.model import PermissionRule
from interlock.config.pairing import Pairing
from interlock.events import make

RM = make("before_tool_call", {"tool_name": "terminal", "args": {"command": "rm -rf /"}})
DENY = rule("terminal", "rm *", "deny")


@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
def test_a_read_a_swap_began_in_the_middle_of_is_thrown_away_and_taken_after_it(
        sync: bool) -> None:
    """Revision 1 denies rm by a hook; revision 2 by a rule. The next revision goes
    in between a read's rules and its hooks: that read (revision 1's rules, none,
    with revision 2's hooks, none) is thrown away, and the one taken after the
    swap pairs revision 2's."""
    engine = Engine()
    engine.on("before_tool_call", lambda e: block("no rm"), name="no-rm")
    current: list[PermissionRule] = []
    swapped = threading.Event()
    pairing: Pairing

    def swap() -> None:
        with pairing.swapping():
            engine.replace_hooks([])
            current.append(DENY)
        swapped.set()

    def rules() -> Sequence[PermissionRule]:
        taken = list(current)
        if not swapped.is_set():  # the first read: the swap lands right after this
            threading.Thread(target=swap).start()
            assert swapped.wait(10)
        return taken

    pairing = Pairing(engine, rules)
    if sync:
        outcome, paired = pairing.dispatch_sync(RM)
    else:
        dispatched, paired = pairing.dispatch(RM)
        outcome = asyncio.run(dispatched)
    engine.close()
    assert list(paired) == [DENY]
    assert outcome.verdict is Verdict.NONE  # revision 2's hooks, with revision 2's rules


def test_with_no_swap_under_way_a_read_takes_the_hooks_and_rules_in_force() -> None:
    engine = Engine()
    engine.on("before_tool_call", lambda e: block("no rm"), name="no-rm")
    pairing = Pairing(engine, lambda: [DENY])
    outcome, rules = pairing.dispatch_sync(RM)
    engine.close()
    assert outcome.verdict is Verdict.BLOCK
    assert list(rules) == [DENY]
