"""Table 1 and Figure 1 of Franc, Prusa and Paplham (2023) on the synthetic 1-D example.

Methods: A(inf) s = g, B(0.2) s = r_B + 0.2 g, C(0) s = r_B (single scores) and
D(R), the double score (r_B, g). Two evaluations of each:

* "exact": numerical integration of the known densities. The line [-9, 11] is cut
  into cells of width h; each cell centre x is one ID row of weight (1 - pi) p_I(x) h
  with loss r_B(x) (the expected 0/1 loss of h_B) and one OOD row of weight
  pi p_O(x) h. The fits and metrics on this weighted sample are Riemann sums of the
  paper's integrals; D uses the exact direction search.
* "sample": n rows drawn from the mixture, 0/1 losses of h_B, fitted through the
  public API (D on the grid of 360 directions).

Metrics: selective risk at TPR 0.7 / FPR 0.2 and at precision 0.9 / recall 0.7
(precision with pi = 0.25); AUROC; AUPR (ID positive, precision with pi); OSCR
(CCR against FPR). For D the ROC, PR and CCR curves are the upper envelopes over
the 360 directions (largest TPR, precision, CCR at each bound), integrated by the
trapezoid rule on 2001 points.

Run: ``python benchmarks/table1_synthetic.py [--n 200000] [--ood-scale variance]``.
Writes benchmarks/results/table1_synthetic.md and figure1_synthetic.png.
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np

from abstain import InfeasibleTargetWarning
from abstain._ood_search import search as core  # weighted curves for the integration rows
from abstain.datasets import synthetic_ood_1d
from abstain.models import BoundedPrecisionRecall, BoundedTPRFPR

OUT = Path(__file__).parent / "results"
PAPER = {
    "A(inf)": ("0.157", "0.157", "0.88", "0.96", "0.82"),
    "B(0.2)": ("0.143", "0.143", "0.86", "0.95", "0.83"),
    "C(0)": ("unable", "unable", "0.76", "0.92", "0.86"),
    "D(R)": ("0.133", "0.129", "0.88", "0.96", "0.86"),
}
PI = 0.25


def method_scores(data, x):
    r, g = data.r_bayes(x), data.g(x)
    return {"A(inf)": g, "B(0.2)": r + 0.2 * g, "C(0)": r, "D(R)": np.stack((r, g), 1)}


def curves(s, w_id, w_ood, w_loss, grid):
    """Envelopes over directions: max TPR, max precision (pi) and max CCR at each bound."""
    s2 = s if s.ndim == 2 else s[:, None]
    dirs = core.grid_weights(360) if s2.shape[1] == 2 else np.ones((1, 1))
    n_i, n_o = w_id.sum(), w_ood.sum()
    roc, ccr, prec = (np.zeros(grid.size) for _ in range(3))
    for w in dirs:
        kn = core.knots(core.project(s2, w), w_id, w_ood, w_id - w_loss)
        o, i, c = kn.O / n_o, kn.I / n_i, kn.L / n_i
        roc = np.maximum(roc, np.interp(grid, *core_strict(o, i, last=True)))
        ccr = np.maximum(ccr, np.interp(grid, *core_strict(o, c, last=True)))
        with np.errstate(invalid="ignore", divide="ignore"):
            p = (1 - PI) * i / ((1 - PI) * i + PI * o)
        p[0] = p[1]
        ii, pp = core_strict(i, p, last=False)
        suffix = np.maximum.accumulate(pp[::-1])[::-1]
        later = suffix[np.minimum(np.searchsorted(ii, grid), ii.size - 1)]
        prec = np.maximum(prec, np.maximum(np.interp(grid, ii, pp), later))
    trap = lambda y: float(np.sum(np.diff(grid) * (y[1:] + y[:-1]) / 2))  # noqa: E731
    return trap(roc), trap(prec), trap(ccr), roc, prec


def core_strict(x, y, last):
    """Strictly increasing x for interpolation: at repeated x keep the last (or first) y."""
    if last:
        keep = np.concatenate((np.diff(x) > 0, [True]))
    else:
        keep = np.concatenate(([True], np.diff(x) > 0))
    return x[keep], y[keep]


def evaluate(s, is_ood, losses, weight, search):
    w_id = np.where(is_ood, 0.0, weight)
    w_ood = np.where(is_ood, weight, 0.0)
    row = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleTargetWarning)
        for model in (BoundedTPRFPR(tpr=0.7, fpr=0.2, search=search),
                      BoundedPrecisionRecall(precision=0.9, recall=0.7, ood_prior=PI,
                                             search=search)):
            m = model.fit(s, is_ood, losses, sample_weight=weight)
            row.append(f"{m.risk_:.3f}" if m.feasible_ else "unable")
    grid = np.linspace(0.0, 1.0, 2001)
    a_roc, a_pr, a_oscr, roc, prec = curves(s, w_id, w_ood, w_id * losses, grid)
    row += [f"{a_roc:.2f}", f"{a_pr:.2f}", f"{a_oscr:.2f}"]
    return row, (grid, roc, prec)


def rc_curve(s, is_ood, losses, weight, tprs):
    """Least risk at TPR >= t and FPR <= 0.2 (NaN where unable)."""
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleTargetWarning)
        for t in tprs:
            m = BoundedTPRFPR(tpr=t, fpr=0.2).fit(s, is_ood, losses, sample_weight=weight)
            out.append(m.risk_ if m.feasible_ else np.nan)
    return np.array(out)


def lp_optimum(x, h, data, model):
    """Least selective risk of any acceptance function c(x) in [0, 1] on the cells ``x``.

    Problem (13) (``model="tpr_fpr"``: TPR >= 0.7, FPR <= 0.2) or (14) (``"prec_rec"``:
    precision >= 0.9 with pi, recall >= 0.7) as a linear-fractional program, solved
    exactly by the Charnes-Cooper substitution ``z = c / TPR``, ``tau = 1 / TPR``.
    No selector of any score can do better on these cells.
    """
    from scipy.optimize import linprog

    p_i, p_o, r = data.p_id(x) * h, data.p_ood(x) * h, data.r_bayes(x)
    m = x.size
    cost = np.concatenate((r * p_i, [0.0]))
    a_ub = [np.concatenate((np.zeros(m), [1.0]))]  # tau <= 1 / 0.7
    b_ub = [1 / 0.7]
    if model == "tpr_fpr":
        a_ub.append(np.concatenate((p_o, [-0.2])))  # FPR <= 0.2
    else:  # (1 - pi) * 0.1 * TPR >= 0.9 * pi * FPR
        a_ub.append(np.concatenate((0.9 * PI * p_o - (1 - PI) * 0.1 * p_i, [0.0])))
    b_ub.append(0.0)
    box = np.hstack((np.eye(m), -np.ones((m, 1))))  # z <= tau, i.e. c <= 1
    res = linprog(cost, A_ub=np.vstack([*a_ub, box]), b_ub=np.concatenate((b_ub, np.zeros(m))),
                  A_eq=np.concatenate((p_i, [0.0]))[None, :], b_eq=[1.0],
                  bounds=(0, None), method="highs")
    return float(res.fun) if res.status == 0 else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--h", type=float, default=0.004)
    ap.add_argument("--ood-scale", default="variance", choices=("variance", "std"))
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    data = synthetic_ood_1d(ood_scale=args.ood_scale)
    # integration rows
    xc = np.arange(-9.0, 11.0, args.h) + args.h / 2
    xq = np.concatenate((xc, xc))
    is_ood_q = np.repeat([False, True], xc.size)
    wq = np.concatenate(((1 - PI) * data.p_id(xc) * args.h, PI * data.p_ood(xc) * args.h))
    lq = np.concatenate((data.r_bayes(xc), np.zeros(xc.size)))
    # sample rows
    xs, ys = data.sample(args.n, random_state=0)
    is_ood_s = ys == 0
    ls = np.where(is_ood_s, 0.0, (data.h_bayes(xs) != ys).astype(float))
    sq, ss = method_scores(data, xq), method_scores(data, xs)
    lines = [
        "# Table 1 of Franc, Prusa and Paplham (2023), reproduced",
        "",
        f"OOD density N(3, 0.2) read with 0.2 as a **{args.ood_scale}**; pi = {PI}; "
        f"integration cell h = {args.h} on [-9, 11]; sample n = {args.n:,} (seed 0).",
        "Produced by `python benchmarks/table1_synthetic.py"
        f"{'' if args.ood_scale == 'variance' else ' --ood-scale std'}`.",
        "",
        "| method | source | risk @ TPR 0.7, FPR 0.2 | risk @ prec 0.9, rec 0.7 "
        "| AUROC | AUPR | OSCR |",
        "|---|---|---|---|---|---|---|",
    ]
    figs = {}
    for name in PAPER:
        row_q, figs[name] = evaluate(sq[name], is_ood_q, lq, wq, "exact")
        row_s, _ = evaluate(ss[name], is_ood_s, ls, np.ones(args.n), "grid")
        lines.append(f"| {name} | paper | " + " | ".join(PAPER[name]) + " |")
        lines.append(f"| {name} | integration | " + " | ".join(row_q) + " |")
        lines.append(f"| {name} | sample | " + " | ".join(row_s) + " |")
        print(name, row_q, row_s, flush=True)
    xl = np.arange(-7.0, 9.0, 0.01) + 0.005
    lp = {model: lp_optimum(xl, 0.01, data, model) for model in ("tpr_fpr", "prec_rec")}
    lines += [
        "",
        "## Why the selective risks differ from the paper's",
        "",
        "The least selective risk that *any* acceptance function c(x) can reach on this setup, "
        "whatever score it thresholds, is a linear-fractional program over c on a grid of "
        "1,600 cells of width 0.01 (`lp_optimum`, solved exactly by the Charnes-Cooper "
        f"substitution): **{lp['tpr_fpr']:.4f}** at TPR >= 0.7, FPR <= 0.2 and "
        f"**{lp['prec_rec']:.4f}** at precision >= 0.9, recall >= 0.7. Method D, the "
        "double score (r_B, g), reaches these bounds, as Theorem 3 says it must. The paper's "
        "D values (0.133 and 0.129) lie *below* them, so no selector attains them under the "
        "definition of selective risk the paper states (error on the accepted ID samples). "
        "The paper's risks are close to 0.7 x ours (0.160, 0.146, 0.131 for A, B, D at TPR "
        "0.7), i.e. to the error mass on accepted ID samples divided by all ID samples, but "
        "not equal to it, so we report the stated definition and leave the gap open. AUROC "
        "and AUPR of A, B and D agree with the paper to two decimals. Method C scores by "
        "r_B alone; the OOD mode at x = 3 has a low conditional risk (the class-3 mode), so "
        "r_B ranks OOD inputs as *more* ID than the ID average and its AUROC is below 0.5 "
        "(0.37). The paper's 0.76 for C is not reproducible with this score under either "
        "positive-class convention (1 - 0.37 = 0.63). OSCR here is the area under the "
        "correct-and-accepted ID rate against FPR; the paper's values (0.82-0.86) do not "
        "follow from that definition for these methods.",
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    suffix = "" if args.ood_scale == "variance" else "_std"
    (args.out / f"table1_synthetic{suffix}.md").write_text("\n".join(lines) + "\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover
        raise ImportError("the figure needs matplotlib: pip install 'abstain[plot]'") from exc
    tprs = np.linspace(0.02, 1.0, 50)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for name in PAPER:
        s = sq[name]
        axes[0].plot(tprs, rc_curve(s, is_ood_q, lq, wq, tprs), label=name)
        grid, roc, prec = figs[name]
        axes[1].plot(grid, roc, label=name)
        axes[2].plot(grid, prec, label=name)
    axes[0].set(xlabel="TPR (coverage)", ylabel="selective risk", title="a) RC curve at FPR 0.2")
    axes[1].set(xlabel="FPR", ylabel="TPR", title="b) ROC")
    axes[2].set(xlabel="recall (TPR)", ylabel="precision", title="c) precision-recall")
    for a in axes:
        a.legend()
        a.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.out / f"figure1_synthetic{suffix}.png", dpi=110)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
