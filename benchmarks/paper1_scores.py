"""Learned uncertainty scores on real data: the protocol and tables of Franc et al. (2023, sec. 5).

For every bundled dataset (``abstain.datasets``; run ``make data`` first) and 5 random
Trn1/Val1/Trn2/Val2/Tst = 30/10/30/10/20 splits, :func:`abstain.evaluation.evaluate_scores`
trains the predictor on Trn1 (C from {1, 10, 100, 1000} by Val1 error), learns each
score on Trn2 (C from {0, 1, 10, 100, 1000} by Val2 AuRC) and reports the test AuRC:

- classification, 100 x 0/1 loss (percent, as the paper reports): logistic regression
  with MCP, SELE, REG, TCP; a linear SVM (Crammer-Singer for more than two classes) with
  the margin score, SELE, REG;
- ordinal regression, absolute error: :class:`abstain.ordinal.SVOR` with the margin
  score (distance to the nearest threshold), SELE, REG.

Beside the paper's learners, the baseline-aware ones (not in the paper): ``SELE+b``,
``REG+b`` (and ``TCP+b`` for LR) take the baseline uncertainty as an input and are kept
only where they beat the baseline on Val2 (paired bootstrap of the Val2 AuRC, win
fraction >= 0.9; ``evaluate_scores(..., baseline_input=..., safe=...)``). For the SVM
the multi-class margin is reported both ways: ``margin`` is ``-max_y f_y(x)`` (the
formula of section 5.2.1, the baseline the learners see) and ``top2`` the gap between
the two highest class scores (identical for two classes). Each family's table ends
with win/tie/loss counts against the baseline: a loss where a method's mean test AuRC
exceeds the baseline's by more than the baseline's standard deviation over the splits,
a win where it is lower by more than that.

Predictor C is scikit-learn's (it multiplies the summed loss). Writes
``benchmarks/results/paper1_classification.md``, ``paper1_ordinal.md`` (means +- std,
the paper's numbers beside ours where the datasets are shared, average ranks, Friedman
test, Nemenyi CD) with critical-difference plots ``paper1_cd_*.png`` and the raw
numbers in ``paper1_raw_<kind>.json``.

Run: ``make bench-paper1`` or
``python benchmarks/paper1_scores.py [--kind classification|ordinal|all] [--datasets ...]
[--splits 5] [--jobs 2] [--prefix paper1]`` (``--prefix`` names every output file).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import numpy as np

from abstain.datasets import list_datasets, load_dataset
from abstain.evaluation import (
    absolute_losses,
    compare_methods,
    evaluate_scores,
    plot_critical_difference,
)
from abstain.scores import margin

RESULTS = Path(__file__).parent / "results"

# Published test AuRC (mean, std) from Tables 3 and 4 for the datasets we share.
PAPER = {
    ("LR", "letter"): {"MCP": (7.43, 0.40), "SELE": (6.42, 0.34), "REG": (7.44, 0.59),
                       "TCP": (6.71, 0.42), "risk": (23.32, 0.60)},
    ("LR", "pendigits"): {"MCP": (0.69, 0.04), "SELE": (1.55, 0.19), "REG": (1.97, 0.55),
                          "TCP": (1.47, 0.39), "risk": (5.29, 0.40)},
    ("LR", "satimage"): {"MCP": (3.83, 0.26), "SELE": (3.68, 0.27), "REG": (4.93, 1.07),
                         "TCP": (4.52, 0.85), "risk": (15.06, 0.46)},
    ("LR", "shuttle"): {"MCP": (0.59, 0.09), "SELE": (0.26, 0.07), "REG": (1.24, 0.51),
                        "TCP": (0.58, 0.13), "risk": (3.36, 0.25)},
    ("SVM", "letter"): {"margin": (10.20, 0.22), "SELE": (6.05, 0.65), "REG": (7.15, 0.65),
                        "risk": (22.06, 0.69)},
    ("SVM", "pendigits"): {"margin": (2.79, 0.40), "SELE": (1.57, 0.21), "REG": (2.16, 0.43),
                           "risk": (4.88, 0.57)},
    ("SVM", "satimage"): {"margin": (4.75, 0.60), "SELE": (3.82, 0.27), "REG": (5.44, 0.68),
                          "risk": (15.36, 0.37)},
    ("SVM", "shuttle"): {"margin": (1.31, 0.47), "SELE": (0.24, 0.07), "REG": (0.55, 0.15),
                         "risk": (2.02, 0.15)},
    ("SVOR", "abalone"): {"margin": (1.48, 0.10), "SELE": (1.19, 0.09), "REG": (1.21, 0.05),
                          "risk": (1.54, 0.02)},
    ("SVOR", "cpu"): {"margin": (0.41, 0.01), "SELE": (0.36, 0.02), "REG": (0.36, 0.02),
                      "risk": (0.64, 0.03)},
    ("SVOR", "bikeshare"): {"margin": (1.60, 0.07), "SELE": (1.25, 0.01), "REG": (1.27, 0.01),
                            "risk": (1.70, 0.03)},
    ("SVOR", "ccpp"): {"margin": (0.46, 0.02), "SELE": (0.41, 0.02), "REG": (0.42, 0.02),
                       "risk": (0.58, 0.02)},
}
# Average ranks over the paper's 11 datasets per family (Tables 3 and 4).
PAPER_RANKS = {
    "LR": {"MCP": 2.73, "SELE": 1.36, "REG": 3.55, "TCP": 2.36},
    "SVM": {"margin": 2.82, "SELE": 1.09, "REG": 2.09},
    "SVOR": {"margin": 3.00, "SELE": 1.27, "REG": 1.73},
}


def percent_zero_one(y_true: Any, y_pred: Any) -> np.ndarray:
    return 100.0 * (np.asarray(y_true) != np.asarray(y_pred))


def top2_margin(model: Any, X: np.ndarray) -> np.ndarray:
    return margin(model.decision_function(X), kind="top2")


def families(kind: str, n_classes: int) -> dict[str, tuple[Any, dict[str, Any], str, dict]]:
    """Predictor, learners, the baseline's name and the plug-in scores of each family."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    from abstain.scores import SELE, TCP, LossRegression

    def learned(with_tcp: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"SELE": SELE(random_state=0), "REG": LossRegression()}
        if with_tcp:
            out["TCP"] = TCP()
        out.update({f"{name}+b": learner for name, learner in list(out.items())})
        return out

    if kind == "ordinal":
        from abstain.ordinal import SVOR

        return {"SVOR": (SVOR(), learned(), "margin", {})}
    svm = LinearSVC() if n_classes == 2 else LinearSVC(multi_class="crammer_singer")
    return {
        "LR": (LogisticRegression(max_iter=1000), learned(with_tcp=True), "MCP", {}),
        "SVM": (svm, learned(), "margin", {"top2": top2_margin}),
    }


def run_dataset(name: str, kind: str, n_splits: int) -> dict[str, Any]:
    X, y = load_dataset(name)
    loss = absolute_losses if kind == "ordinal" else percent_zero_one
    out: dict[str, Any] = {}
    for family, (model, learners, base, plugins) in families(kind, len(np.unique(y))).items():
        start = time.perf_counter()
        aware = [name for name in learners if name.endswith("+b")]
        res = evaluate_scores(X, y, model, learners, loss=loss, n_splits=n_splits, random_state=0,
                              plugin_scores=plugins, baseline_input=aware, safe=aware)
        methods = [base if m == "baseline" else m for m in res.methods]
        out[family] = {
            "methods": methods,
            "aurc": res.aurc.tolist(),
            "risk": res.risk.tolist(),
            "model_C": res.model_C.tolist(),
            "score_C": res.score_C.tolist(),
            "chose_baseline": res.chose_baseline.tolist(),
            "seconds": time.perf_counter() - start,
            "shape": list(X.shape),
        }
        print(f"{name:<10} {family:<5} {time.perf_counter() - start:6.1f} s  "
              + "  ".join(f"{m} {v:.2f}" for m, v in zip(methods, res.aurc.mean(axis=0),
                                                         strict=True)), flush=True)
    return out


def _pm(values: list[float]) -> str:
    return f"{np.mean(values):.2f} +- {np.std(values):.2f}"


def win_tie_loss(a: np.ndarray, base: np.ndarray) -> str:
    """Against the baseline: beyond one standard deviation of its AuRC over the splits."""
    band = float(np.std(base))
    diff = float(np.mean(a) - np.mean(base))
    return "win" if diff < -band else "loss" if diff > band else "tie"


def family_table(family: str, raw: dict[str, dict[str, Any]], alpha: float,
                 prefix: str) -> list[str]:
    names = [d for d in raw if family in raw[d]]
    if not names:
        return []
    methods = raw[names[0]][family]["methods"]
    lines = [f"## {family}", "",
             "| dataset | n x d | " + " | ".join(methods) + " | risk | predictor C | time (s) |",
             "|---|---|" + "---:|" * (len(methods) + 3)]
    means = []
    for d in names:
        r = raw[d][family]
        a = np.array(r["aurc"])
        means.append(a.mean(axis=0))
        best = int(np.argmin(a.mean(axis=0)))
        cells = [("**" + _pm(list(a[:, j])) + "**") if j == best else _pm(list(a[:, j]))
                 for j in range(len(methods))]
        cs = ", ".join(f"{c:g}" for c in r["model_C"])
        lines.append(f"| {d} | {r['shape'][0]} x {r['shape'][1]} | " + " | ".join(cells)
                     + f" | {_pm(r['risk'])} | {cs} | {r['seconds']:.0f} |")
        paper = PAPER.get((family, d))
        if paper:
            pcells = [f"{paper[m][0]:.2f} +- {paper[m][1]:.2f}" if m in paper else "-"
                      for m in methods]
            lines.append("| *paper* | | " + " | ".join(pcells)
                         + f" | {paper['risk'][0]:.2f} +- {paper['risk'][1]:.2f} | | |")
    counts = {m: {"win": 0, "tie": 0, "loss": 0} for m in methods[1:]}
    worst = {m: ("", -np.inf) for m in methods[1:]}
    kept = {m: 0 for m in methods[1:]}
    total_splits = 0
    for d in names:
        a = np.array(raw[d][family]["aurc"])
        chose = np.array(raw[d][family].get("chose_baseline", np.zeros(a.shape, bool)))
        total_splits += a.shape[0]
        for j, m in enumerate(methods[1:], start=1):
            counts[m][win_tie_loss(a[:, j], a[:, 0])] += 1
            excess = (a[:, j].mean() - a[:, 0].mean()) / max(a[:, 0].std(), 1e-300)
            if excess > worst[m][1]:
                worst[m] = (d, excess)
            kept[m] += int(chose[:, j].sum())
    wtl = [
        "",
        f"Against the baseline ({methods[0]}), per dataset: win / tie / loss beyond one "
        "standard deviation of the baseline's test AuRC over the splits; the worst dataset "
        "with its excess (mean AuRC minus the baseline's, in those standard deviations); "
        "the splits in which the safe selection kept the baseline.",
        "",
        "| method | win | tie | loss | worst dataset (excess in std) | kept the baseline |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for m in methods[1:]:
        c = counts[m]
        wtl.append(f"| {m} | {c['win']} | {c['tie']} | {c['loss']} | {worst[m][0]} "
                   f"({worst[m][1]:+.2f}) | {kept[m]} / {total_splits} |")
    cmp = compare_methods(np.array(means), methods, alpha=alpha)
    ranks = " | ".join(f"{r:.2f}" for r in cmp.average_rank)
    lines.append(f"| average rank (ours, {len(names)} datasets) | | {ranks} | | | |")
    paper_ranks = PAPER_RANKS[family]
    lines.append("| average rank (paper, 11 datasets) | | "
                 + " | ".join(f"{paper_ranks[m]:.2f}" if m in paper_ranks else "-"
                              for m in methods)
                 + " | | | |")
    lines += [
        "",
        f"Friedman chi2 = {cmp.friedman_statistic:.2f}, p = {cmp.friedman_pvalue:.3g} "
        f"(Iman-Davenport p = {cmp.iman_davenport_pvalue:.3g}); Nemenyi CD at alpha "
        f"{alpha:g} = {cmp.critical_difference:.2f} for k = {len(methods)} methods on "
        f"N = {len(names)} datasets. Plot: `{prefix}_cd_{family.lower()}.png`.",
        *wtl,
        "",
    ]
    plot_critical_difference(cmp, str(RESULTS / f"{prefix}_cd_{family.lower()}.png"),
                             title=f"{family}: average rank of test AuRC")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kind", choices=("classification", "ordinal", "all"), default="all")
    parser.add_argument("--datasets", nargs="+", default=None)
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--alpha", type=float, default=0.10)
    parser.add_argument("--prefix", default="paper1", help="name of every output file")
    parser.add_argument("--tables-only", action="store_true",
                        help="rewrite the tables from paper1_raw_<kind>.json without running")
    args = parser.parse_args()
    kinds = ("classification", "ordinal") if args.kind == "all" else (args.kind,)
    infos = sorted((info for info in list_datasets() if info.kind in kinds
                    and (args.datasets is None or info.name in args.datasets)),
                   key=lambda info: info.n_samples * info.n_features * info.n_classes)
    todo = [(info.name, info.kind) for info in infos]  # the cheapest first
    RESULTS.mkdir(parents=True, exist_ok=True)
    raw_path = RESULTS / f"{args.prefix}_raw_{args.kind}.json"
    if not args.tables_only:
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            futures = {pool.submit(run_dataset, name, kind, args.splits): name
                       for name, kind in todo}
            for future in as_completed(futures):  # save each dataset as soon as it is done
                previous = json.loads(raw_path.read_text()) if raw_path.exists() else {}
                previous[futures[future]] = future.result()
                raw_path.write_text(json.dumps(previous, indent=1, sort_keys=True))
    previous = json.loads(raw_path.read_text()) if raw_path.exists() else {}
    todo = [(name, kind) for name, kind in todo if name in previous]
    for kind in kinds:
        names = {name for name, k in todo if k == kind}
        total = sum(f["seconds"] for name in names for f in previous[name].values())
        fams = ("SVOR",) if kind == "ordinal" else ("LR", "SVM")
        lines = [
            f"# Learned uncertainty scores, {kind}: test AuRC (mean +- std over "
            f"{args.splits} splits)",
            "",
            f"Machine: {platform.machine()}, {args.jobs} worker process(es), NumPy "
            f"{np.__version__}, Python {platform.python_version()}. Command: "
            f"`python benchmarks/paper1_scores.py --kind {args.kind} --splits {args.splits} "
            f"--prefix {args.prefix}"
            + (f" --datasets {' '.join(args.datasets)}" if args.datasets else "")
            + f"`; the runs took "
            f"{total / 60:.1f} min of worker time for these datasets (the time column; "
            f"divide by the number of workers for wall-clock). Loss: "
            + ("100 x 0/1 (percent)." if kind == "classification" else "absolute error (MAE).")
            + " Lowest mean AuRC in bold; the paper's Table "
            + ("3" if kind == "classification" else "4") + " numbers in the *paper* rows.",
            "",
        ]
        subset = {d: previous[d] for d in sorted(names)}
        for family in fams:
            lines += family_table(family, subset, args.alpha, args.prefix)
        (RESULTS / f"{args.prefix}_{kind}.md").write_text("\n".join(lines) + "\n")
        print(f"wrote {RESULTS / f'{args.prefix}_{kind}.md'}")


if __name__ == "__main__":
    main()
