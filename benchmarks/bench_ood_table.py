"""Cost and values of a double-score pair's row of ``evaluate_ood`` by its three searches.

For each size, the row of the pair (r_B, g) of the synthetic example of section 3.1 (0/1
losses) by ``evaluate_ood(..., search=...)``: ``"grid"`` (the baseline: the paper's 360
directions on the columns as given), ``"exact"`` (every direction) and ``"auto"`` (the
default: exact up to ``AUTO_EXACT_ROWS`` rows, the grid of the standardised columns
above), each on the raw columns and with the first column x100. Columns: seconds and the
ratio to the grid measured in the same run, then the AUROC and the FPR at TPR 0.95 (raw and
x100). A fourth row, "exact, per metric", calls ``auroc``, ``fpr_at_tpr``, ``oscr`` and
``selective_risk_at_tpr_fpr`` with ``search="exact"`` one by one (three sweeps of the
directions where ``evaluate_ood`` makes one) and checks the values equal.
``risk_coverage_curve_at_fpr`` (100 TPR targets, FPR <= 0.2) by grid and exact is
timed beside it.

Run: ``python benchmarks/bench_ood_table.py [--sizes 1000 2000 5000] [--exact-max 5000]``.
Writes benchmarks/results/bench_ood_table.md. The machine may be shared with other work:
compare the ratios, measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings
from pathlib import Path

import numpy as np

from abstain.datasets import synthetic_ood_1d
from abstain.metrics import (
    AUTO_EXACT_ROWS,
    auroc,
    evaluate_ood,
    fpr_at_tpr,
    oscr,
    risk_coverage_curve_at_fpr,
    selective_risk_at_tpr_fpr,
)

RESULTS = Path(__file__).parent / "results" / "bench_ood_table.md"


def timed(func, *args, **kwargs):
    start = time.perf_counter()
    out = func(*args, **kwargs)
    return time.perf_counter() - start, out


def per_metric(losses, ood, pair) -> list[float]:
    """The exact envelope metrics and risk of a pair, one function call each."""
    return [auroc(ood, pair, search="exact"), fpr_at_tpr(ood, pair, 0.95, search="exact"),
            oscr(losses, ood, pair, search="exact"),
            selective_risk_at_tpr_fpr(losses, ood, pair, 0.95, 0.05, search="exact")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 5000, 20000])
    parser.add_argument("--exact-max", type=int, default=5000,
                        help="largest size timed with search='exact'")
    args = parser.parse_args()
    data = synthetic_ood_1d()
    lines = [
        "# A double-score pair's row of evaluate_ood: grid, exact, auto",
        "",
        f"Python {platform.python_version()}, NumPy {np.__version__}, {platform.machine()}. "
        f"Load average before the run: {os.getloadavg()[0]:.1f} (a shared 2-core machine: "
        "timings are noisy, read the ratios to the grid measured in the same run). "
        f"AUTO_EXACT_ROWS = {AUTO_EXACT_ROWS}.",
        "",
        "| n | search | used | s | / grid | AUROC | AUROC x100 | FPR@95 | FPR@95 x100 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    curve_lines = ["", "risk_coverage_curve_at_fpr, 100 TPR targets, FPR <= 0.2:", "",
                   "| n | grid s | exact s | exact / grid | largest (grid - exact) risk |",
                   "|---|---|---|---|---|"]
    warnings.simplefilter("ignore")
    for n in args.sizes:
        x, y = data.sample(n, random_state=0)
        ood = y == 0
        losses = np.where(ood, np.nan, data.h_bayes(x) != y).astype(float)
        pair = np.stack((data.r_bayes(x), data.g(x)), 1)
        base = None
        for search in ("grid", "exact", "auto"):
            if search == "exact" and n > args.exact_max:
                lines.append(f"| {n:,} | exact | | not run (above --exact-max) | | | | | |")
                continue
            sec, tab = timed(evaluate_ood, losses, ood, {"p": pair}, search=search)
            big = evaluate_ood(losses, ood, {"p": pair * [100.0, 1.0]}, search=search)
            base = sec if search == "grid" else base
            v, w = tab.row("p"), big.row("p")
            lines.append(f"| {n:,} | {search} | {tab.search[0]} | {sec:.3f} | {sec / base:.1f} "
                         f"| {v['auroc']:.6f} | {w['auroc']:.6f} | {v['fpr_at_tpr']:.6f} "
                         f"| {w['fpr_at_tpr']:.6f} |")
            print(lines[-1], flush=True)
            if search == "exact":
                sec, one = timed(per_metric, losses, ood, pair)
                np.testing.assert_array_equal(
                    one, [v["auroc"], v["fpr_at_tpr"], v["oscr"], v["risk_at_tpr_fpr"]])
                lines.append(f"| {n:,} | exact, per metric | exact | {sec:.3f} "
                             f"| {sec / base:.1f} | {one[0]:.6f} | | {one[1]:.6f} | |")
                print(lines[-1], flush=True)
        if n <= args.exact_max:
            tg, g = timed(risk_coverage_curve_at_fpr, losses, ood, pair, fpr=0.2,
                          search="grid")
            te, e = timed(risk_coverage_curve_at_fpr, losses, ood, pair, fpr=0.2,
                          search="exact")
            gap = np.nanmax(g.risk - e.risk) if np.isfinite(e.risk).any() else np.nan
            curve_lines.append(f"| {n:,} | {tg:.3f} | {te:.3f} | {te / tg:.1f} | {gap:.2e} |")
            print(curve_lines[-1], flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines + curve_lines) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
