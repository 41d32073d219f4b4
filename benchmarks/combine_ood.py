"""Score combining on FashionMNIST: the paper's Tables 6-9 and 10-14 analogues on CPU.

Reehorst and Schniter, "Score combining for contrastive OOD detection", section 4, with
what runs here:

* network: one ``abstain.torch.SmallCNN(n_classes=4 K)`` trained (Adam, seeded, cached in
  ``$ABSTAIN_DATA/models``) on the joint class x rotation set
  (`abstain.detectors.rotation_training_set`: every image under 0/90/180/270 degrees,
  label ``k * 4 + j``). No contrastive (SimCLR / SupCLR) network and no ResNet18: all 24
  base scores come from this one network (see `abstain.detectors.ShiftedBaseScores`);
* base scores: `abstain.detectors.ShiftedBaseScores` (cos, norm, shift, supcsi,
  supocsvm, supmah per rotation: 24 columns, the glrt-SupCSI+ set of the paper's
  Table 1) fitted on the ID training rows the network was trained on;
* z-values / combiners: `abstain.combine.ScoreCombiner` for every method of
  `abstain.combine.STATISTICS`, fitted on a held-out part of the ID training set
  (``--holdout``, default 10 %, stratified, not used to train the network). The paper's
  eq. (21) uses the training data; held-out rows are used here because a training row is
  its own nearest neighbour (cos = 1) and the network's outputs on its own training rows
  are over-confident, so training-set z-values would be biased;
* ``auto``: `abstain.combine.ScoreCombiner` with its default ``method="auto"``, choosing
  among the single base scores and the combiners on proxy outliers of the ID training rows
  alone (``proxy_tasks``: two classes held out in turn, ``--proxy-splits`` splits, the base
  scores refitted per split on at most ``--proxy-rows`` rows of the kept classes), then
  fitted on the holdout rows; ``single (proxy)`` is the base score that proxy ranked best;
* baselines: CSI's heuristic (eqs. 6-7, `abstain.combine.csi_statistic`, with the joint
  head's rotation probability in place of CSI's shift logit), and the single best base
  score, chosen per OOD set by its AUROC on that same test set (an oracle: an upper
  reference, not a method);
* dataset-vs-dataset (Tables 6-9): ID FashionMNIST test vs each OOD set of
  ``load_ood_benchmark("fashion_mnist")``; AUROC and detection rate at 5 % FAR;
* leave-one-class-out (Tables 10-14): 9 FashionMNIST classes in, 1 out (``--classes``),
  a network trained per held-out class; AUROC and detection rate at 25 % FAR (the
  paper's FAR for this task).

The paper's claim to check (section 4.3 / 4.4): on average, GLRT is at least as good as
Fisher and Stouffer and clearly better than Bonferroni, Simes/BH and ALR. Verdicts are
computed from the results and written either way.

Run: ``python benchmarks/combine_ood.py [--mode both] [--classes 0 1 ...] [--epochs 5]``;
``--quick`` checks the pipeline end to end on a tiny subset in well under a minute
(write its output elsewhere with ``--out``; its numbers mean nothing); ``--report-only``
re-renders the Markdown from the raw JSON. Measured on 2 cores at the defaults:
``--mode dataset`` 513 s (training 372 s), ``--mode loco`` 3750 s (ten networks, training
3087 s): about 71 minutes for both. Cached networks skip the training on a rerun.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from abstain import metrics as M
from abstain.combine import STATISTICS, ScoreCombiner, csi_statistic
from abstain.datasets import data_home, load_ood_benchmark
from abstain.detectors import (
    LeaveClassesOut,
    ShiftedBaseScores,
    rotation_training_set,
    rotations,
)

sys.path.insert(0, str(Path(__file__).parent))
from _models import cached_training  # noqa: E402

OUT = Path(__file__).parent / "results"
SHIFTS = (0, 1, 2, 3)
T = len(SHIFTS)
CLASSICAL = ("fisher", "stouffer")
WEAKER = ("bonferroni", "simes", "alr")

# The paper's averages (SupCSI+ base scores of a ResNet18; CIFAR-10 and SVHN inliers):
# Tables 6/7 (AUROC), 15 (glrt_cov, AUROC), 8/9 (DR % at 5 % FAR) for dataset-vs-dataset,
# Tables 13/14 (AUROC, DR % at 25 % FAR) for leave-one-class-out on CIFAR-10.
PAPER = {
    ("dataset", "auroc"): {"glrt": (0.9677, 0.9928), "glrt_cov": (0.9311, 0.9787),
                           "fisher": (0.9670, 0.9926), "stouffer": (0.9670, 0.9916),
                           "bonferroni": (0.9554, 0.9883), "simes": (0.9564, 0.9889),
                           "alr": (0.9343, 0.8747)},
    ("dataset", "dr"): {"glrt": (86.2, 97.8), "fisher": (86.2, 97.8), "stouffer": (86.3, 97.6),
                        "bonferroni": (79.2, 94.9), "simes": (80.1, 95.2), "alr": (77.1, 49.2)},
    ("loco", "auroc"): {"glrt": (0.8239,), "fisher": (0.8147,), "stouffer": (0.8177,),
                        "bonferroni": (0.8157,), "simes": (0.8172,), "alr": (0.7425,)},
    ("loco", "dr"): {"glrt": (75.18,), "fisher": (73.3,), "stouffer": (73.7,),
                     "bonferroni": (73.3,), "simes": (74.3,), "alr": (59.0,)},
}


def beside_paper(res: dict, mode: str, metric: str, scale: float, fmt: str) -> list[str]:
    """Our mean over the OOD sets beside the paper's averages (a dash: not in the paper)."""
    cols = ["CIFAR-10", "SVHN"] if mode == "dataset" else ["CIFAR-10"]
    paper = PAPER[(mode, metric)]
    lines = ["| method | ours (FashionMNIST) | " + " | ".join(f"paper ({c})" for c in cols)
             + " |", "|---" * (len(cols) + 2) + "|"]
    for m, mean in means(res, metric).items():
        ours = format(mean * scale, fmt)
        theirs = [format(v, fmt) for v in paper[m]] if m in paper else ["-"] * len(cols)
        lines.append(f"| {m} | {ours} | " + " | ".join(theirs) + " |")
    return lines


def log(msg: str, quiet: bool) -> None:
    if not quiet:
        print(msg, flush=True)


def split_holdout(y: np.ndarray, frac: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Stratified split of row indices into (fit, holdout)."""
    rng = np.random.default_rng(seed)
    hold = []
    for k in np.unique(y):
        idx = np.flatnonzero(y == k)
        hold.append(rng.permutation(idx)[: max(1, int(round(frac * idx.size)))])
    h = np.sort(np.concatenate(hold))
    return np.setdiff1d(np.arange(y.size), h), h


def trained_model(X, y, n_classes, args, tag, mean, std):
    from abstain.torch import SmallCNN, images_to_tensor, load_state, save_state, train_classifier

    model = SmallCNN(n_classes=n_classes * T, width=args.width, feature_dim=args.feature_dim,
                     random_state=args.seed)
    path = (data_home() / "models" / f"joint-rot-{tag}-n{len(X)}-w{args.width}"
            f"-f{args.feature_dim}-e{args.epochs}-s{args.seed}.npz")

    def train():
        Xr, yr = rotation_training_set(X, y, SHIFTS)
        return train_classifier(model, images_to_tensor(Xr, mean, std), yr, epochs=args.epochs,
                                random_state=args.seed, progress=not args.quiet)

    return cached_training(path, lambda p: load_state(model, p), train, save_state,
                           quick=args.quick, quiet=args.quiet, what="model")


def shifted_outputs(model, images, mean, std):
    """Features (T, n, d) and logits (T, n, 4K) of every rotation of ``images``."""
    from abstain.torch import extract, images_to_tensor

    outs = [extract(model, images_to_tensor(np.ascontiguousarray(R), mean, std),
                    batch_size=512) for R in rotations(images, SHIFTS)]
    return np.stack([o.features for o in outs]), np.stack([o.logits for o in outs])


def held_out_splits(y: np.ndarray, T: int, args) -> Iterator[tuple]:
    """The splits of the proxy tasks: two classes of ``y`` held out in turn
    (``LeaveClassesOut``, ``--proxy-splits`` splits). Per split: the split, ``relabel``
    (the kept classes as 0..K'-1, -1 elsewhere), the columns of the kept classes in a joint
    head of ``T`` shifts (label ``k * T + j``), at most ``--proxy-rows`` of its fitting rows,
    and ``cap`` (at most ``--proxy-rows`` of other rows, from the same seeded draws)."""
    rng = np.random.default_rng(args.seed)
    cap = lambda rows: np.sort(rng.permutation(rows)[: args.proxy_rows])  # noqa: E731
    splits = LeaveClassesOut(n_held_out=2, n_splits=args.proxy_splits, random_state=args.seed)
    for sp in splits.split(y):
        relabel = np.full(int(y.max()) + 1, -1)
        relabel[sp.kept] = np.arange(sp.kept.size)
        yield sp, relabel, (sp.kept[:, None] * T + np.arange(T)).ravel(), cap(sp.fit), cap


def proxy_tasks(outputs: dict, y_fit: np.ndarray, y_hold: np.ndarray, args) -> list[tuple]:
    """``method="auto"``'s proxy tasks (never a test row): two classes of the fitting rows
    held out in turn (``LeaveClassesOut``, ``--proxy-splits`` splits). Per split the base
    scores are refitted on at most ``--proxy-rows`` fitting rows of the kept classes
    (relabelled 0..K'-1; the joint head's logits restricted to the kept classes' columns);
    z-value rows: the holdout rows of the kept classes; proxy inliers: other fitting rows of
    the kept classes; proxy outliers: rows of the held-out classes (each at most
    ``--proxy-rows``). The network itself was trained on every class."""
    (F_fit, L_fit), (F_hold, L_hold) = outputs["fit"], outputs["hold"]
    tasks = []
    for sp, relabel, cols, fit, cap in held_out_splits(y_fit, T, args):
        bs = ShiftedBaseScores(svm_max_samples=args.svm_max_samples,
                               random_state=args.seed).fit(F_fit[:, fit], relabel[y_fit[fit]])

        def score(F, L, rows, bs=bs, cols=cols):
            return bs.score(F[:, rows], L[:, rows][:, :, cols])

        hold = cap(np.flatnonzero(np.isin(y_hold, sp.kept)))
        tasks.append((score(F_hold, L_hold, hold), score(F_fit, L_fit, cap(sp.inliers)),
                      score(F_fit, L_fit, cap(sp.outliers))))
    return tasks


def statistics(bs, S_hold, S_eval_all, auto: ScoreCombiner | None = None):
    """Every combined statistic (and CSI) on the rows of S_eval_all; higher = more OOD.
    ``auto``: the fitted ``method="auto"`` combiner, its statistic and its single score."""
    stats = {m: ScoreCombiner(method=m).fit(S_hold).score(S_eval_all) for m in STATISTICS}
    if auto is not None:
        stats["auto"] = auto.score(S_eval_all)
        stats["single (proxy)"] = S_eval_all[:, auto.selection_["single"]]
    cols = {k: [i for i, n in enumerate(bs.names_) if n.startswith(k + "_")]
            for k in ("cos", "norm", "shift")}
    def raw(S):  # CSI's inlier-direction quantities; shift as the rotation probability
        return -S[:, cols["cos"]], -S[:, cols["norm"]], np.exp(-S[:, cols["shift"]])
    c, n_, s = raw(S_eval_all)
    _, n_tr, s_tr = raw(S_hold)
    stats["csi"] = csi_statistic(c, n_, s, norm_train=n_tr, shift_train=s_tr)
    return stats


#: Paired resamples of the test rows behind a verdict of ``auto`` against its single score.
N_VERDICT = 1000


def verdict(is_ood: np.ndarray, a: np.ndarray, b: np.ndarray, same: bool) -> dict:
    """``win`` / ``tie`` / ``loss`` of scores ``a`` against ``b`` on these rows: the 95 %
    percentile interval of ``AUROC(a) - AUROC(b)`` over ``N_VERDICT`` paired bootstrap
    resamples (ID and OOD rows drawn apart, the same draws for both), win above 0, loss
    below 0 (``same``: the same score, a tie)."""
    if same:
        return {"low": 0.0, "high": 0.0, "verdict": "tie"}
    ci = M.bootstrap_interval(lambda i: M.auroc(is_ood[i], a[i]) - M.auroc(is_ood[i], b[i]),
                              is_ood, n_bootstrap=N_VERDICT, random_state=0)
    low, high = float(ci.low), float(ci.high)
    return {"low": low, "high": high,
            "verdict": "win" if low > 0 else "loss" if high < 0 else "tie"}


def tally(verdicts) -> list[int]:
    """How many ``win``, ``tie`` and ``loss`` are among ``verdicts`` (strings), in that order."""
    verdicts = list(verdicts)
    return [verdicts.count(w) for w in ("win", "tie", "loss")]


def tally_text(verdicts) -> str:
    """:func:`tally` in words: ``"3 win, 1 tie, 0 loss"``."""
    return ", ".join(f"{n} {w}" for n, w in zip(tally(verdicts), ("win", "tie", "loss"),
                                                strict=True))


def versus(a: tuple, b: tuple, same: bool) -> dict:
    """:func:`verdict` of scores ``a`` against ``b``, each given as (ID rows, OOD rows)."""
    is_ood = np.r_[np.zeros(len(a[0]), bool), np.ones(len(a[1]), bool)]
    return verdict(is_ood, np.r_[a[0], a[1]], np.r_[b[0], b[1]], same)


def evaluate(bs, S_hold, S_id, S_oods: dict, far: float,
             auto: ScoreCombiner | None = None) -> dict:
    out = {}
    for name, S_ood in S_oods.items():
        S_all = np.concatenate([S_id, S_ood])
        is_ood = np.r_[np.zeros(len(S_id), bool), np.ones(len(S_ood), bool)]
        stats = statistics(bs, S_hold, S_all, auto)
        per = {m: {"auroc": M.auroc(is_ood, s),
                   "dr": M.detection_rate_at_false_alarm(is_ood, s, far)}
               for m, s in stats.items()}
        base = [M.auroc(is_ood, S_all[:, i]) for i in range(S_all.shape[1])]
        best = int(np.argmax(base))
        per["best_single"] = {"auroc": base[best], "column": bs.names_[best],
                              "dr": M.detection_rate_at_false_alarm(is_ood, S_all[:, best], far)}
        per["base_auroc"] = dict(zip(bs.names_, base, strict=True))
        if auto is not None:
            per["auto_vs_single"] = verdict(is_ood, stats["auto"], stats["single (proxy)"],
                                            auto.selection_["method"] == "single")
        out[name] = per
    return out


def run_setting(X_tr, y_tr, X_te, oods, tag, args, far):
    mean = float(X_tr.mean() / 255.0)
    std = float((X_tr / 255.0).std())
    fit_idx, hold_idx = split_holdout(y_tr, args.holdout, args.seed)
    K = int(y_tr.max()) + 1
    model, t_train = trained_model(X_tr[fit_idx], y_tr[fit_idx], K, args, tag, mean, std)
    t0 = time.perf_counter()
    F_fit, L_fit = shifted_outputs(model, X_tr[fit_idx], mean, std)
    bs = ShiftedBaseScores(svm_max_samples=args.svm_max_samples,
                           random_state=args.seed).fit(F_fit, y_tr[fit_idx])
    hold_out = shifted_outputs(model, X_tr[hold_idx], mean, std)
    S_hold = bs.score(*hold_out)
    S_id = bs.score(*shifted_outputs(model, X_te, mean, std))
    S_oods = {k: bs.score(*shifted_outputs(model, v, mean, std)) for k, v in oods.items()}
    t_auto = time.perf_counter()
    tasks = proxy_tasks({"fit": (F_fit, L_fit), "hold": hold_out}, y_tr[fit_idx],
                        y_tr[hold_idx], args)
    auto = ScoreCombiner(random_state=args.seed)
    auto.fit_chosen(S_hold, auto.choose(tasks, np.random.default_rng(args.seed)))
    t_auto = time.perf_counter() - t_auto
    res = evaluate(bs, S_hold, S_id, S_oods, far, auto)
    sel = auto.selection_
    chosen = [bs.names_[c] for c in sel["columns"]]
    return {"results": res, "auto": {"method": sel["method"], "columns": chosen,
                                     "single": bs.names_[sel["single"]],
                                     "win_fraction": sel["win_fraction"]},
            "seconds": {"train": t_train, "auto (proxies)": t_auto,
                        "scores+metrics": time.perf_counter() - t0 - t_auto},
            "sizes": {"fit": int(fit_idx.size), "holdout": int(hold_idx.size),
                      "id_test": int(len(X_te)), **{k: int(len(v)) for k, v in oods.items()}}}


ROWS = (*STATISTICS, "auto", "single (proxy)", "csi", "best_single")


def grid(first: str, sets: list[str], rows: dict[str, list[float]], fmt: str) -> list[str]:
    """A Markdown table of one value per (row, set), with the mean over the sets last."""
    lines = [f"| {first} | " + " | ".join(sets) + " | avg |", "|---" * (len(sets) + 2) + "|"]
    for name, vals in rows.items():
        lines.append(f"| {name} | " + " | ".join(format(v, fmt) for v in vals)
                     + f" | {format(float(np.mean(vals)), fmt)} |")
    return lines


def table(res: dict, metric: str, scale: float, fmt: str) -> list[str]:
    return grid("method", list(res), {m: [res[s][m][metric] * scale for s in res]
                                      for m in ROWS if all(m in res[s] for s in res)}, fmt)


def base_table(res: dict) -> list[str]:
    """AUROC of each single base score (paper Table 12 analogue), all four rotations."""
    names = next(iter(res.values()))["base_auroc"]
    return grid("base score", list(res), {b: [res[s]["base_auroc"][b] for s in res]
                                          for b in names}, ".4f")


def means(res: dict, metric: str) -> dict[str, float]:
    """Each combiner's mean of ``metric`` over the OOD sets."""
    return {m: float(np.mean([res[s][m][metric] for s in res])) for m in STATISTICS}


def claims(res: dict, label: str) -> list[str]:
    """The paper's claim checked on the means over the OOD sets, with the margins and the
    per-set wins (a strict inequality on a mean near 1 can be a tie in practice)."""
    out = []
    for metric in ("auroc", "dr"):
        avg = means(res, metric)
        g = avg["glrt"]
        ok1 = all(g >= avg[m] for m in CLASSICAL)
        ok2 = all(g > avg[m] for m in WEAKER)
        detail = ", ".join(f"{m} {avg[m]:.4f}" for m in (*CLASSICAL, *WEAKER))
        margin = min(WEAKER, key=lambda m: g - avg[m])
        wins = ", ".join(
            f"{m} {sum(res[s]['glrt'][metric] > res[s][m][metric] for s in res)}"
            for m in (*CLASSICAL, *WEAKER))
        out.append(f"- {label}, mean {metric}: GLRT {g:.4f} vs {detail}. "
                   f"GLRT >= Fisher and Stouffer: **{'holds' if ok1 else 'does not hold'}**; "
                   f"GLRT > Bonferroni, Simes and ALR: **{'holds' if ok2 else 'does not hold'}** "
                   f"(smallest margin {g - avg[margin]:+.4f}, against {margin}). "
                   f"Sets (of {len(res)}) where GLRT is strictly higher: {wins}.")
    return out


def chosen_lines(autos: dict[str, dict]) -> list[str]:
    """What ``method="auto"`` chose, per network (one for every OOD set, or one per held-out
    class)."""
    out = []
    for name, a in autos.items():
        what = (a["single"] if a["method"] == "single"
                else f"{a['method']}({'+'.join(a['columns'])})")
        won = ("" if a["win_fraction"] is None
               else f", the best combination won {a['win_fraction']:.0%} of paired resamples")
        out.append(f"- {name}: {what} (best single on the proxy: {a['single']}{won})")
    return out


def verdict_lines(res: dict) -> list[str]:
    """``auto`` against ``single (proxy)`` per OOD set, and the count of each verdict."""
    have = {k: v["auto_vs_single"] for k, v in res.items() if "auto_vs_single" in v}
    if not have:
        return []
    cells = [f"{k} {v['verdict']} [{v['low']:+.4f}, {v['high']:+.4f}]" for k, v in have.items()]
    counts = tally_text(v["verdict"] for v in have.values())
    return [f"`auto` against `single (proxy)` (95 % interval of the AUROC difference over "
            f"{N_VERDICT:,} paired resamples of the test rows, ID and OOD apart): "
            + "; ".join(cells) + f". {counts} of {len(have)}.", ""]


def render(mode: str, raw: dict) -> str:
    """The Markdown page of one mode from its raw JSON (as written by `main`)."""
    if mode == "dataset":
        r = raw["dataset"]
        res, times = r["results"], r["seconds"]
        title = "dataset-vs-dataset (paper Tables 6-9 analogue), ID FashionMNIST"
        far, label, done = 5, "dataset-vs-dataset", []
        autos = {"the network of every OOD set": r["auto"]} if "auto" in r else {}
    else:
        loco = raw["loco"]
        res = {k: v["results"][k] for k, v in loco.items()}
        times = {k: sum(v["seconds"].get(k, 0.0) for v in loco.values())
                 for k in next(iter(loco.values()))["seconds"]}
        autos = {k: v["auto"] for k, v in loco.items() if "auto" in v}
        title = "leave-one-class-out (paper Tables 10-14 analogue), FashionMNIST"
        far, label = 25, "leave-one-class-out"
        done = [f"Held-out classes finished: {len(loco)} of {len(raw['args']['classes'])}.", ""]
    md = [f"# Score combining, {title}", "",
          f"`python benchmarks/combine_ood.py {raw['command']}`; protocol in the script's "
          "docstring. Higher = more OOD; `best_single` is an oracle (the best base score "
          "on the test set).", "", *done,
          "AUROC:", "", *table(res, "auroc", 1.0, ".4f"), "",
          f"Detection rate (%) at {far} % FAR:", "", *table(res, "dr", 100.0, ".1f"), "",
          "Means beside the paper's averages (its own data and network), AUROC:", "",
          *beside_paper(res, mode, "auroc", 1.0, ".4f"), "",
          "Detection rate (%):", "", *beside_paper(res, mode, "dr", 100.0, ".1f"), "",
          "Claim:", "", *claims(res, label), "",
          *(["`auto` is `ScoreCombiner()` (`method=\"auto\"`, the default) choosing on "
             "proxy outliers of the training rows alone (two classes held out in turn; "
             "`proxy_tasks` in the script); `single (proxy)` is the base score its proxy "
             "ranked best. It chose:", "", *chosen_lines(autos), "",
             *verdict_lines(res)] if autos else []),
          "AUROC of every base score alone (paper Table 12 analogue; rotation in degrees):",
          "", *base_table(res), "",
          f"Time: {raw['seconds_total']:.0f} s with {raw['args']['threads']} threads ("
          + ", ".join(f"{k} {v:.0f} s" for k, v in times.items()) + ")."]
    return "\n".join(md) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=["dataset", "loco", "both"], default="both")
    ap.add_argument("--classes", type=int, nargs="+", default=list(range(10)),
                    help="held-out classes for the leave-one-class-out mode")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--width", type=int, default=16)
    ap.add_argument("--feature-dim", type=int, default=128)
    ap.add_argument("--holdout", type=float, default=0.1)
    ap.add_argument("--svm-max-samples", type=int, default=2000)
    ap.add_argument("--proxy-splits", type=int, default=3,
                    help="method='auto': splits of two held-out training classes")
    ap.add_argument("--proxy-rows", type=int, default=4000,
                    help="method='auto': at most this many rows per part of a proxy split")
    ap.add_argument("--subset", type=int, default=None,
                    help="use only this many ID training images (and as many of each test set)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--quick", action="store_true",
                    help="tiny end-to-end check: 400 images, 1 epoch, width 4, class 0; "
                         "nothing cached")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--report-only", action="store_true",
                    help="only rewrite the Markdown tables from the raw JSON in --out")
    args = ap.parse_args(argv)
    if args.report_only:
        modes = ("dataset", "loco") if args.mode == "both" else (args.mode,)
        for mode in modes:
            raw = json.loads((args.out / f"combine_ood_{mode}_raw.json").read_text())
            (args.out / f"combine_ood_{mode}.md").write_text(render(mode, raw))
        return 0
    if args.quick:
        args.subset, args.epochs, args.width, args.feature_dim = 400, 1, 4, 16
        args.classes, args.svm_max_samples = args.classes[:1], 100

    import torch

    torch.set_num_threads(args.threads)
    bench = load_ood_benchmark("fashion_mnist", random_state=args.seed)
    n = args.subset
    Xtr, ytr = bench.X_train[:n], bench.y_train[:n]
    Xte, yte = bench.X_test[:n], bench.y_test[:n]
    args_json = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    command = " ".join(argv if argv is not None else sys.argv[1:])
    args.out.mkdir(parents=True, exist_ok=True)

    def write(mode: str, result: dict, t0: float) -> None:
        raw = {"args": args_json, "command": command,
               "seconds_total": time.perf_counter() - t0, mode: result}
        (args.out / f"combine_ood_{mode}_raw.json").write_text(
            json.dumps(raw, indent=1, default=float))
        md = render(mode, raw)
        (args.out / f"combine_ood_{mode}.md").write_text(md)
        log(md, args.quiet)

    if args.mode in ("dataset", "both"):
        t0 = time.perf_counter()
        log("dataset-vs-dataset", args.quiet)
        oods = {k: v[:n] for k, v in bench.ood.items()}
        write("dataset", run_setting(Xtr, ytr, Xte, oods, "fmnist", args, 0.05), t0)
    if args.mode in ("loco", "both"):
        t0 = time.perf_counter()
        loco = {}
        for c in args.classes:
            log(f"leave out class {c}", args.quiet)
            keep, keep_te = ytr != c, yte != c
            relabel = np.cumsum(np.arange(10) != c) - 1
            loco[f"class {c}"] = run_setting(
                Xtr[keep], relabel[ytr[keep]], Xte[keep_te], {f"class {c}": Xte[~keep_te]},
                f"fmnist-no{c}", args, 0.25)
            write("loco", loco, t0)  # after every class: an interrupted run keeps its part
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
