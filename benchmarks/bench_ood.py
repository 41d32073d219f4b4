"""Speed of fitting a double-score BoundedTPRFPR, against the paper's procedure in the same run.

Baseline ("paper loop"): the procedure of Appendix B.2 written directly: for each of
360 directions a fresh ``numpy.argsort`` and a Python-level sweep over the sorted
samples (deterministic thresholds). Ours: ``search="grid"`` with the default 360
directions and with the paper authors' 1602 angles (the same vectorised sweep), and
``search="exact"`` (every direction: branch and bound over intervals of directions, the
same rule as the full sweep over every swap). The full sweep itself (O(m^2 log m), the
previous ``search="exact"``) is timed at small n only (``--full-sizes``).
Data: the synthetic example of section 3.1 (scores r_B and g, 0/1 losses).

Second table: the exact fits of the three OOD models against the 1602-direction grid,
same run (the exact CostBasedOOD up to ``--cost-exact-above`` rows); the same table on a
continuous Gaussian pair (``--gauss-sizes``, every model exact, written to
benchmarks/results/bench_ood_gauss.md; ``--gauss-only`` runs just that table).

Third table: the AUROC of the pair (r_B, g), the envelope over directions, by
``auroc(..., search="grid")`` (baseline: 360 directions, 2001 FPR points) and by
``search="exact"`` (every direction, exact area), each on the raw columns and with the
first column x100: the grid's value moves with the units, the exact one does not
(``--metric-sizes`` with no value keeps the table of the results file as it is).

Run: ``python benchmarks/bench_ood.py [--sizes 1000 5000 10000 100000] [--full-sizes 1000 ...]
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

from abstain._ood_search.sample import Sample, tpr_fpr_constraint
from abstain._ood_search.search import exact_search
from abstain.datasets import synthetic_ood_1d
from abstain.metrics import auroc
from abstain.models import BoundedPrecisionRecall, BoundedTPRFPR, CostBasedOOD

RESULTS = Path(__file__).parent / "results" / "bench_ood.md"
GAUSS_RESULTS = RESULTS.with_name("bench_ood_gauss.md")
TPR, FPR = 0.7, 0.2


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


def full_sweep(s2, is_ood, losses):
    """The full sweep over every swap (the previous ``search="exact"``): its risk."""
    sample = Sample.of(s2, is_ood, losses)
    pts, x = sample.pairs()
    state = exact_search(pts, x, tpr_fpr_constraint(sample, TPR, FPR), None, sample.n_id,
                         sample.n_ood)
    return state.best.objective


def timed(func):
    start = time.perf_counter()
    out = func()
    return time.perf_counter() - start, out


def sample(data, n):
    x, y = data.sample(n, random_state=1)
    is_ood = y == 0
    losses = np.where(is_ood, 0.0, (data.h_bayes(x) != y).astype(float))
    return np.stack((data.r_bayes(x), data.g(x)), 1), is_ood, losses


def gauss_sample(n):
    """A continuous pair without the section-3.1 data's underflow: two correlated Gaussian
    scores, OOD rows (30 %) shifted by (1, 1.5), ID losses 0/1 with a logistic rate in the
    first score. Seeded."""
    rng = np.random.default_rng(1)
    is_ood = rng.random(n) < 0.3
    s2 = rng.normal(size=(n, 2)) @ np.array([[1.0, 0.5], [0.0, 0.8]])
    s2 += is_ood[:, None] * np.array([1.0, 1.5])
    p_err = 1.0 / (1.0 + np.exp(3.0 - 2.0 * s2[:, 0]))
    losses = np.where(is_ood, 0.0, (rng.random(n) < p_err).astype(float))
    return s2, is_ood, losses


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000, 5_000, 10_000, 100_000])
    ap.add_argument("--full-sizes", type=int, nargs="*", default=[1_000, 5_000])
    ap.add_argument("--baseline-subset-above", type=int, default=50_000,
                    help="above this n the paper loop runs 36 of the 360 directions, x10")
    ap.add_argument("--model-sizes", type=int, nargs="+",
                    default=[10_000, 20_000, 50_000, 100_000])
    ap.add_argument("--cost-exact-above", type=int, default=50_000,
                    help="above this n the exact CostBasedOOD fit is not run: its time grows "
                    "with the square of the pairs whose swaps pack near one angle (see "
                    "docs/ood.md)")
    ap.add_argument("--gauss-sizes", type=int, nargs="*",
                    default=[10_000, 20_000, 50_000, 100_000],
                    help="sizes of the models table on a continuous Gaussian pair")
    ap.add_argument("--gauss-only", action="store_true",
                    help="run only the Gaussian models table (into bench_ood_gauss.md)")
    ap.add_argument("--metric-sizes", type=int, nargs="*",
                    default=[1_000, 2_000, 5_000, 10_000, 20_000])
    args = ap.parse_args()
    if args.gauss_sizes:
        gauss = models_table(gauss_sample, args.gauss_sizes, max(args.gauss_sizes),
                             "on a continuous Gaussian pair (`gauss_sample`)")
        GAUSS_RESULTS.parent.mkdir(parents=True, exist_ok=True)
        GAUSS_RESULTS.write_text("\n".join(gauss) + "\n")
    if args.gauss_only:
        return
    data = synthetic_ood_1d()
    load0 = os.getloadavg()[0]
    rows = []
    for n in sorted(set(args.sizes) | set(args.full_sizes)):
        args3 = sample(data, n)
        if n > args.baseline_subset_above:
            t_sub, r_base = timed(lambda a=args3: paper_loop(*a, TPR, FPR, every=10))
            t_base, base_note = 10 * t_sub, "36 of 360 directions timed, x10"
        else:
            t_base, r_base = timed(lambda a=args3: paper_loop(*a, TPR, FPR))
            base_note = "measured"
        rows.append((n, "paper loop (baseline)", t_base, r_base, base_note))
        for d in (360, 1602):
            t_grid, m = timed(lambda a=args3, d=d: BoundedTPRFPR(TPR, FPR, n_directions=d)
                              .fit(*a))
            rows.append((n, f"grid, {d} directions", t_grid, m.risk_, "measured"))
        if n in args.sizes:
            t_ex, me = timed(lambda a=args3: BoundedTPRFPR(TPR, FPR, search="exact").fit(*a))
            rows.append((n, "exact (branch and bound)", t_ex, me.risk_, "measured"))
        if n in args.full_sizes:
            t_full, r_full = timed(lambda a=args3: full_sweep(*a))
            rows.append((n, "exact, full sweep of every swap", t_full, r_full, "measured"))
        for r in rows:
            if r[0] == n:
                print(f"n={r[0]:>7,} {r[1]:<32} {r[2]:9.3f} s  ratio {r[2] / t_base:8.4f}  "
                      f"risk {r[3]:.6f}  {r[4]}", flush=True)
    load1 = os.getloadavg()[0]
    lines = [
        f"# Double-score BoundedTPRFPR fit (TPR >= {TPR}, FPR <= {FPR})",
        "",
        f"Python {platform.python_version()}, NumPy {np.__version__}, {platform.machine()}, "
        f"{os.cpu_count()} cores shared with other work (load average {load0:.1f} before "
        f"this table, {load1:.1f} after: read the ratios). Ratio = time / time of the paper "
        "loop at the same n, measured in the same run. Produced by "
        "`python benchmarks/bench_ood.py`.",
        "",
        "| n | method | time (s) | ratio to paper loop | risk | note |",
        "|---|---|---|---|---|---|",
    ]
    base = {r[0]: r[2] for r in rows if r[1].startswith("paper")}
    for n, name, t, risk, note in rows:
        lines.append(f"| {n:,} | {name} | {t:.3f} | {t / base[n]:.4f} | {risk:.6f} | {note} |")
    lines += [""] + models_table(lambda n: sample(data, n), args.model_sizes,
                                 args.cost_exact_above, "on the pair (r_B, g) of section 3.1")
    if args.metric_sizes:
        metric_lines = metric_table(data, args.metric_sizes)
    else:
        old = RESULTS.read_text() if RESULTS.exists() else ""
        start = old.find("# AUROC of the pair")
        metric_lines = old[start:].rstrip("\n").split("\n") if start >= 0 else []
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines + [""] + metric_lines) + "\n")


def models_table(draw, sizes, cost_exact_above, data_name) -> list[str]:
    """Exact fits of the three models against the 1602-direction grid (the baseline here)."""
    models = [
        ("BoundedTPRFPR(0.7, 0.2)", lambda **k: BoundedTPRFPR(TPR, FPR, **k), "risk_"),
        ("BoundedPrecisionRecall(0.9, 0.6)", lambda **k: BoundedPrecisionRecall(0.9, 0.6, **k),
         "risk_"),
        ("CostBasedOOD(0.2, 1.0, 0.0)", lambda **k: CostBasedOOD(0.2, 1.0, 0.0, **k), "cost_"),
    ]
    lines = [
        f"# The three OOD models {data_name}: exact against the 1602-direction grid",
        "",
        "Ratio = time of `search=\"exact\"` / time of `n_directions=1602` (the baseline), "
        f"same run. Load average before this table: {os.getloadavg()[0]:.1f}. Objective: "
        "the selective risk (`risk_`), or the extended-loss risk (`cost_`) of CostBasedOOD.",
        "",
        "| n | model | grid 1602 (s) | exact (s) | ratio exact / grid | objective grid "
        "| objective exact |",
        "|---|---|---|---|---|---|---|",
    ]
    for n in sizes:
        s2, is_ood, losses = draw(n)
        for name, make, attr in models:
            t_g, g = timed(lambda mk=make, a=(s2, is_ood, losses): mk(n_directions=1602).fit(*a))
            if attr == "cost_" and n > cost_exact_above:
                row = (f"| {n:,} | {name} | {t_g:.3f} | not run | | {getattr(g, attr):.6f} "
                       "| |")
            else:
                t_e, e = timed(lambda mk=make, a=(s2, is_ood, losses): mk(search="exact").fit(*a))
                row = (f"| {n:,} | {name} | {t_g:.3f} | {t_e:.3f} | {t_e / t_g:.3f} | "
                       f"{getattr(g, attr):.6f} | {getattr(e, attr):.6f} |")
            print(row, flush=True)
            lines.append(row)
    return lines


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
        s2, is_ood, _ = sample(data, n)
        scaled = s2 * np.array([100.0, 1.0])
        t_grid, v_grid = timed(lambda s=s2, o=is_ood: auroc(o, s, search="grid"))
        t_ex, v_ex = timed(lambda s=s2, o=is_ood: auroc(o, s, search="exact"))
        v_grid100 = auroc(is_ood, scaled, search="grid")
        v_ex100 = auroc(is_ood, scaled, search="exact")
        row = (f"| {n:,} | {t_grid:.3f} | {t_ex:.3f} | {t_ex / t_grid:.1f} | {v_grid:.6f} "
               f"| {v_grid100:.6f} | {v_ex:.6f} | {v_ex100:.6f} |")
        print(row, flush=True)
        lines.append(row)
    return lines


if __name__ == "__main__":
    main()
