"""Shared timing helpers for the benchmarks: best-of-N, ns per op, one JSON line."""

from __future__ import annotations

import json
import sys
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
