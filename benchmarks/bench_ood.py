"""Speed of fitting a double-score BoundedTPRFPR, against the paper's procedure in the same run.

Baseline ("paper loop"): the procedure of Appendix B.2 written directly: for each of
360 directions a fresh ``numpy.argsort`` and a Python-level sweep over the sorted
samples (deterministic thresholds). Ours: ``search="grid"`` (the same 360
directions, vectorised sweep) and ``search="exact"`` (every direction, O(m^2 log m);
timed at n = 1e3 .. 1e4, extrapolated as n^2 log n beyond and marked so).
Data: the synthetic example of section 3.1 (scores r_B and g, 0/1 losses).

Run: ``python benchmarks/bench_ood.py [--sizes 10000 100000] [--exact-sizes 1000 ...]``.
Writes benchmarks/results/bench_ood.md.
"""

from __future__ import annotations

import argparse
import math
import platform
import time
from pathlib import Path

import numpy as np

from abstain.datasets import synthetic_ood_1d
from abstain.ood import BoundedTPRFPR

RESULTS = Path(__file__).parent / "results" / "bench_ood.md"


def paper_loop(s2, is_ood, losses, tpr, fpr, d=360, every=1):
    """The paper's procedure; with ``every > 1`` only every ``every``-th direction."""
    n_i, n_o = float((~is_ood).sum()), float(is_ood.sum())
    best = math.inf
    for k in range(0, d, every):
        a = k * math.pi / d
        s = s2[:, 0] * math.cos(a) + s2[:, 1] * math.sin(a)
        order = np.argsort(s)
        i = o = loss = 0.0
        for j in order.tolist():
            if is_ood[j]:
                o += 1.0
            else:
                i += 1.0
                loss += losses[j]
            if i >= tpr * n_i and o <= fpr * n_o:
                best = min(best, loss / i)
    return best


def timed(func):
    start = time.perf_counter()
    out = func()
    return time.perf_counter() - start, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--exact-sizes", type=int, nargs="+", default=[1_000, 2_000, 5_000, 10_000])
    ap.add_argument("--baseline-subset-above", type=int, default=50_000,
                    help="above this n the paper loop runs 36 of the 360 directions, x10")
    args = ap.parse_args()
    data = synthetic_ood_1d()
    rows = []
    exact_t = {}
    for n in sorted(set(args.sizes) | set(args.exact_sizes)):
        x, y = data.sample(n, random_state=1)
        is_ood = y == 0
        losses = np.where(is_ood, 0.0, (data.h_bayes(x) != y).astype(float))
        s2 = np.stack((data.r_bayes(x), data.g(x)), 1)
        args3 = (s2, is_ood, losses)
        if n > args.baseline_subset_above:
            t_sub, r_base = timed(lambda a=args3: paper_loop(*a, 0.7, 0.2, every=10))
            t_base, base_note = 10 * t_sub, "36 of 360 directions timed, x10"
        else:
            t_base, r_base = timed(lambda a=args3: paper_loop(*a, 0.7, 0.2))
            base_note = "measured"
        t_grid, m = timed(lambda a=args3: BoundedTPRFPR(0.7, 0.2).fit(*a))
        rows.append((n, "paper loop (baseline)", t_base, r_base, base_note))
        rows.append((n, "grid, 360 directions", t_grid, m.risk_, "measured"))
        if n in args.exact_sizes:
            exact = BoundedTPRFPR(0.7, 0.2, search="exact")
            t_ex, me = timed(lambda a=args3, e=exact: e.fit(*a))
            exact_t[n] = t_ex
            rows.append((n, "exact, all directions", t_ex, me.risk_, "measured"))
        else:
            m0 = max(k for k in exact_t if k < n)
            est = exact_t[m0] * (n / m0) ** 2 * math.log(n) / math.log(m0)
            note = f"not run: extrapolated n^2 log n from {m0:,}"
            rows.append((n, "exact, all directions", est, math.nan, note))
        k = 3
        for r in rows[-k:]:
            print(f"n={r[0]:>7,} {r[1]:<24} {r[2]:9.3f} s  ratio {r[2] / t_base:8.4f}  "
                  f"risk {r[3]:.4f}  {r[4]}", flush=True)
    lines = [
        "# Double-score BoundedTPRFPR fit (TPR >= 0.7, FPR <= 0.2)",
        "",
        f"Python {platform.python_version()}, NumPy {np.__version__}, {platform.machine()}. "
        "Ratio = time / time of the paper loop at the same n, measured in the same run. "
        "Produced by `python benchmarks/bench_ood.py`.",
        "",
        "| n | method | time (s) | ratio to paper loop | risk | note |",
        "|---|---|---|---|---|---|",
    ]
    base = {r[0]: r[2] for r in rows if r[1].startswith("paper")}
    for n, name, t, risk, note in rows:
        lines.append(f"| {n:,} | {name} | {t:.3f} | {t / base[n]:.4f} | {risk:.4f} | {note} |")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
