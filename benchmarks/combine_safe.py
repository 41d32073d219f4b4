"""Safe combination (``abstain.combine``, ``method="auto"``) against every combiner and the
best single base score, per case, with a win / tie / loss verdict.

Every case is an in-distribution (ID) classification set and outliers of a kind the
detectors never saw. Per case:

* the ID rows are split (stratified, seeded) into training (60 %), calibration (20 %)
  and test (20 %) rows; a scikit-learn ``MLPClassifier`` (one hidden layer of 64 ReLU
  units for tabular data, 128 for images; Adam, seeded) is trained on the training rows;
  its hidden activations are the features, its output layer gives the logits and the
  last layer ``weight`` / ``bias``;
* the bank: MSP, MaxLogit, Energy, GEN, KNN (k = 50), Mahalanobis and ViM, defaults of
  ``abstain.detectors``;
* ``BankDetector(bank, method=..., alpha=0.05, delta=0.1, random_state=seed)`` fitted on
  the training rows (with their labels) and the calibration rows, once per method:
  ``auto`` (the default: it chooses on classes of the training rows held out in turn,
  ``LeaveClassesOut``, five splits; never on test rows or outliers), ``auto`` with
  ``subsets=False`` (``auto, every score``: each statistic on every base score, no greedy
  subsets) and each statistic of ``abstain.combine.STATISTICS`` over every base score;
* test: AUROC of the ID test rows against the outliers. ``single (proxy)`` is the single
  base score that ``auto``'s own proxy ranked best (its ``selection_["single"]``), the
  reference the issue asks for; ``single (oracle)`` is the best base score on the test
  rows themselves (an upper reference, not a method);
* ``auto`` on both kinds of proxy too (``auto, both kinds``: the held-out classes and
  proxy outliers of a second kind, ``outlier_outputs=``, half of the weight each in the
  choice, the paired test on each kind apart): for images the network's outputs of
  ``SECOND_ROWS`` training images turned by 90, 180 and 270 degrees
  (``abstain.detectors.rotations``), for tabular data of ``SECOND_ROWS`` training rows
  with every column shuffled apart (``abstain.detectors.shuffled_columns``); with its
  verdicts against the single score its own proxies ranked best and against ``auto``'s;
* for the image cases, ``auto`` on every kind of proxy too (``auto, every kind``:
  ``outlier_outputs=[rotated, shuffled]``, the held-out classes, the rotations and as many
  training images with every pixel shuffled across them apart, a third of the weight each,
  the paired test on each kind apart), with its verdicts against its own single score,
  against ``auto``'s and against ``auto, both kinds``;
* ``auto`` with ``per_task=True`` (the paired test on every proxy task apart: each
  held-out split, and the second kind), with held-out classes and with both kinds, beside
  each task's win fraction in ``auto``'s own resamples;
* ``tune_detector`` without OOD data: KNN's ``k`` chosen by the held-out-classes criterion
  (the default with labels) and by the shuffled-columns criterion, each choice's test
  AUROC beside the default ``k = 50`` and the best ``k`` on the test rows;
* verdict of ``auto`` against ``single (proxy)``: the 95 % interval of the AUROC difference
  over 1,000 paired bootstrap resamples of the test rows (ID and outliers apart;
  ``combine_ood.verdict``, the rule of the other combining pages): ``win`` above 0,
  ``loss`` below 0, ``tie`` otherwise (always ``tie`` when ``auto`` kept the single score).
  The same verdict for each combiner shows what the default would have cost without the
  safe choice. ``FAR`` is the false-alarm rate of ``auto``'s guaranteed
  detector on the ID test rows (alpha = 0.05).

Cases: tabular (always run): LETTER, PENDIGITS, SATIMAGE, optdigits (``abstain.datasets``,
``make data``), each with ``--seeds`` random draws of the outlier classes (a quarter of
the classes, at least one) held out of everything but the test; images (``--images``,
``make data-ood``): FashionMNIST against each set of ``load_ood_benchmark`` (dataset vs
dataset, one network) and FashionMNIST leave-one-class-out (``--loco-classes``, one network
per held-out class), on ``--image-rows`` training images (an MLP on pixels, not the
papers' CNNs: the point is the choice among combiners, which sees only base scores).

With ``--cnn``, FashionMNIST against each OOD set again with ``table2_ood.py``'s SmallCNN
(trained on all 60,000 training images, or loaded from its cache): the bank and the proxies
on ``--cnn-bank-rows`` (20,000) of its training images, calibration and ID test on the two
halves of the test set.

Run: ``python benchmarks/combine_safe.py [--seeds 3] [--images] [--cnn]`` (``make
bench-combine-safe`` runs both); writes ``benchmarks/results/combine_safe.md`` and
``combine_safe_raw.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from abstain.combine import STATISTICS, BankDetector
from abstain.detectors import (
    GEN,
    KNN,
    MSP,
    DetectorBank,
    Energy,
    Mahalanobis,
    MaxLogit,
    ViM,
    rotations,
    shuffled_columns,
)
from abstain.metrics import auroc
from abstain.models import tune_detector

sys.path.insert(0, str(Path(__file__).parent))
from _timing import machine_line  # noqa: E402
from combine_ood import N_VERDICT, tally, tally_text, versus  # noqa: E402

OUT = Path(__file__).parent / "results"
ALPHA, DELTA = 0.05, 0.1
#: ``BankDetector``'s default ``confidence`` of the paired test.
CONFIDENCE = BankDetector().confidence
#: ``auto`` with ``subsets=False``: each statistic on every base score only.
WHOLE = "auto, every score"
#: ``auto`` with ``veto=False``: the paired test on each kind's mean alone decides.
NO_VETO = "auto, no veto"


def _bank() -> DetectorBank:
    return DetectorBank([MSP(), MaxLogit(), Energy(), GEN(), KNN(k=50), Mahalanobis(), ViM()])


def _split(y: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stratified 60 / 20 / 20 split of row indices."""
    rng = np.random.default_rng(seed)
    parts: list[list[np.ndarray]] = [[], [], []]
    for c in np.unique(y):
        rows = rng.permutation(np.flatnonzero(y == c))
        a, b = int(0.6 * rows.size), int(0.8 * rows.size)
        for p, r in zip(parts, (rows[:a], rows[a:b], rows[b:]), strict=True):
            p.append(r)
    return tuple(np.sort(np.concatenate(p)) for p in parts)  # type: ignore[return-value]


class Network:
    """An MLP on standardised inputs; ``outputs(X)`` gives its features and logits."""

    def __init__(self, X: np.ndarray, y: np.ndarray, hidden: int, seed: int,
                 max_iter: int) -> None:
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.neural_network import MLPClassifier

        self.mean, self.std = X.mean(0), X.std(0) + 1e-8
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            self.mlp = MLPClassifier((hidden,), max_iter=max_iter, random_state=seed).fit(
                (X - self.mean) / self.std, y)
        self.classes = self.mlp.classes_
        W2, b2 = self.mlp.coefs_[1], self.mlp.intercepts_[1]
        self.weight, self.bias = W2.T.copy(), b2.copy()

    def outputs(self, X: np.ndarray) -> dict[str, np.ndarray]:
        H = np.maximum((X - self.mean) / self.std @ self.mlp.coefs_[0]
                       + self.mlp.intercepts_[0], 0.0)
        return {"features": H, "logits": H @ self.weight.T + self.bias}


def run_case(name: str, net: Network, train: tuple, cal: dict, test_id: dict,
             outliers: dict, seed: int, second: tuple[str, dict] | None = None,
             third: tuple[str, dict] | None = None) -> dict:
    """Every method on one case; returns its row of results. ``second``: the name of a
    second kind of proxy outliers and the network's outputs of them (rotated training
    images, training rows with shuffled columns), for ``auto`` on both kinds of proxy;
    ``third`` (images: shuffled pixels), for ``auto`` on every kind."""
    X_out, y_train = train
    start = time.perf_counter()
    res: dict = {"case": name}
    kw = {"weight": net.weight, "bias": net.bias}
    # labels as the logit columns' indices
    y_idx = np.searchsorted(net.classes, y_train)
    auto = BankDetector(_bank(), alpha=ALPHA, delta=DELTA, random_state=seed).fit(
        X_out, y_idx, cal, **kw)
    S_id, S_out = auto.base_scores(test_id), auto.base_scores(outliers)
    names = auto.bank_.names_
    lab = np.r_[np.zeros(len(S_id), bool), np.ones(len(S_out), bool)]
    singles = [auroc(lab, np.r_[S_id[:, j], S_out[:, j]]) for j in range(S_id.shape[1])]
    sel = auto.combiner_.selection_
    j = sel["single"]
    stats = {"auto": (auto.score(test_id), auto.score(outliers))}
    res["chosen"] = _chosen(sel, names)
    res["proxy_single"] = names[j]
    res["win_fraction"] = sel["win_fraction"]
    res["task_win_fractions"] = sel["task_win_fractions"]
    res["task_loss_fractions"] = sel["task_loss_fractions"]
    res["far"] = float(1.0 - auto.accept(test_id).mean())
    stats["single (proxy)"] = (S_id[:, j], S_out[:, j])
    # without the veto: the same record but for the rule, so a fit only where it vetoed
    res["vetoed"] = _vetoed(sel)
    free_sel = sel
    stats[NO_VETO] = stats["auto"]
    if res["vetoed"]:
        free = BankDetector(_bank(), veto=False, alpha=ALPHA, delta=DELTA,
                            random_state=seed).fit(X_out, y_idx, cal, **kw)
        free_sel = free.combiner_.selection_
        assert free_sel["combination_method"] == sel["combination_method"]
        stats[NO_VETO] = (free.score(test_id), free.score(outliers))
    res["chosen_no_veto"] = _chosen(free_sel, names)
    whole = BankDetector(_bank(), subsets=False, alpha=ALPHA, delta=DELTA,
                         random_state=seed).fit(X_out, y_idx, cal, **kw)
    sel_w = whole.combiner_.selection_
    res["chosen_whole"] = (names[sel_w["single"]] if sel_w["method"] == "single" else
                           sel_w["method"])
    stats[WHOLE] = (whole.score(test_id), whole.score(outliers))
    res["per_task"] = _per_task(X_out, y_idx, cal, test_id, outliers, seed, kw, sel, base=(
        S_id[:, j], S_out[:, j]))
    for method in STATISTICS:
        det = BankDetector(_bank(), method=method, alpha=ALPHA, delta=DELTA,
                           random_state=seed).fit(X_out, y_idx, cal, **kw)
        stats[method] = (det.score(test_id), det.score(outliers))
    res["auroc"] = {k: float(auroc(lab, np.r_[a, b])) for k, (a, b) in stats.items()}
    res["auroc"]["single (oracle)"] = float(max(singles))
    res["oracle_single"] = names[int(np.argmax(singles))]
    res["verdict"] = {}
    base = stats["single (proxy)"]
    for k in ("auto", NO_VETO, WHOLE, *STATISTICS):
        same = {"auto": sel, NO_VETO: free_sel, WHOLE: sel_w}.get(k, {}).get(
            "method") == "single"
        res["verdict"][k] = versus(stats[k], base, same)
    if second is not None:  # held-out classes and the second kind, half each
        kind, other = second
        res["both"], sel_b, own, got_b = _on_kinds(X_out, y_idx, cal, test_id, outliers, seed,
                                                   kw, other, names, (S_id, S_out), base)
        res["both"]["second"] = kind
        res["both"]["per_task"] = _per_task(X_out, y_idx, cal, test_id, outliers, seed, kw,
                                            sel_b, own, other)
        if third is not None:  # held-out classes, the second and the third kind, a third each
            res["every"], _, _, got_e = _on_kinds(X_out, y_idx, cal, test_id, outliers, seed,
                                                  kw, [other, third[1]], names, (S_id, S_out),
                                                  base)
            res["every"]["kinds"] = f"held-out classes, {kind}, {third[0]}"
            res["every"]["vs_both"] = versus(got_e, got_b, False)
    res["tuning"] = _tuning(X_out, y_idx, cal, test_id, outliers, seed)
    res["seconds"] = time.perf_counter() - start
    return res


def _on_kinds(train: dict, y: np.ndarray, cal: dict, test_id: dict, outliers: dict,
              seed: int, kw: dict, other: dict | list, names: list[str], base_scores: tuple,
              base: tuple) -> tuple[dict, dict, tuple, tuple]:
    """``auto`` on the held-out classes and ``other`` (the outputs of one kind of proxy
    outliers, or a list of kinds): its results, its selection record, the test scores of
    the single score its own proxies ranked best and its own test scores (ID, outliers)."""
    det = BankDetector(_bank(), alpha=ALPHA, delta=DELTA, random_state=seed).fit(
        train, y, cal, outlier_outputs=other, **kw)
    sel = det.combiner_.selection_
    j = sel["single"]
    got = (det.score(test_id), det.score(outliers))
    own = (base_scores[0][:, j], base_scores[1][:, j])
    lab = np.r_[np.zeros(len(got[0]), bool), np.ones(len(got[1]), bool)]
    res = {"chosen": _chosen(sel, names), "proxy_single": names[j], "vetoed": _vetoed(sel),
           "win_fraction": sel["win_fraction"], "task_win_fractions": sel["task_win_fractions"],
           "task_loss_fractions": sel["task_loss_fractions"],
           "auroc": float(auroc(lab, np.r_[got])), "single_auroc": float(auroc(lab, np.r_[own])),
           "far": float(1.0 - det.accept(test_id).mean())}
    for ref, pair in (("own", own), ("auto", base)):
        res[f"vs_{ref}"] = versus(got, pair, sel["method"] == "single" and ref == "own")
    return res, sel, own, got


def _chosen(sel: dict, names: list[str]) -> str:
    """What a selection record chose, by the base scores' names: ``vim`` or
    ``stouffer(mls+vim)``; a vetoed combination follows in brackets."""
    if sel["method"] == "single":
        vetoed = (f" (veto: {sel['combination_method']}"
                  f"({'+'.join(names[c] for c in sel['combination_columns'])}))"
                  if _vetoed(sel) else "")
        return names[sel["single"]] + vetoed
    return f"{sel['method']}({'+'.join(names[c] for c in sel['columns'])})"


def _vetoed(sel: dict) -> bool:
    """Whether the veto kept the single score (the combination passed the test)."""
    return sel["method"] == "single" and (sel["win_fraction"] or 0.0) >= CONFIDENCE


def _per_task(train: dict, y: np.ndarray, cal: dict, test_id: dict, outliers: dict,
              seed: int, kw: dict, sel: dict, base: tuple, other: dict | None = None) -> dict:
    """``BankDetector(per_task=True)``: the paired test on every proxy task apart. Its
    choice is ``auto``'s (the same halves and candidates); its verdict is against the same
    single score."""
    det = BankDetector(_bank(), per_task=True, alpha=ALPHA, delta=DELTA,
                       random_state=seed).fit(train, y, cal, outlier_outputs=other, **kw)
    got = det.combiner_.selection_
    assert got["single"] == sel["single"] and got["candidates"] == sel["candidates"]
    a = (det.score(test_id), det.score(outliers))
    lab = np.r_[np.zeros(len(a[0]), bool), np.ones(len(a[1]), bool)]
    return {"kept": got["method"] != "single", "task_win_fractions": got["task_win_fractions"],
            "auroc": float(auroc(lab, np.r_[a])),
            "verdict": versus(a, base, got["method"] == "single")}


K_GRID = (1, 5, 10, 20, 50, 100, 200)


def _tuning(train: dict, y: np.ndarray, cal: dict, test_id: dict, outliers: dict,
            seed: int) -> dict:
    """KNN's k chosen by tune_detector without OOD data (held-out classes of the training
    rows, the default with labels; shuffled columns of the calibration rows, without),
    and the test AUROC of each choice, of the default k = 50 and of the best k on test."""
    lab = np.r_[np.zeros(len(test_id["features"]), bool),
                np.ones(len(outliers["features"]), bool)]
    test = {}
    for k in K_GRID:
        det = KNN(k=k).fit(train["features"])
        test[k] = float(auroc(lab, np.r_[det.score_outputs(test_id), det.score_outputs(outliers)]))
    out = {"test": {str(k): v for k, v in test.items()}}
    for crit in ("held_out_classes", "shuffled"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t = tune_detector(KNN(), {"k": list(K_GRID)}, cal, train_outputs=train,
                              y=y if crit == "held_out_classes" else None, criterion=crit,
                              random_state=seed)
        out[crit] = {"k": t.best_params["k"], "flat": t.flat, "warned": bool(caught),
                     "criterion": t.scores.tolist(), "test": test[t.best_params["k"]]}
    return out


def _tabular_cases(seeds: int, quiet: bool) -> list[dict]:
    from abstain.datasets import load_letter, load_optdigits, load_pendigits, load_satimage

    out = []
    for loader in (load_letter, load_pendigits, load_satimage, load_optdigits):
        X, y = loader()[:2]
        X = np.asarray(X, dtype=np.float64)
        classes = np.unique(y)
        for seed in range(seeds):
            rng = np.random.default_rng(1000 + seed)
            held = rng.choice(classes, max(1, classes.size // 4), replace=False)
            ood = np.isin(y, held)
            Xi, yi = X[~ood], y[~ood]
            tr, ca, te = _split(yi, seed)
            net = Network(Xi[tr], yi[tr], 64, seed, 300)
            name = f"{loader.__name__[5:]} (outlier classes {sorted(held.tolist())})"
            shuffled = shuffled_columns(Xi[tr], n_rows=min(SECOND_ROWS, tr.size),
                                        random_state=seed)
            res = run_case(name, net, (net.outputs(Xi[tr]), yi[tr]), net.outputs(Xi[ca]),
                           net.outputs(Xi[te]), net.outputs(X[ood]), seed,
                           ("shuffled columns", net.outputs(shuffled)))
            res["kind"] = "tabular"
            out.append(res)
            if not quiet:
                print(f"  {name}: auto {res['auroc']['auto']:.4f} ({res['chosen']}), single "
                      f"(proxy) {res['auroc']['single (proxy)']:.4f}, glrt "
                      f"{res['auroc']['glrt']:.4f}: {res['verdict']['auto']['verdict']} "
                      f"[{res['seconds']:.0f} s]", flush=True)
    return out


def _keep(out: list[dict], res: dict, kind: str, quiet: bool) -> None:
    """Add a case's row of results, of ``kind``, and print its line."""
    res["kind"] = kind
    out.append(res)
    if not quiet:
        print(f"  {res['case']}: auto {res['auroc']['auto']:.4f} ({res['chosen']}): "
              f"{res['verdict']['auto']['verdict']}", flush=True)


def _image_cases(rows: int, loco: list[int], quiet: bool) -> list[dict]:
    from abstain.datasets import load_ood_benchmark

    bench = load_ood_benchmark("fashion_mnist")
    flat = lambda a: np.asarray(a, dtype=np.float64).reshape(len(a), -1) / 255.0  # noqa: E731
    X, y = flat(bench.X_train), np.asarray(bench.y_train)
    X_te, y_te = flat(bench.X_test), np.asarray(bench.y_test)
    out = []
    pick = np.random.default_rng(0).permutation(len(X))[:rows]
    tr, ca, _ = _split(y[pick], 0)
    tr, ca = pick[tr], pick[ca]
    net = Network(X[tr], y[tr], 128, 0, 30)
    train, cal, test_id = (net.outputs(X[tr]), y[tr]), net.outputs(X[ca]), net.outputs(X_te)
    images = np.asarray(bench.X_train)
    rotated = ("rotations", net.outputs(flat(_rotated(images[tr]))))
    shuffled = (SHUFFLED, net.outputs(flat(_shuffled(images[tr]))))
    for name, ood_images in bench.ood.items():
        res = run_case(f"fashion_mnist vs {name}", net, train, cal, test_id,
                       net.outputs(flat(ood_images)), 0, rotated, shuffled)
        _keep(out, res, "dataset", quiet)
    for c in loco:
        keep = y[pick] != c
        sub = pick[keep]
        tr, ca, _ = _split(y[sub], c)
        tr, ca = sub[tr], sub[ca]
        net = Network(X[tr], y[tr], 128, c, 30)
        res = run_case(f"fashion_mnist leave out class {c}", net, (net.outputs(X[tr]), y[tr]),
                       net.outputs(X[ca]), net.outputs(X_te[y_te != c]),
                       net.outputs(X_te[y_te == c]), c,
                       ("rotations", net.outputs(flat(_rotated(images[tr])))),
                       (SHUFFLED, net.outputs(flat(_shuffled(images[tr])))))
        _keep(out, res, "loco", quiet)
    return out


class CNNOutputs:
    """The outputs of the SmallCNN of ``table2_ood.py`` (trained or loaded from its cache):
    ``outputs(images)`` gives features and logits, ``weight`` / ``bias`` its last layer."""

    def __init__(self, bench, epochs: int, quiet: bool) -> None:
        from table2_ood import pixel_stats, trained_model

        from abstain.torch import last_layer

        self.model, _ = trained_model(bench, epochs, 0, quiet)
        self.mean, self.std = pixel_stats(bench)
        layer = last_layer(self.model)
        self.weight, self.bias = layer.weight, layer.bias
        self.classes = np.arange(10)

    def outputs(self, images) -> dict[str, np.ndarray]:
        from abstain.torch import extract, images_to_tensor

        got = extract(self.model, images_to_tensor(images, self.mean, self.std),
                      batch_size=512)
        return {"features": got.features, "logits": got.logits}


def _cnn_cases(epochs: int, bank_rows: int, quiet: bool) -> list[dict]:
    """FashionMNIST against each OOD set with table2_ood.py's SmallCNN: the bank and the
    proxies on ``bank_rows`` of the network's training images, calibration and ID test on
    the two halves of the test set."""
    from abstain.datasets import load_ood_benchmark

    bench = load_ood_benchmark("fashion_mnist")
    net = CNNOutputs(bench, epochs, quiet)
    rng = np.random.default_rng(0)
    tr = np.sort(rng.permutation(len(bench.X_train))[:bank_rows])
    half = rng.permutation(len(bench.X_test))
    ca, te = np.sort(half[: len(half) // 2]), np.sort(half[len(half) // 2:])
    train = (net.outputs(bench.X_train[tr]), np.asarray(bench.y_train)[tr])
    cal, test_id = net.outputs(bench.X_test[ca]), net.outputs(bench.X_test[te])
    rotated = ("rotations", net.outputs(_rotated(bench.X_train[tr])))
    shuffled = (SHUFFLED, net.outputs(_shuffled(bench.X_train[tr])))
    out = []
    for name, images in bench.ood.items():
        res = run_case(f"fashion_mnist vs {name} (SmallCNN)", net, train, cal, test_id,
                       net.outputs(images), 0, rotated, shuffled)
        _keep(out, res, "cnn", quiet)
    return out


#: Training images rotated (training rows shuffled) per case, for the proxy outliers of a
#: second kind.
SECOND_ROWS = 2000


def _rotated(images: np.ndarray) -> np.ndarray:
    """The first ``SECOND_ROWS`` training images turned by 90, 180 and 270 degrees
    (:func:`abstain.detectors.rotations`): proxy outliers that touch no calibration row."""
    R = rotations(np.asarray(images)[:SECOND_ROWS], shifts=(1, 2, 3))
    return R.reshape(-1, *R.shape[2:])


#: The third kind of proxy outliers of the image cases.
SHUFFLED = "shuffled pixels"


def _shuffled(images: np.ndarray) -> np.ndarray:
    """As many training images as :func:`_rotated` gives (the first ``3 * SECOND_ROWS``),
    every pixel shuffled across them apart (:func:`abstain.detectors.shuffled_columns`):
    proxy outliers of a third kind, each pixel's values kept, the picture gone."""
    X = np.asarray(images)[: 3 * SECOND_ROWS]
    return shuffled_columns(X, random_state=0).astype(X.dtype)


COLUMNS = ("auto", NO_VETO, WHOLE, "single (proxy)", "single (oracle)", *STATISTICS)


def render(raw: dict) -> str:
    cases = raw["cases"]
    lines = ["# Safe combination: method=\"auto\" against every combiner and the best single "
             "score", "", raw["machine"], "", f"`{raw['command']}`; protocol in the script's "
             f"docstring; {raw['seconds']:.0f} s in all. Test AUROC per case; the verdict is "
             "`auto` against `single (proxy)` (95 % paired bootstrap interval of the AUROC "
             f"difference, {N_VERDICT:,} resamples of the test rows); `FAR` is the false-alarm "
             "rate of `auto`'s guaranteed detector on the ID test rows (alpha 0.05, delta "
             "0.1).", "",
             "| case | auto chose | win % | every score: chose | " + " | ".join(COLUMNS)
             + " | auto vs single (proxy) | FAR |", "|---" * (len(COLUMNS) + 6) + "|"]
    for r in cases:
        v = r["verdict"]["auto"]
        wf = "-" if r["win_fraction"] is None else f"{100 * r['win_fraction']:.0f}"
        cells = [f"{r['auroc'][k]:.4f}" for k in COLUMNS]
        lines.append(f"| {r['case']} | {r['chosen']} | {wf} | {r['chosen_whole']} | "
                     + " | ".join(cells)
                     + f" | {v['verdict']} [{v['low']:+.4f}, {v['high']:+.4f}] | "
                     f"{r['far']:.3f} |")
    mean = {k: np.mean([r["auroc"][k] for r in cases]) for k in COLUMNS}
    lines.append("| **mean** | | | | " + " | ".join(f"{mean[k]:.4f}" for k in COLUMNS)
                 + " | | |")
    lines += ["", "Win / tie / loss against `single (proxy)`, per method (the same "
              "interval rule):", "", "| method | win | tie | loss |", "|---|---|---|---|"]
    for k in ("auto", NO_VETO, WHOLE, *STATISTICS):
        counts = tally(r["verdict"][k]["verdict"] for r in cases)
        lines.append(f"| {k} | " + " | ".join(map(str, counts)) + " |")
    both = [r for r in cases if "both" in r]
    if both:
        lines += ["", "`auto` on both kinds of proxy (`fit(..., y, cal, outlier_outputs=...)`: "
                  "the held-out classes and a second kind, half of the weight each in the "
                  "choice, a combination kept only when it wins on each kind apart). The "
                  f"second kind: for images the network's outputs of {SECOND_ROWS} training "
                  "images turned by 90, 180 and 270 degrees (`rotations`), for tabular data "
                  f"of {SECOND_ROWS} training rows (all of them where fewer) with every "
                  "column shuffled apart (`shuffled_columns`). Verdicts (the same interval "
                  "rule) against the single score its own proxies ranked best and against "
                  "`auto`'s (held-out classes only) `single (proxy)`:", "",
                  "| case | second kind | chose | auto, both kinds | its proxy single | auto "
                  "| vs its single | vs auto's single | FAR |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in both:
            q = r["both"]
            lines.append(
                f"| {r['case']} | {q['second']} | {q['chosen']} | {q['auroc']:.4f} | "
                f"{q['proxy_single']} {q['single_auroc']:.4f} | {r['auroc']['auto']:.4f} | "
                + _verdicts(q, ("vs_own", "vs_auto")) + f" | {q['far']:.3f} |")
        lines.append(f"| **mean** | | | {np.mean([r['both']['auroc'] for r in both]):.4f} | "
                     f"{np.mean([r['both']['single_auroc'] for r in both]):.4f} | "
                     f"{np.mean([r['auroc']['auto'] for r in both]):.4f} | | | |")
        lines += ["", "| second kind | cases | vs its own proxy single | vs auto's single | "
                  "mean: both kinds | its proxy single | auto |", "|---|---|---|---|---|---|---|"]
        kinds = sorted({r["both"]["second"] for r in both}, reverse=True)
        for kind in kinds + (["all"] if len(kinds) > 1 else []):
            sub = [r for r in both if kind in ("all", r["both"]["second"])]
            lines.append(f"| {kind} | {len(sub)} | "
                         + " | ".join(tally_text(r["both"][k]["verdict"] for r in sub)
                                      for k in ("vs_own", "vs_auto"))
                         + f" | {np.mean([r['both']['auroc'] for r in sub]):.4f} | "
                         f"{np.mean([r['both']['single_auroc'] for r in sub]):.4f} | "
                         f"{np.mean([r['auroc']['auto'] for r in sub]):.4f} |")
    lines += _every_lines(cases)
    lines += _per_task_lines(cases)
    lines += ["", "KNN's k chosen without OOD data by `tune_detector` (grid "
              f"{list(K_GRID)}): with the training labels (`held_out_classes`, the default) "
              "and without (`shuffled` columns of the calibration rows); test AUROC of each "
              "choice beside the default k = 50 and the best k on the test rows (an oracle); "
              "`flat`: the criterion could not tell the candidates apart (it warned).", "",
              "| case | held-out classes: k | test AUROC | shuffled: k | test AUROC | "
              "k = 50 | best k (oracle) |", "|---|---|---|---|---|---|---|"]
    for r in cases:
        t = r["tuning"]
        best = max(t["test"], key=t["test"].__getitem__)
        cells = [f"{t[c]['k']}{' (flat)' if t[c]['flat'] else ''} | {t[c]['test']:.4f}"
                 for c in ("held_out_classes", "shuffled")]
        lines.append(f"| {r['case']} | {cells[0]} | {cells[1]} | "
                     f"{t['test']['50']:.4f} | {best}: {t['test'][best]:.4f} |")
    mean = lambda f: np.mean([f(r["tuning"]) for r in cases])  # noqa: E731
    lines.append(f"| **mean** | | {mean(lambda t: t['held_out_classes']['test']):.4f} | | "
                 f"{mean(lambda t: t['shuffled']['test']):.4f} | "
                 f"{mean(lambda t: t['test']['50']):.4f} | "
                 f"{mean(lambda t: max(t['test'].values())):.4f} |")
    lines += ["", f"Cases: {len(cases)}; `auto`'s FAR at or below 0.05 in "
              f"{sum(r['far'] <= ALPHA for r in cases)} of them (the guarantee: with "
              "probability at least 0.9 per calibration draw)."]
    return "\n".join(lines) + "\n"


def _verdicts(q: dict, keys: tuple[str, ...]) -> str:
    """The verdict cells ``keys`` of a result: ``win [+0.0010, +0.0030] | tie [...]``."""
    return " | ".join(f"{q[k]['verdict']} [{q[k]['low']:+.4f}, {q[k]['high']:+.4f}]"
                      for k in keys)


def _every_lines(cases: list[dict]) -> list[str]:
    """``auto`` on every kind of proxy (the image cases: held-out classes, rotations and
    shuffled pixels) against its own single score, ``auto``'s and ``auto`` on both kinds."""
    every = [r for r in cases if "every" in r]
    if not every:
        return []
    lines = ["", "`auto` on every kind of proxy (the image cases: "
             "`fit(..., y, cal, outlier_outputs=[rotated, shuffled])`, the held-out classes, "
             "the rotations above and shuffled pixels, a third of the weight each, a "
             "combination kept only when it wins on each kind apart). Shuffled pixels: the "
             f"first {3 * SECOND_ROWS} training images with every pixel shuffled across them "
             "apart (`shuffled_columns`), as many as the rotated ones. Verdicts (the same "
             "interval rule) against the single score its own proxies ranked best, against "
             "`auto`'s `single (proxy)` and against `auto, both kinds`:", "",
             "| case | chose | auto, every kind | its proxy single | auto, both kinds | "
             "vs its single | vs auto's single | vs both kinds | FAR |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in every:
        q = r["every"]
        lines.append(
            f"| {r['case']} | {q['chosen']} | {q['auroc']:.4f} | {q['proxy_single']} "
            f"{q['single_auroc']:.4f} | {r['both']['auroc']:.4f} | "
            + _verdicts(q, ("vs_own", "vs_auto", "vs_both")) + f" | {q['far']:.3f} |")
    def avg(key: str, value: str) -> float:
        return float(np.mean([r[key][value] for r in every]))

    mean = {"every": avg("every", "auroc"), "single": avg("every", "single_auroc"),
            "both": avg("both", "auroc"), "both single": avg("both", "single_auroc"),
            "auto": avg("auroc", "auto")}
    lines.append(f"| **mean** | | {mean['every']:.4f} | {mean['single']:.4f} | "
                 f"{mean['both']:.4f} | | | | |")
    lines += ["", "| proxies | cases | vs its own proxy single | vs auto's single | mean | its "
              "proxy single |", "|---|---|---|---|---|---|",
              f"| held-out classes | {len(every)} | "
              + tally_text(r["verdict"]["auto"]["verdict"] for r in every)
              + f" | (itself) | {mean['auto']:.4f} | "
              f"{np.mean([r['auroc']['single (proxy)'] for r in every]):.4f} |"]
    for name, key in ((f"held-out classes, {every[0]['both']['second']}", "both"),
                      (every[0]["every"]["kinds"], "every")):
        lines.append(f"| {name} | {len(every)} | "
                     + " | ".join(tally_text(r[key][k]["verdict"] for r in every)
                                  for k in ("vs_own", "vs_auto"))
                     + f" | {mean[key]:.4f} | "
                     f"{mean['single' if key == 'every' else 'both single']:.4f} |")
    return lines


def _per_task_lines(cases: list[dict]) -> list[str]:
    """``auto`` against ``BankDetector(per_task=True)`` (the paired test on every proxy task
    apart), with each task's win fraction in ``auto``'s own resamples."""
    runs = [(r["case"], "held-out classes", r, r["auroc"]["auto"], r["verdict"]["auto"])
            for r in cases if "per_task" in r]
    runs += [(r["case"], "both kinds", r["both"], r["both"]["auroc"], r["both"]["vs_own"])
             for r in cases if "per_task" in r.get("both", {})]
    if not runs:
        return []
    lines = ["", "`per_task=True`: the paired test on every proxy task apart (each held-out "
             "split; with both kinds, the splits, then the second kind), a combination kept only "
             f"when it wins in at least {CONFIDENCE:.0%} of the resamples of each. `each task, "
             "%`: the fraction of `auto`'s own resamples in which its best combination is "
             "above the proxy's single score on each task alone "
             "(`selection_[\"task_win_fractions\"]`), and `lost, %` below it "
             "(`task_loss_fractions`: `auto`'s veto keeps the single score where one of them "
             f"reaches {CONFIDENCE:.0%}). Verdicts against the single score the same proxies "
             "ranked best (the same interval rule).", "",
             "| case | proxies | auto | each task, % | lost, % | per_task=True | verdict |",
             "|---|---|---|---|---|---|---|"]
    by_proxies: dict[str, dict[str, list]] = {}
    for case, proxies, q, a_auto, v in runs:
        p = q["per_task"]
        each, lost = (" ".join(f"{100 * f:.0f}" for f in q[k] or [])
                      for k in ("task_win_fractions", "task_loss_fractions"))
        lines.append(f"| {case} | {proxies} | {a_auto:.4f} {v['verdict']} | {each} | {lost} | "
                     f"{p['auroc']:.4f} | {p['verdict']['verdict']} |")
        t = by_proxies.setdefault(proxies, {"auto": [], "per_task=True": []})
        t["auto"].append((v["verdict"], a_auto))
        t["per_task=True"].append((p["verdict"]["verdict"], p["auroc"]))
    lines += ["", "| proxies | rule | win | tie | loss | mean test AUROC |",
              "|---|---|---|---|---|---|"]
    for proxies, rules in by_proxies.items():
        for rule, got in rules.items():
            counts = tally(g[0] for g in got)
            lines.append(f"| {proxies} | {rule} | " + " | ".join(map(str, counts))
                         + f" | {np.mean([g[1] for g in got]):.4f} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3, help="outlier-class draws per tabular set")
    ap.add_argument("--images", action="store_true", help="also the FashionMNIST cases")
    ap.add_argument("--image-rows", type=int, default=20000)
    ap.add_argument("--loco-classes", type=int, nargs="*", default=list(range(10)))
    ap.add_argument("--cnn", action="store_true",
                    help="also FashionMNIST against each OOD set with table2_ood.py's SmallCNN "
                         "(trained on CPU, or loaded from its cache)")
    ap.add_argument("--cnn-epochs", type=int, default=5)
    ap.add_argument("--cnn-bank-rows", type=int, default=20000)
    ap.add_argument("--tabular", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    start = time.perf_counter()
    machine = machine_line()
    print(machine)
    cases = _tabular_cases(args.seeds, args.quiet) if args.tabular else []
    if args.images:
        cases += _image_cases(args.image_rows, args.loco_classes, args.quiet)
    if args.cnn:
        cases += _cnn_cases(args.cnn_epochs, args.cnn_bank_rows, args.quiet)
    command = "python benchmarks/combine_safe.py " + " ".join(argv if argv is not None
                                                              else sys.argv[1:])
    raw = {"machine": machine, "command": command.strip(), "cases": cases,
           "seconds": time.perf_counter() - start}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "combine_safe_raw.json").write_text(json.dumps(raw, indent=1) + "\n")
    (args.out / "combine_safe.md").write_text(render(raw))
    print(f"wrote {args.out / 'combine_safe.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
