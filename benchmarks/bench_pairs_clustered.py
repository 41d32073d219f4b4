"""Exact double-score searches on pairs whose points differ by far less than their spread.

A first score with 12 values and a second of a far smaller scale (``scale`` 1e-9, 1e-6,
1e-3), either alone or added to ``k`` times the first (``k`` = 1, -1, 2: the pairs near one
line). Points of one value of the first score never swap inside ``(0, pi)``, but nothing
bounded from rounded projections tells them apart near the first score's direction, and
bands cut at quantiles put two values in one band. Before the fixes named in docs/ood.md
(cost), the branch and bound halved such intervals down to its least width: minutes on
4,000 rows.

Contenders, on the same rows, each call stopped after ``--limit`` seconds:

- ``envelope``: ``auroc(is_ood, pair, search="exact")`` (branch and bound above 3,000
  distinct pairs), against the full sweep over every swap (the same call with
  ``envelope_branch.SWEEP_BELOW`` above the rows: the baseline of its ratio);
- ``cost fit``: ``CostBasedOOD(0.2, 1.0, 0.0, search="exact").fit``, against the full sweep
  (``branch_search(..., sweep_below=)`` above the rows).

The values of each pair of contenders must be equal (AUROC, fitted cost); a difference stops
the run. Run: ``python benchmarks/bench_pairs_clustered.py [--rows 4000] [--limit 120]``.
Writes benchmarks/results/bench_pairs_clustered.md.
"""

from __future__ import annotations

import argparse
import functools
import signal
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from _timing import machine_line

from abstain._ood_search import branch, envelope_branch, sample
from abstain.metrics import auroc
from abstain.models import CostBasedOOD

RESULTS = Path(__file__).parent / "results" / "bench_pairs_clustered.md"
FORMS = (0, 1, -1, 2)
SCALES = (1e-9, 1e-6, 1e-3)


def pair(n: int, k: int, scale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The scores ``(a, k a + scale b)``, the OOD marks and the 0/1 losses."""
    rng = np.random.default_rng(0)
    ood = rng.random(n) < 0.4
    a = rng.integers(0, 12, n).astype(float) + ood * (rng.random(n) < 0.5)
    b = rng.normal(size=n) + ood
    losses = np.where(ood, 0.0, rng.random(n) < 0.3).astype(float)
    return np.stack([a, k * a + scale * b], axis=1), ood, losses


class _Late(Exception):
    pass


def _timed(func: Callable[[], float], limit: int) -> tuple[float | None, float | None]:
    """Seconds and value of ``func()``, or (None, None) after ``limit`` seconds."""
    def late(signum: int, frame: object) -> None:
        raise _Late

    old = signal.signal(signal.SIGALRM, late)
    signal.alarm(limit)
    start = time.perf_counter()
    try:
        value = func()
    except _Late:
        return None, None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return time.perf_counter() - start, value


def _full_sweep(n: int) -> Callable[[Callable[[], float]], float]:
    """Run a call with both searches made full sweeps (no bounds) on ``n`` rows."""
    def run(func: Callable[[], float]) -> float:
        old_env, old_fit = envelope_branch.SWEEP_BELOW, sample.branch_search
        envelope_branch.SWEEP_BELOW = n + 1
        sample.branch_search = functools.partial(branch.branch_search, sweep_below=n + 1)
        try:
            return func()
        finally:
            envelope_branch.SWEEP_BELOW, sample.branch_search = old_env, old_fit
    return run


def row(n: int, k: int, scale: float, limit: int) -> list[str]:
    s, ood, losses = pair(n, k, scale)
    calls = {
        "envelope": lambda: auroc(ood, s, search="exact"),
        "cost fit": lambda: CostBasedOOD(0.2, 1.0, 0.0, search="exact").fit(s, ood, losses)
        .cost_,
    }
    full = _full_sweep(n)
    first = {0: "", 1: "a + ", -1: "-a + "}.get(k, f"{k}a + ")
    cells = [f"(a, {first}{scale:g} b)"]
    for name, func in calls.items():
        t_full, v_full = _timed(lambda f=func: full(f), limit)
        t, v = _timed(func, limit)
        if v is not None and v_full is not None and v != v_full:
            raise SystemExit(f"{name} on {cells[0]}: {v!r} against the full sweep's {v_full!r}")
        ratio = f" ({t / t_full:.2f}x)" if t is not None and t_full is not None else ""
        cells += [f"over {limit} s" if t is None else f"{t:.2f} s{ratio}",
                  f"over {limit} s" if t_full is None else f"{t_full:.2f} s"]
    return cells


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=4000)
    ap.add_argument("--limit", type=int, default=120)
    args = ap.parse_args()
    machine = machine_line()
    print(machine)
    head = ["pair (a, second)", "envelope", "full sweep", "cost fit", "full sweep"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for k in FORMS:
        for scale in SCALES:
            lines.append("| " + " | ".join(row(args.rows, k, scale, args.limit)) + " |")
            print(lines[-1], flush=True)
    text = "\n".join([
        "# Exact searches on pairs that differ by far less than their spread",
        "",
        f"`python benchmarks/bench_pairs_clustered.py --rows {args.rows} --limit "
        f"{args.limit}`. {machine}",
        "",
        f"{args.rows:,} rows; `a` has 12 values, `b` is Gaussian. One call each; ratios "
        "against the full sweep over every swap in the same run, whose value each equals. "
        "`envelope`: `auroc(..., search=\"exact\")`; `cost fit`: `CostBasedOOD(0.2, 1.0, "
        "0.0, search=\"exact\").fit`.",
        "",
        *lines,
        "",
    ])
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
