"""Speed of fitting a double-score BoundedTPRFPR, against the paper's procedure in the same run.

Baseline ("paper loop"): the procedure of Appendix B.2 written directly: for each of
360 directions a fresh ``numpy.argsort`` and a Python-level sweep over the sorted
samples (deterministic thresholds). Ours: ``search="grid"`` (the same 360
directions, vectorised sweep) and ``search="exact"`` (every direction, O(m^2 log m);
timed at n = 1e3 .. 1e4, extrapolated as n^2 log n beyond and marked so).
Data: the synthetic example of section 3.1 (scores r_B and g, 0/1 losses).

Second table: the AUROC of the pair (r_B, g), the envelope over directions, by
``auroc(..., search="grid")`` (baseline: 360 directions, 2001 FPR points) and by
``search="exact"`` (every direction, exact area), each on the raw columns and with the
first column x100: the grid's value moves with the units, the exact one does not.

Run: ``python benchmarks/bench_ood.py [--sizes 10000 100000] [--exact-sizes 1000 ...]
[--metric-sizes 1000 ...]``. Writes benchmarks/results/bench_ood.md. The machine may be
shared with other work: compare the ratios, measured in the same run.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time
from pathlib import Path

import numpy as np

from abstain.datasets import synthetic_ood_1d
from abstain.metrics import auroc
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
    ap.add_argument("--metric-sizes", type=int, nargs="+",
                    default=[1_000, 2_000, 5_000, 10_000, 20_000])
    args = ap.parse_args()
    data = synthetic_ood_1d()
    metric_lines = metric_table(data, args.metric_sizes)
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
    RESULTS.write_text("\n".join(lines + [""] + metric_lines) + "\n")


def metric_table(data, sizes) -> list[str]:
    """AUROC of the pair on the grid (baseline) and exact, raw and with column 0 x100."""
    lines = [
        "# AUROC of the pair (r_B, g): the envelope over directions",
        "",
        "Ratio = time / time of `auroc(..., search=\"grid\")` (360 directions, 2001 FPR "
        "points) at the same n, in the same run. `x100`: the first column multiplied by 100. "
        f"Load average before this table: {os.getloadavg()[0]:.1f} (a shared machine: "
        "read the ratios).",
        "",
        "| n | grid time (s) | exact time (s) | ratio exact / grid | grid | grid x100 "
        "| exact | exact x100 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for n in sizes:
        x, y = data.sample(n, random_state=1)
        is_ood = y == 0
        s2 = np.stack((data.r_bayes(x), data.g(x)), 1)
        scaled = s2 * np.array([100.0, 1.0])
        t_grid, v_grid = timed(lambda s=s2, o=is_ood: auroc(o, s))
        t_ex, v_ex = timed(lambda s=s2, o=is_ood: auroc(o, s, search="exact"))
        v_grid100 = auroc(is_ood, scaled)
        v_ex100 = auroc(is_ood, scaled, search="exact")
        row = (f"| {n:,} | {t_grid:.3f} | {t_ex:.3f} | {t_ex / t_grid:.1f} | {v_grid:.6f} "
               f"| {v_grid100:.6f} | {v_ex:.6f} | {v_ex100:.6f} |")
        print(row, flush=True)
        lines.append(row)
    return lines


if __name__ == "__main__":
    main()
