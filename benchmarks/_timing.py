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


def best_times(funcs: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Best wall-clock seconds of each function, the calls interleaved (a, b, a, b, ...).

    On a machine shared with other jobs, interleaving spreads their load over every
    contender instead of over whichever happened to run while it peaked.
    """
    for func in funcs.values():
        func()  # warm-up
    best = dict.fromkeys(funcs, float("inf"))
    for _ in range(repeats):
        for name, func in funcs.items():
            start = time.perf_counter()
            func()
            best[name] = min(best[name], time.perf_counter() - start)
    return best
