"""Cost and correctness of ordering the swaps of every anchor exactly.

The exact double-score searches sort, for every anchor pair, the angles at which the other
pairs swap with it, and group the swaps that coincide. The baseline is the order the
library used before (one NumPy ``arctan2`` per swap, a stable sort, groups of equal
angles), measured in the same run; the exact order is ``_ood_search.search._anchor_events``
(rounded keys, then exact predicates where keys are within their error bound). For each
kind of data: seconds for all anchors, the ratio exact / baseline, the number of event
groups, and the anchors whose groups by rounded angles differ from the exact ones, with
the angles as computed here and with every angle moved by a random 1 or 2 ulps (what
another CPU's ``arctan2`` may do).

Run: ``python benchmarks/bench_exact_order.py [--pairs 1000 3000]``. Writes
benchmarks/results/bench_exact_order.md. The machine may be shared with other work:
compare the ratios, measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np

from abstain._ood_search.search import _BATCH_ELEMS, _anchor_events
from abstain.datasets import synthetic_ood_1d

RESULTS = Path(__file__).parent / "results" / "bench_exact_order.md"


def kinds(m: int) -> dict[str, np.ndarray]:
    """Distinct pairs of four kinds, about ``m`` of each."""
    rng = np.random.default_rng(0)
    g = rng.normal(size=(m, 2))
    side = int(np.sqrt(m)) + 1
    lattice = np.stack(np.meshgrid(np.arange(side), np.arange(side)), -1).reshape(-1, 2)[:m]
    rounded = np.unique(np.round(rng.normal(size=(8 * m, 2)), 1), axis=0)[:m]
    x, _ = synthetic_ood_1d().sample(4 * m, random_state=1)
    d = synthetic_ood_1d()
    sec = np.unique(np.stack((d.r_bayes(x), d.g(x)), 1), axis=0)
    sec = sec[rng.permutation(len(sec))[:m]]
    return {"continuous Gaussian": g, "integer lattice": lattice.astype(float),
            "rounded to 0.1": rounded, "section 3.1 (r_B, g)": sec}


def float_groups(points: np.ndarray, e: np.ndarray, nudge: np.random.Generator | None):
    """The baseline: groups of equal rounded angles per anchor, (B, m) booleans (True where a
    group starts; points without a swap last, each alone)."""
    dr = points[None, :, 0] - points[e, 0][:, None]
    dg = points[None, :, 1] - points[e, 1][:, None]
    with np.errstate(invalid="ignore"):
        theta = np.arctan2(np.abs(dr), np.where(dr < 0, dg, -dg))
    if nudge is not None:
        theta = theta + nudge.integers(-2, 3, theta.shape) * np.spacing(theta)
    theta = np.where(dr == 0, np.inf, theta)
    th = np.take_along_axis(theta, np.argsort(theta, axis=1, kind="stable"), axis=1)
    new = np.ones(th.shape, dtype=bool)
    new[:, 1:] = (th[:, 1:] != th[:, :-1]) | np.isinf(th[:, 1:])
    return new


def run(points: np.ndarray) -> tuple[float, float, int, int, int]:
    m = points.shape[0]
    step = max(1, _BATCH_ELEMS // (4 * m))
    t_base = t_exact = 0.0
    groups = wrong = wrong_nudged = 0
    rng = np.random.default_rng(1)
    for e0 in range(0, m, step):
        e = np.arange(e0, min(m, e0 + step))
        t0 = time.perf_counter()
        base = float_groups(points, e, None)
        t1 = time.perf_counter()
        _, _, zero, _, new = _anchor_events(points, e)
        t2 = time.perf_counter()
        t_base += t1 - t0
        t_exact += t2 - t1
        finite = ~np.sort(zero, axis=1)  # swaps first, then the points without one
        groups += int(np.count_nonzero(new & finite))
        wrong += int(np.count_nonzero(np.any(base != new, axis=1)))
        nudged = float_groups(points, e, rng)
        wrong_nudged += int(np.count_nonzero(np.any(nudged != new, axis=1)))
    return t_base, t_exact, groups, wrong, wrong_nudged


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pairs", type=int, nargs="+", default=[1000, 3000])
    args = ap.parse_args()
    lines = [
        "# Exact order of the swaps of every anchor against rounded angles",
        "",
        "Baseline: one `arctan2` per swap, stable sort, groups of equal angles (the "
        "library's order before the exact predicates), same run. Load average before: "
        f"{os.getloadavg()[0]:.1f}. {platform.processor() or platform.machine()}, NumPy "
        f"{np.__version__}. 'Anchors off' counts the anchors whose groups by rounded angles "
        "differ from the exact groups; '+-2 ulps' with every angle moved by up to 2 ulps.",
        "",
        "| data | distinct pairs | baseline (s) | exact (s) | ratio exact / baseline "
        "| event groups | anchors off | anchors off, +-2 ulps |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for m in args.pairs:
        for name, pts in kinds(m).items():
            t_b, t_e, groups, wrong, wrong_n = run(pts)
            row = (f"| {name} | {len(pts):,} | {t_b:.3f} | {t_e:.3f} | {t_e / t_b:.2f} | "
                   f"{groups:,} | {wrong:,} | {wrong_n:,} |")
            print(row, flush=True)
            lines.append(row)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
