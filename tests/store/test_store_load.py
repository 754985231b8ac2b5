"""Load: 10,000 dispatches from 50 concurrent tasks with failing hooks; counters,
audit rows and dead letters add up exactly."""

from __future__ import annotations

import asyncio
import collections

import pytest

from helpers.stores import BACKENDS, fresh_url
from interlock import Engine, HookFailure, block, modify
from interlock.engine.hooks import Hook
from interlock.engine.outcome import Status
from interlock.events import make
from interlock.reliability import Policy, wrap
from interlock.reliability.metrics import Metrics
from interlock.reliability.sinks import attach
from interlock.store import AuditQuery

pytestmark = pytest.mark.slow

TASKS, PER_TASK = 50, 200


@pytest.mark.parametrize("kind", BACKENDS)
async def test_ten_thousand_dispatches_add_up(kind, tmp_path):
    engine = Engine()
    attempts = collections.Counter()

    @engine.on("before_tool_call", name="stamp", modifies=True)
    def stamp(event):
        return modify(args={**event.args, "stamped": True})

    @engine.on("before_tool_call", name="guard")
    def guard(event):
        if event.args["i"] % 7 == 0:
            return block("multiple of seven")
        return None

    @engine.on("before_tool_call", name="raiser", on_error="open")
    async def raiser(event):
        await asyncio.sleep(0)
        if event.args["i"] % 5 == 0:
            raise RuntimeError("five")
        return None

    async def remote(inv):
        i = inv.event.args["i"]
        attempts[inv.attempt > 1] += 1
        await asyncio.sleep(0)
        if i % 13 == 0 or (i % 3 == 0 and inv.attempt == 1):
            raise HookFailure("flaky", retryable=True)
        if i % 17 == 0:
            return "garbage"
        return None

    wrap_metrics = Metrics()
    policy = Policy(timeout=5, retries=1, backoff=0, breaker_threshold=0)
    engine.register(Hook(name="remote", events=("before_tool_call",), digest="r",
                         executor=wrap(remote, policy, metrics=wrap_metrics)))
    with fresh_url(kind, tmp_path) as url:
        attached = attach(engine, url=url, metrics=wrap_metrics, tracing=False)

        async def worker(t: int) -> list:
            out = []
            for k in range(PER_TASK):
                i = t * PER_TASK + k
                ev = make("before_tool_call", tool_name="terminal", args={"i": i},
                          session_id=f"s{t}")
                out.append(await engine.emit(ev))
            return out

        results = await asyncio.wait_for(
            asyncio.gather(*(worker(t) for t in range(TASKS))), 60)
        outcomes = [o for batch in results for o in batch]
        assert len(outcomes) == TASKS * PER_TASK
        assert attached.store.flush(60)

        # what the engine returned is the truth every sink must agree with
        ran = collections.Counter()
        failed = collections.Counter()
        blocks = collections.Counter()
        for o in outcomes:
            for hook, decision, failure, _lat, status in o.raw:
                if status in (Status.QUEUED, Status.CANCELLED):
                    continue
                ran[hook.qualified_name] += 1
                if failure is not None:
                    failed[hook.qualified_name] += 1
                if decision is not None and decision.verdict == "block":
                    blocks[hook.qualified_name] += 1
        assert sum(o.blocked for o in outcomes) == sum(
            1 for i in range(10_000) if i % 7 == 0 or i % 13 == 0 or i % 17 == 0)
        assert failed["code:raiser"] > 0
        assert failed["code:remote"] > 0

        store = attached.store
        audit = store.audit(AuditQuery(limit=0))
        counted = collections.Counter(a.hook for a in audit if a.status != "cancelled")
        assert counted == ran
        assert len({a.dispatch_id for a in audit}) == TASKS * PER_TASK
        assert collections.Counter(a.hook for a in audit if a.verdict == "block"
                                   and a.status != "cancelled") == blocks
        letters = store.dead_letters(limit=0)
        stored = collections.Counter(d.hook for d in letters)
        # Every failure is a dead letter, or counted past the cap per hook and mode.
        overflow = collections.Counter()
        for entry in store.health()["dead_letter_overflow"]:
            overflow[entry["hook"]] += entry["count"]
        assert stored + overflow == failed
        cap = store.retention.dead_letters_per_key
        assert all(n <= cap for n in collections.Counter(
            (d.hook, d.mode) for d in letters).values())
        assert store.unresolved_by_hook() == dict(stored)

        stats = wrap_metrics.hooks()
        assert {h: s.executions for h, s in stats.items()} == dict(ran)
        assert {h: s.failed for h, s in stats.items() if s.failed} == dict(failed)
        assert {h: s.blocks for h, s in stats.items() if s.blocks} == dict(blocks)
        assert stats["code:remote"].retries == attempts[True]
        assert sum(wrap_metrics.dispatches().values()) == TASKS * PER_TASK
        text = wrap_metrics.exposition()
        assert f'interlock_hook_executions_total{{hook="code:guard"}} {ran["code:guard"]}.0' \
            in text
        assert attached.close()
    engine.close()
