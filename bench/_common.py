"""Shared timing helpers for the benchmarks: best-of-N, ns per op, a load of
`interlock serve` evaluations, one JSON line."""

from __future__ import annotations

import http.client
import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any


def best_ns(loop: Callable[[int], Any], n: int, repeat: int = 7) -> float:
    """Best time per iteration, in ns, of ``loop(n)`` over ``repeat`` runs."""
    loop(min(n, 1000))  # warm up caches and lazily built plans
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        loop(n)
        best = min(best, (time.perf_counter_ns() - t0) / n)
    return best


def report(figures: dict[str, Any]) -> None:
    """The last line every benchmark prints: its figures as one JSON object."""
    sys.stdout.write(json.dumps(figures, sort_keys=True) + "\n")
    sys.stdout.flush()


GATE_BODY = json.dumps({"tool_name": "terminal", "args": {"command": "ls -la"},
                        "session_id": "bench"}).encode()
"""A before_tool_call payload, as a bridge posts it to `serve`."""


def drive(make: Callable[[], http.client.HTTPConnection], headers: dict[str, str],
          clients: int, seconds: float) -> float:
    """Evaluations per second of ``clients`` threads, each on its own kept-alive
    connection from ``make``, posting before_tool_call for ``seconds``."""
    counts = [0] * clients
    stop = time.monotonic() + seconds

    def worker(i: int) -> None:
        conn = make()
        while time.monotonic() < stop:
            conn.request("POST", "/v1/events/before_tool_call", body=GATE_BODY,
                         headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            if resp.status != 200:
                raise RuntimeError(data)
            counts[i] += 1
        conn.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / (time.monotonic() - t0)
