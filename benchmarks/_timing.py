"""Timing shared by the speed benchmarks (run as scripts, so this folder is on sys.path)."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_time(func: Callable[[], object], repeats: int) -> float:
    """Best wall-clock seconds of ``repeats`` calls of ``func`` after one warm-up call."""
    func()  # warm-up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - start)
    return best
