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


def machine_line() -> str:
    """One line naming what the timings depend on: CPU, its vector extensions as NumPy's
    dispatcher sees them (AVX-512 changes NumPy's sort kernels), the BLAS library, kernel
    and thread count, and the load average (1 min) on the number of cores.

    Printed before and written beside every speed table, so a ratio is read with the
    hardware that produced it.
    """
    import os
    import platform

    import numpy as np

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # pragma: no cover - NumPy keeps this private name since 1.20
        features = {}
    avx512 = sorted(k for k, v in features.items() if v and k.startswith("AVX512"))
    if avx512:
        simd = "AVX-512 (" + ", ".join(avx512) + ")"
    elif features.get("AVX2"):
        simd = "AVX2, no AVX-512"
    elif features:
        simd = "no AVX2"
    else:
        simd = "vector extensions unknown"
    blas = "BLAS unknown (threadpoolctl not installed)"
    try:
        from threadpoolctl import threadpool_info

        libs = [i for i in threadpool_info() if i.get("user_api") == "blas"]
        # NumPy's own BLAS first (the one its matrix products use), whatever loaded first
        libs.sort(key=lambda i: "numpy" not in str(i.get("filepath", "")))
        if libs:
            i = libs[0]
            blas = (f"BLAS {i.get('internal_api')} {i.get('version')} "
                    f"kernel {i.get('architecture', '?')}, {i.get('num_threads')} threads")
    except ImportError:
        pass
    cores = os.cpu_count() or 1
    try:
        load = f"load {os.getloadavg()[0]:.1f} on {cores} cores"
    except OSError:  # pragma: no cover - not on every platform
        load = f"{cores} cores"
    return (f"{cpu}; NumPy {np.__version__} sees {simd}; {blas}; {load}; "
            f"Python {platform.python_version()}")
