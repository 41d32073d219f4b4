"""CSI and SupCSI against their GLRT combinations (glrt-CSI, glrt-SupCSI, glrt-SupCSI+) on
FashionMNIST: the comparison of Reehorst and Schniter, "Score combining for contrastive OOD
detection", Tables 2-5 (dataset against dataset), on what a CPU trains.

* networks (``abstain.torch.train_csi``, seeded, cached in ``$ABSTAIN_DATA/models``): CSI's
  (no labels: SimCLR on the shifted instances, a shift head) and SupCSI's (labels: SupCLR on
  the joint class x shift labels, a joint head), a small ResNet of ``--width`` trained for
  ``--epochs`` on ``--train-rows`` FashionMNIST training images (the paper: ResNet18, 100
  epochs, 50,000 CIFAR-10 images, LARS; here Adam at 1e-3, batch 32);
* rows, as the paper names them (its Table 1): ``CSI`` (eqs. 6-7, ``abstain.detectors.CSI``
  on CSI's network), ``glrt-CSI`` (the GLRT of its 12 base scores cos/norm/shift),
  ``SupCSI`` (eq. 8, ``abstain.detectors.SupCSI``), ``glrt-SupCSI`` (the GLRT of the 4
  ``supcsi_j`` of eq. 25), ``glrt-SupCSI+`` (the GLRT of 24: CSI's 12, ``supcsi_j``, and
  ``supocsvm_j`` / ``supmah_j`` of eqs. 26-27 on the SupCSI network's features, where the
  paper uses a third, jointly trained classifier), the other combiners of the SupCSI+
  scores (Fisher, Bonferroni, Simes, Stouffer, ALR), and the baselines of a plainly trained
  classifier (``table2_ood.py``'s SmallCNN on all training images: MSP and Mahalanobis),
  and ``auto`` (``ScoreCombiner``'s default ``method="auto"`` on the SupCSI+ scores,
  choosing on proxy outliers of the training rows alone, ``proxy_tasks``: two training
  classes held out in turn, ``--proxy-splits`` splits) with ``single (proxy)``, the base
  score its proxies ranked best, and the verdict of ``auto`` against it per OOD set
  (``combine_ood.verdict``); ``auto, per_task``: the same choice with the paired test on
  every split apart (``kinds`` one per task, the rule of ``BankDetector(per_task=True)``);
  ``auto, both kinds``: the held-out classes and rotations (``rotation_task``: half of
  the holdout rows turned by 90, 180 and 270 degrees against the other half), half of the
  weight each, the paired test on each kind apart, with ``single (both kinds)``, the base
  score those proxies ranked best, and its verdicts against that score and against
  ``single (proxy)``; ``auto, every kind``: the same and shuffled pixels
  (``shuffled_task``: the same other half with every pixel shuffled across its images
  apart), a third of the weight each, with ``single (every kind)``;
* z-values fitted on ``--holdout-rows`` training images that trained no network; ID test:
  ``--test-rows`` FashionMNIST test images; OOD: each set of
  ``load_ood_benchmark("fashion_mnist")`` (``--ood-rows`` of each); AUROC and detection
  rate at 5 % false alarms.

Leave-one-class-out (``--mode loco``, the paper's Tables 10-14): per held-out class of
``--classes``, both networks and the baseline SmallCNN (``--classifier-epochs`` on the same
images; the paper's baselines see the full training fold) are trained on the other nine
classes of the ``--train-rows`` training images, z-values come from the nine classes of the
holdout, the ID test is ``--test-rows`` test images of the nine classes and the OOD set is
the held-out class's 1,000 test images; detection rate at 25 % FAR, as the paper. Each
row also gets the identity shift's single base scores (the paper's Table 12). The results
are written after every class; a rerun with the same settings goes on from the classes
already finished.

The paper's claim checked from the numbers: glrt-CSI beats CSI and glrt-SupCSI beats SupCSI
on average.

Run: ``python benchmarks/csi_ood.py [--train-rows 4000] [--epochs 8] [--width 16]``; writes
``benchmarks/results/csi_ood.md`` and ``csi_ood_raw.json``; ``--mode loco`` (defaults
``--train-rows 2000 --epochs 6 --width 8``: twenty networks) writes ``csi_ood_loco.md`` and
``csi_ood_loco_raw.json``. ``--quick`` checks the pipeline on a tiny subset (its numbers
mean nothing; write it elsewhere with ``--out``); ``--report-only`` re-renders the Markdown
from the raw JSON. With a GPU, ``--device cuda --train-rows 60000 --epochs 100 --width 16``
is the full size (``--mode loco`` too).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from abstain import metrics as M
from abstain.combine import ScoreCombiner
from abstain.datasets import data_home, load_ood_benchmark
from abstain.detectors import (
    CSI,
    MSP,
    Mahalanobis,
    ShiftedBaseScores,
    SupCSI,
    shuffled_columns,
)

sys.path.insert(0, str(Path(__file__).parent))
from _models import cached_training  # noqa: E402
from _timing import machine_line  # noqa: E402
from combine_ood import N_VERDICT, held_out_splits, tally_text, versus  # noqa: E402

OUT = Path(__file__).parent / "results"
FAR = 0.05
COMBINERS = ("fisher", "bonferroni", "simes", "stouffer", "alr")
#: Single base scores reported beside the methods (the paper's Table 12): the identity
#: shift's column of each kind, as (network, column) of the 12 CSI and 12 SupCSI scores.
BASE_ROWS = {"s_norm,1": ("csi", 4), "s_cos,1": ("csi", 0), "s_shift,1": ("csi", 8),
             "s_supOCSVM,1": ("sup", 4), "s_supCSI,1": ("sup", 0), "s_supMah,1": ("sup", 8)}
ROWS = ("CSI", "glrt-CSI", "SupCSI", "glrt-SupCSI", "glrt-SupCSI+", *COMBINERS, "auto",
        "auto, per_task", "auto, both kinds", "auto, every kind", "single (proxy)",
        "single (both kinds)", "single (every kind)",
        "softmax (SmallCNN)", "Mahalanobis (SmallCNN)", *BASE_ROWS)
#: The paper's averages over its OOD sets (ResNet18; CIFAR-10 inliers, Tables 2 and 4):
#: AUROC and detection rate (%) at 5 % FAR.
PAPER = {"CSI": (0.9528, 80.4), "glrt-CSI": (0.9552, 81.6), "SupCSI": (0.9652, 82.4),
         "glrt-SupCSI": (0.9674, 82.6), "glrt-SupCSI+": (0.9677, 86.2)}
#: Leave-one-class-out: the detection rate's false-alarm rate, and the paper's averages over
#: CIFAR-10's ten held-out classes (Tables 10-14): AUROC and detection rate (%) at 25 % FAR.
LOCO_FAR = 0.25
PAPER_LOCO = {"CSI": (0.7397, 60.3), "glrt-CSI": (0.7421, 60.7), "SupCSI": (0.8369, 79.5),
              "glrt-SupCSI": (0.8452, 80.3), "glrt-SupCSI+": (0.8239, 75.2),
              "fisher": (0.8147, 73.3), "bonferroni": (0.8157, 73.3), "simes": (0.8172, 74.3),
              "stouffer": (0.8177, 73.7), "alr": (0.7425, 59.0),
              "softmax (SmallCNN)": (0.8005, 72.0), "Mahalanobis (SmallCNN)": (0.6777, 47.8),
              "s_norm,1": (0.7060, None), "s_cos,1": (0.7250, None), "s_shift,1": (0.7240, None),
              "s_supOCSVM,1": (0.6016, None), "s_supCSI,1": (0.8240, None),
              "s_supMah,1": (0.6758, None)}
#: FashionMNIST's class names, by label.
CLASSES = ("T-shirt", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
           "Bag", "Ankle boot")


def log(msg: str, quiet: bool) -> None:
    if not quiet:
        print(msg, flush=True)


def network(images, labels, args, tag: str):
    """The trained network of CSI (``labels`` None) or SupCSI, from the cache or trained."""
    from abstain.torch import load_csi, save_csi, train_csi

    path = (data_home() / "models" / f"{tag}-n{len(images)}-w{args.width}-e{args.epochs}"
            f"-s{args.seed}.npz")
    return cached_training(
        path, load_csi,
        lambda: train_csi(images, labels, epochs=args.epochs, batch_size=args.batch_size,
                          width=args.width, device=args.device, random_state=args.seed,
                          progress=not args.quiet).cpu(),
        save_csi, quick=args.quick, quiet=args.quiet, what=tag)


def subset_classifier(images, labels, n_classes: int, args, tag: str, mean: float, std: float):
    """The leave-one-class-out baseline: a SmallCNN trained on the contrastive networks'
    own training images (the nine classes), cached as they are."""
    from abstain.torch import SmallCNN, images_to_tensor, load_state, save_state, train_classifier

    model = SmallCNN(n_classes=n_classes, width=16, feature_dim=128, random_state=args.seed)
    path = (data_home() / "models" / f"smallcnn16-{tag}-n{len(images)}-e{args.classifier_epochs}"
            f"-s{args.seed}.npz")
    return cached_training(
        path, lambda p: load_state(model, p),
        lambda: train_classifier(model, images_to_tensor(images, mean, std), labels,
                                 epochs=args.classifier_epochs, random_state=args.seed),
        save_state, quick=args.quick, quiet=args.quiet, what="classifier")


def _metrics(stat_id, stat_ood, far: float) -> dict[str, float]:
    is_ood = np.r_[np.zeros(len(stat_id), bool), np.ones(len(stat_ood), bool)]
    s = np.r_[stat_id, stat_ood]
    return {"auroc": float(M.auroc(is_ood, s)),
            "dr": float(100 * M.detection_rate_at_false_alarm(is_ood, s, far))}



def proxy_tasks(out_c: dict, out_s: dict, y_train: np.ndarray, y_hold: np.ndarray,
                args) -> list[tuple]:
    """``auto``'s proxy tasks for the 24 scores of SupCSI+ (never a test row): two classes of
    the networks' training rows held out in turn (``LeaveClassesOut``, ``--proxy-splits``
    splits). Per split, CSI's base scores and the SupCSI network's are refitted on at most
    ``--proxy-rows`` training rows of the kept classes (relabelled 0..K'-1; the joint head's
    logits restricted to the kept classes' columns); z-value rows: the holdout rows of the
    kept classes; proxy inliers: other training rows of the kept classes; proxy outliers:
    training rows of the held-out classes (each at most ``--proxy-rows``). The networks
    themselves were trained on every class."""
    tasks = []
    T = out_s["train"]["logits"].shape[0]
    for sp, relabel, cols, fit, cap in held_out_splits(y_train, T, args):
        tr_c, tr_s = out_c["train"], out_s["train"]
        csi = CSI().fit(tr_c["projections"][:, fit], tr_c["logits"][:, fit])
        sup = ShiftedBaseScores(kinds=("supcsi", "supocsvm", "supmah"),
                                svm_max_samples=args.svm_max_samples,
                                random_state=args.seed).fit(tr_s["features"][:, fit],
                                                            relabel[y_train[fit]])

        def score(part: str, rows: np.ndarray, csi=csi, sup=sup, cols=cols) -> np.ndarray:
            c, o = out_c[part], out_s[part]
            return np.hstack([csi.base_scores(c["projections"][:, rows], c["logits"][:, rows]),
                              sup.score(o["features"][:, rows], o["logits"][:, rows][:, :, cols])])

        hold = cap(np.flatnonzero(np.isin(y_hold, sp.kept)))
        tasks.append((score("holdout", hold), score("train", cap(sp.inliers)),
                      score("train", cap(sp.outliers))))
    return tasks


def rotation_task(out_c: dict, out_s: dict, score, seed: int) -> tuple:
    """A proxy task of rotations for ``auto, both kinds``: ``score(out_c, out_s)`` gives the 24
    base scores of the networks' outputs; the holdout rows (which trained no network) are
    halved at random (``seed + 1``), one half for the z-values, the other as proxy inliers,
    and the proxy inliers' thirds turned by 90, 180 and 270 degrees as proxy outliers.
    A turned image's stack of shifted copies is the image's own stack rolled (a quarter
    turn of ``R_j x`` is ``R_{j+1} x``), so no network runs again."""
    half, rest = _halves(out_c["holdout"]["projections"].shape[1], seed)

    def turned(rows: np.ndarray, turns: int) -> np.ndarray:
        def roll(out: dict) -> dict:
            return {k: np.roll(v[:, rows], -turns, axis=0) for k, v in out.items()}
        return score(roll(out_c["holdout"]), roll(out_s["holdout"]))

    out = np.vstack([turned(rest[j::3], t) for j, t in enumerate((1, 2, 3))])
    return turned(half, 0), turned(rest, 0), out


def _halves(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The holdout rows halved at random (``seed + 1``): z-value rows and proxy inliers."""
    order = np.random.default_rng(seed + 1).permutation(n)
    return np.sort(order[: n // 2]), np.sort(order[n // 2:])


def shuffled_task(rotation: tuple, images: np.ndarray, outputs, score, seed: int) -> tuple:
    """A proxy task of shuffled pixels for ``auto, every kind``: the halves of
    ``rotation`` (:func:`rotation_task`'s task, the same seed), and as proxy outliers the
    proxy inliers' holdout ``images`` with every pixel shuffled across them apart
    (``shuffled_columns``, seed ``seed + 2``); ``outputs(images)`` runs both networks on
    them, ``score`` gives their 24 base scores."""
    _, rest = _halves(len(images), seed)
    X = np.asarray(images)[rest]
    pixels = shuffled_columns(X, random_state=seed + 2).astype(X.dtype)
    return rotation[0], rotation[1], score(*outputs(pixels))


def run_setting(parts: dict[str, np.ndarray], y_train: np.ndarray, y_hold: np.ndarray,
                oods: list[str], args, tag: str, far: float, baseline) -> dict:
    """Every row's metrics on one setting: ``parts`` holds the training, holdout (z-values)
    and ID test images and each OOD set (named in ``oods``), ``y_train`` and ``y_hold`` the
    labels of the training and holdout images; ``baseline()`` returns the plainly trained
    classifier and its input normalisation, or None."""
    from abstain.torch import csi_outputs, extract, images_to_tensor

    tr = parts["train"]
    seconds: dict[str, float] = {}
    csi_net, seconds["train CSI"] = network(tr, None, args, f"csi-{tag}")
    sup_net, seconds["train SupCSI"] = network(tr, y_train, args, f"supcsi-{tag}")
    got = baseline()
    if got is not None:
        seconds["train classifier"] = got[1]
    start = time.perf_counter()
    out_c = {k: csi_outputs(csi_net, v) for k, v in parts.items()}
    out_s = {k: csi_outputs(sup_net, v) for k, v in parts.items()}
    csi = CSI().fit_outputs(out_c["train"])
    sup = SupCSI().fit_outputs(out_s["train"])
    sup_base = ShiftedBaseScores(kinds=("supcsi", "supocsvm", "supmah"),
                                 svm_max_samples=args.svm_max_samples,
                                 random_state=args.seed).fit(out_s["train"]["features"], y_train)

    def plus(c: dict, s: dict) -> np.ndarray:  # the 24 scores of SupCSI+
        return np.hstack([csi.base_scores(c["projections"], c["logits"]),
                          sup_base.score(s["features"], s["logits"])])

    def base(k: str) -> dict[str, np.ndarray]:
        p = plus(out_c[k], out_s[k])
        c, s = p[:, :len(csi.names_)], p[:, len(csi.names_):]
        return {"csi": c, "sup": s, "supcsi": s[:, :4], "plus": p}

    scores = {k: base(k) for k in parts}
    combos = {"glrt-CSI": ("glrt", "csi"), "glrt-SupCSI": ("glrt", "supcsi"),
              "glrt-SupCSI+": ("glrt", "plus"), **{m: (m, "plus") for m in COMBINERS}}
    fitted = {row: ScoreCombiner(method=m).fit(scores["holdout"][cols])
              for row, (m, cols) in combos.items()}
    t_auto = time.perf_counter()
    tasks = proxy_tasks(out_c, out_s, y_train, y_hold, args)
    auto = ScoreCombiner(random_state=args.seed)
    auto.fit_chosen(scores["holdout"]["plus"], auto.choose(tasks,
                                                           np.random.default_rng(args.seed)))
    # per_task=True: the same halves and choice, the paired test on every split apart
    apart = ScoreCombiner(random_state=args.seed)
    apart.fit_chosen(scores["holdout"]["plus"], apart.choose(
        tasks, np.random.default_rng(args.seed), kinds=list(range(len(tasks)))))
    # both kinds: the held-out classes and rotations, half of the weight each
    n = len(tasks)
    rot = rotation_task(out_c, out_s, plus, args.seed)
    both = ScoreCombiner(random_state=args.seed)
    both.fit_chosen(scores["holdout"]["plus"], both.choose(
        [*tasks, rot], np.random.default_rng(args.seed),
        weights=[0.5 / n] * n + [0.5], kinds=["held-out classes"] * n + ["rotations"]))
    # every kind: and shuffled pixels, a third of the weight each
    shuf = shuffled_task(rot, parts["holdout"], lambda x: (csi_outputs(csi_net, x),
                                                           csi_outputs(sup_net, x)),
                         plus, args.seed)
    every = ScoreCombiner(random_state=args.seed)
    every.fit_chosen(scores["holdout"]["plus"], every.choose(
        [*tasks, rot, shuf], np.random.default_rng(args.seed),
        weights=[1 / 3 / n] * n + [1 / 3] * 2,
        kinds=["held-out classes"] * n + ["rotations", "shuffled pixels"]))
    seconds["auto (proxies)"] = time.perf_counter() - t_auto
    sel, sel_b, sel_e = auto.selection_, both.selection_, every.selection_
    assert apart.selection_["candidates"] == sel["candidates"]
    stats: dict[str, dict[str, np.ndarray]] = {}
    for k in ("id", *oods):
        row = {"CSI": csi.score_outputs(out_c[k]), "SupCSI": sup.score_outputs(out_s[k])}
        row |= {r: comb.score(scores[k][combos[r][1]]) for r, comb in fitted.items()}
        row["auto"] = auto.score(scores[k]["plus"])
        row["auto, per_task"] = apart.score(scores[k]["plus"])
        row["auto, both kinds"] = both.score(scores[k]["plus"])
        row["auto, every kind"] = every.score(scores[k]["plus"])
        row["single (proxy)"] = scores[k]["plus"][:, sel["single"]]
        row["single (both kinds)"] = scores[k]["plus"][:, sel_b["single"]]
        row["single (every kind)"] = scores[k]["plus"][:, sel_e["single"]]
        row |= {r: scores[k][net][:, j] for r, (net, j) in BASE_ROWS.items()}
        stats[k] = row
    if got is not None:
        model, _, mean, std = got
        get = {k: extract(model, images_to_tensor(parts[k], mean, std), batch_size=512)
               for k in ("train", "id", *oods)}
        maha = Mahalanobis().fit(get["train"].features, y_train)
        for k in ("id", *oods):
            stats[k]["softmax (SmallCNN)"] = MSP().score(get[k].logits)
            stats[k]["Mahalanobis (SmallCNN)"] = maha.score(get[k].features)
    results = {name: {r: _metrics(stats["id"][r], stats[name][r], far) for r in stats["id"]}
               for name in oods}
    names = [*csi.names_, *sup_base.names_]
    verdicts, verdicts_apart = {}, {}
    kinds: dict[str, dict] = {"both_kinds": {}, "every_kind": {}}
    for name in oods:
        a, c, b = ((stats["id"][r], stats[name][r])
                   for r in ("auto", "auto, per_task", "single (proxy)"))
        verdicts[name] = versus(a, b, sel["method"] == "single")
        verdicts_apart[name] = versus(c, b, apart.selection_["method"] == "single")
        for key, row, s_k in (("both_kinds", "both kinds", sel_b),
                              ("every_kind", "every kind", sel_e)):
            d, e = ((stats["id"][r], stats[name][r])
                    for r in (f"auto, {row}", f"single ({row})"))
            kinds[key][name] = {"own": versus(d, e, s_k["method"] == "single"),
                                "auto": versus(d, b, False)}
    seconds["scores and metrics"] = time.perf_counter() - start - seconds["auto (proxies)"]
    return {"results": results, "seconds": seconds,
            "auto": {"method": sel["method"], "columns": [names[c] for c in sel["columns"]],
                     "single": names[sel["single"]], "win_fraction": sel["win_fraction"],
                     "task_win_fractions": sel["task_win_fractions"],
                     "versus_single": verdicts,
                     "per_task": {"method": apart.selection_["method"],
                                  "columns": [names[c] for c in apart.selection_["columns"]],
                                  "versus_single": verdicts_apart},
                     **{key: {"method": s_k["method"],
                              "columns": [names[c] for c in s_k["columns"]],
                              "single": names[s_k["single"]],
                              "kind_win_fractions": s_k["kind_win_fractions"],
                              "versus": kinds[key]}
                        for key, s_k in (("both_kinds", sel_b), ("every_kind", sel_e))}},
            "sizes": {k: int(len(v)) for k, v in parts.items()}}


def _sample(rng, n_rows: int, size: int) -> np.ndarray:
    return np.sort(rng.permutation(n_rows)[:size])


def _splits(args):
    """FashionMNIST, the seeded generator, the training rows of the networks and the
    holdout rows of the z-values (disjoint), and the training images and labels."""
    bench = load_ood_benchmark("fashion_mnist")
    rng = np.random.default_rng(args.seed)
    order = rng.permutation(len(bench.X_train))
    tr = np.sort(order[: args.train_rows])
    ho = np.sort(order[args.train_rows: args.train_rows + args.holdout_rows])
    return bench, rng, tr, ho, np.asarray(bench.X_train), np.asarray(bench.y_train)


def run(args) -> dict:
    from table2_ood import pixel_stats, trained_model

    bench, rng, tr, ho, X, y = _splits(args)
    te = _sample(rng, len(bench.X_test), args.test_rows)
    parts = {"train": X[tr], "holdout": X[ho], "id": np.asarray(bench.X_test)[te]}
    parts |= {name: np.asarray(v)[rng.permutation(len(v))[: args.ood_rows]]
              for name, v in bench.ood.items()}

    def baseline():
        if args.quick:
            return None
        model, seconds = trained_model(bench, 5, 0, args.quiet)
        return model, seconds, *pixel_stats(bench)

    return run_setting(parts, y[tr], y[ho], list(bench.ood), args, "fashion_mnist", FAR,
                       baseline)


def run_loco(args, done: dict, save) -> dict:
    """Leave-one-class-out: per held-out class ``c`` of ``args.classes``, networks trained on
    the other nine classes of the same training subset, z-values on the holdout's other
    classes, ID test: the test images of the nine classes, OOD: every test image of ``c``.
    ``done`` holds the classes finished by an earlier run of the same settings; ``save``
    is called after every class."""
    from table2_ood import pixel_stats

    bench, rng, tr, ho, X, y = _splits(args)
    Xte, yte = np.asarray(bench.X_test), np.asarray(bench.y_test)
    mean, std = pixel_stats(bench)
    for c in args.classes:
        name = f"class {c}"
        if name in done:
            continue
        log(f"leave out class {c}", args.quiet)
        t_in, h_in = tr[y[tr] != c], ho[y[ho] != c]
        id_test = np.flatnonzero(yte != c)
        id_test = id_test[_sample(rng, id_test.size, args.test_rows)]
        relabel = np.cumsum(np.arange(10) != c) - 1
        parts = {"train": X[t_in], "holdout": X[h_in], "id": Xte[id_test],
                 name: Xte[yte == c][: args.ood_rows]}
        labels = relabel[y[t_in]]

        def baseline(parts=parts, labels=labels, c=c):
            model, seconds = subset_classifier(parts["train"], labels, 9, args,
                                               f"fashion_mnist-no{c}", mean, std)
            return model, seconds, mean, std

        done[name] = run_setting(parts, labels, relabel[y[h_in]], [name], args,
                                 f"fashion_mnist-no{c}", LOCO_FAR, baseline)
        save(done)
    return done


def render(raw: dict) -> str:
    loco = raw["args"].get("mode") == "loco"
    res, args = raw["results"], raw["args"]
    sets = list(res)
    rows = [r for r in ROWS if r in res[sets[0]]]
    paper = PAPER_LOCO if loco else PAPER
    far = LOCO_FAR if loco else FAR
    where = "CIFAR-10 leave-one-class-out avg" if loco else "CIFAR-10 avg"
    seconds = ", ".join(f"{k} {v:.0f} s" if v or not k.startswith("train") else
                        f"{k[6:]} loaded from the cache (trained by an earlier run)"
                        for k, v in raw["seconds"].items())
    if loco:
        first = next(iter(raw["per_class"].items()))
        n_ood = first[1]["sizes"][first[0]]
        head = ["# CSI and SupCSI against their GLRT combinations: FashionMNIST leave-one-class-"
                "out", "", raw["machine"], "",
                f"`{raw['command']}`; protocol in the script's docstring. Per held-out class, "
                f"networks trained on the other nine classes of {args['train_rows']} training "
                f"images (about {args['train_rows'] * 9 // 10}), width {args['width']}, "
                f"{args['epochs']} epochs, batch {args['batch_size']}; the baseline SmallCNN "
                f"trained {args['classifier_epochs']} epochs on the same images (the paper's "
                "baselines train on the full training fold). Z-values on the nine classes of "
                f"{args['holdout_rows']} other training images; ID test: {args['test_rows']} "
                f"test images of the nine classes; OOD: the held-out class's {n_ood:,} test "
                "images. "
                f"Times summed over the classes: {seconds}.",
                "", f"Held-out classes finished: {len(sets)} of 10.", ""]
    else:
        head = ["# CSI and SupCSI against their GLRT combinations (FashionMNIST)", "",
                raw["machine"], "",
                f"`{raw['command']}`; protocol in the script's docstring. Networks: "
                f"{args['train_rows']} training images, width {args['width']}, "
                f"{args['epochs']} epochs, batch {args['batch_size']} ({seconds}). "
                f"Z-values on {args['holdout_rows']} other training images; ID test: "
                f"{raw['sizes']['id']} test images; {args['ood_rows']} rows of each OOD set.", ""]
    lines = head
    titles = [CLASSES[int(s.split()[-1])] if loco else s for s in sets]
    for metric, label, fmt in (("auroc", "AUROC", ".4f"),
                               ("dr", f"Detection rate (%) at {far:.0%} false alarms", ".1f")):
        lines += [f"{label}:", "", "| method | " + " | ".join(titles) + f" | avg | paper "
                  f"({where}) |", "|---" * (len(sets) + 3) + "|"]
        for r in rows:
            if r.startswith("s_") and metric == "dr":
                continue
            if r == "s_norm,1":
                lines.append("| *single base scores (identity shift)* |" + " |" * (len(sets) + 2))
            vals = [res[s][r][metric] for s in sets]
            ref = paper.get(r, (None, None))[0 if metric == "auroc" else 1]
            theirs = "-" if ref is None else format(ref, fmt)
            lines.append(f"| {r} | " + " | ".join(format(v, fmt) for v in vals)
                         + f" | {format(float(np.mean(vals)), fmt)} | {theirs} |")
        lines.append("")
    mean = {r: float(np.mean([res[s][r]["auroc"] for s in sets])) for r in rows}
    over = "the held-out classes" if loco else "the OOD sets"
    lines.append(f"The paper's claim, on average AUROC over {over}:")
    lines.append("")
    for a, b in (("glrt-CSI", "CSI"), ("glrt-SupCSI", "SupCSI"), ("glrt-SupCSI+", "SupCSI")):
        holds = mean[a] > mean[b]
        above = sum(res[s][a]["auroc"] > res[s][b]["auroc"] for s in sets)
        if a == "glrt-SupCSI+":  # not a claim of the paper: its order, for comparison
            same = holds == (paper[a][0] > paper[b][0])
            claim = "as in the paper" if same else "unlike the paper"
        else:
            claim = "holds" if holds else "does not hold"
        lines.append(f"- {a} {'beats' if holds else 'does not beat'} {b}: {mean[a]:.4f} "
                     f"against {mean[b]:.4f}, higher on {above} of {len(sets)} ({claim} here; "
                     f"the paper: {paper[a][0]:.4f} against {paper[b][0]:.4f}).")
    singles = [r for r in rows if r.startswith("s_")]
    if singles:
        best = max(singles, key=mean.__getitem__)
        lines += ["", f"The best single base score on average is {best} ({mean[best]:.4f}); "
                  f"glrt-SupCSI+ {mean['glrt-SupCSI+']:.4f}, glrt-SupCSI "
                  f"{mean['glrt-SupCSI']:.4f}" + (
                      " (the paper's Table 12: s_supCSI,1 0.8240 is the best base score in "
                      "its leave-one-class-out runs, and glrt-SupCSI+ falls below glrt-SupCSI "
                      "there)." if loco else ".")]
    lines += auto_lines(raw, sets, titles)
    lines += ["", "The paper's values are for CIFAR-10 inliers and ResNet18 networks trained "
              "for 100 epochs on 50,000 images; these are FashionMNIST and small networks "
              "trained for a few epochs on a CPU, so the levels differ; the comparison that "
              "carries over is between the rows of one table."]
    return "\n".join(lines) + "\n"


def auto_lines(raw: dict, sets: list[str], titles: list[str]) -> list[str]:
    """What ``auto`` chose and its verdict against ``single (proxy)`` per set."""
    loco = raw["args"].get("mode") == "loco"
    autos = [raw["per_class"][s]["auto"] if loco else raw.get("auto") for s in sets]
    if any(a is None for a in autos):
        return []

    def chose(a: dict) -> str:
        if a["method"] == "single":
            return f"the single score {a['single']}"
        return f"{a['method']}({'+'.join(a['columns'])}) (its single: {a['single']})"

    cells = [f"{t} {v['verdict']} [{v['low']:+.4f}, {v['high']:+.4f}]"
             for t, s, a in zip(titles, sets, autos, strict=True)
             for v in (a["versus_single"][s],)]
    counts = tally_text(a["versus_single"][s]["verdict"] for s, a in zip(sets, autos,
                                                                          strict=True))

    def picks(entries: list[dict]) -> str:  # per held-out class, or the one choice
        if loco:
            return "; ".join(f"{t}: {chose(a)}" for t, a in zip(titles, entries, strict=True))
        return chose(entries[0])

    lines = ["", "`auto` (`ScoreCombiner`'s default, on the 24 scores of SupCSI+, chosen on "
             "proxy outliers of held-out training classes, `proxy_tasks`) chose "
             + picks(autos) + ".",
             "", "`auto` against `single (proxy)` (95 % interval of the AUROC difference over "
             f"{N_VERDICT:,} paired resamples of the test rows, ID and OOD apart): "
             + "; ".join(cells)
             + f". {counts} of {len(cells)}."]
    if all("per_task" in a for a in autos):
        lines += ["", *per_task_lines(sets, autos, picks)]
    for key in ("both_kinds", "every_kind"):
        if all(key in a for a in autos):
            lines += ["", *kinds_lines(key, sets, titles if loco else None, autos, picks)]
    return lines


def per_task_lines(sets: list[str], autos: list[dict], picks) -> list[str]:
    """``auto`` with the paired test on every held-out split apart (``kinds`` one per task,
    as ``BankDetector(per_task=True)``): what it chose and its verdicts."""
    apart = [a["per_task"] | {"single": a["single"]} for a in autos]
    verdicts = [a["per_task"]["versus_single"][s]["verdict"]
                for s, a in zip(sets, autos, strict=True)]
    return ["`auto` with the paired test on every held-out split apart (`kinds` one per "
            "task, as `BankDetector(per_task=True)`; the same choice, the row `auto, "
            "per_task`) chose " + picks(apart) + f". Against `single (proxy)`: "
            f"{tally_text(verdicts)} of {len(verdicts)}."]


#: What :func:`kinds_lines` says of each choice on several kinds of proxy: its kinds, its
#: rows, and how the proxy outliers of the kinds given were made.
KINDS = {
    "both_kinds": ("both kinds of proxy (the held-out classes and rotations", "both kinds",
                   ": half of the holdout rows turned by 90, 180 and 270 degrees against the "
                   "other half, `rotation_task`; half of the weight each",
                   "held-out classes / rotations"),
    "every_kind": ("every kind of proxy (the held-out classes, rotations and shuffled pixels",
                   "every kind",
                   ": the rotations above, and the same other half with every pixel shuffled "
                   "across its images apart, `shuffled_task`; a third of the weight each",
                   "held-out classes / rotations / shuffled pixels"),
}


def kinds_lines(key: str, sets: list[str], titles: list[str] | None, autos: list[dict],
                picks) -> list[str]:
    """``auto`` on several kinds of proxy (``key`` of :data:`KINDS`): what it chose, its win
    fractions per kind (per held-out class with ``titles``, else the one choice's) and its
    verdicts against the single score of the same proxies and against ``single (proxy)``."""
    what, row, made, order = KINDS[key]
    got = [a[key] for a in autos]
    count = {ref: tally_text(b["versus"][s][ref]["verdict"]
                             for s, b in zip(sets, got, strict=True))
             for ref in ("own", "auto")}

    def kinds(b: dict) -> str:
        return " / ".join(f"{100 * f:.0f}" for f in b["kind_win_fractions"] or [])

    wins = (kinds(got[0]) if titles is None else
            "; ".join(f"{t} {kinds(b)}" for t, b in zip(titles, got, strict=True)))
    return [f"`auto` on {what}{made}; the paired test on each kind apart; the row `auto, "
            f"{row}`) chose " + picks(got) + f" (win % on {order}: {wins}). Against the "
            f"single score these proxies ranked best (`single ({row})`): {count['own']} of "
            f"{len(sets)}; against `single (proxy)`: {count['auto']} of {len(sets)}."]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=["dataset", "loco"], default="dataset",
                    help="dataset against dataset, or leave-one-class-out")
    ap.add_argument("--classes", type=int, nargs="+", default=list(range(10)),
                    help="held-out classes of --mode loco")
    ap.add_argument("--train-rows", type=int, help="default 4000 (loco: 2000)")
    ap.add_argument("--holdout-rows", type=int, default=2000)
    ap.add_argument("--test-rows", type=int, default=2000)
    ap.add_argument("--ood-rows", type=int, default=2000)
    ap.add_argument("--epochs", type=int, help="default 8 (loco: 6)")
    ap.add_argument("--classifier-epochs", type=int, default=20,
                    help="the loco baseline SmallCNN's epochs on the training subset")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--width", type=int, help="default 16 (loco: 8)")
    ap.add_argument("--svm-max-samples", type=int, default=300)
    ap.add_argument("--proxy-splits", type=int, default=3,
                    help="auto's proxy tasks: two training classes held out in turn")
    ap.add_argument("--proxy-rows", type=int, default=2000,
                    help="at most this many rows per part of a proxy task")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="a tiny end-to-end check")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--report-only", action="store_true",
                    help="re-render the Markdown from the raw JSON")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    loco = args.mode == "loco"
    defaults = (2000, 6, 8) if loco else (4000, 8, 16)
    for k, v in zip(("train_rows", "epochs", "width"), defaults, strict=True):
        if getattr(args, k) is None:
            setattr(args, k, v)
    if args.quick:
        args.train_rows, args.holdout_rows, args.test_rows, args.ood_rows = 200, 60, 40, 30
        args.epochs, args.width, args.batch_size, args.svm_max_samples = 1, 4, 20, 20
        args.classifier_epochs = 1
    stem = "csi_ood_loco" if loco else "csi_ood"
    raw_path, md_path = args.out / f"{stem}_raw.json", args.out / f"{stem}.md"
    if args.report_only:
        md_path.write_text(render(json.loads(raw_path.read_text())))
        log(f"wrote {md_path}", args.quiet)
        return 0
    start = time.perf_counter()
    machine = machine_line()
    log(machine, args.quiet)
    meta = {"machine": machine, "args": vars(args) | {"out": str(args.out)},
            "command": "python benchmarks/csi_ood.py " + " ".join(
                argv if argv is not None else sys.argv[1:])}
    args.out.mkdir(parents=True, exist_ok=True)

    def write(raw: dict) -> None:
        raw |= meta | {"total_seconds": time.perf_counter() - start}
        raw_path.write_text(json.dumps(raw, indent=1) + "\n")
        md_path.write_text(render(raw))
        log(f"wrote {md_path}", args.quiet)

    if not loco:
        write(run(args))
        return 0
    keep = {k: v for k, v in meta["args"].items() if k not in ("classes", "quiet", "out")}
    done: dict = {}
    if raw_path.exists():  # classes finished by an earlier run of the same settings
        old = json.loads(raw_path.read_text())
        if {k: v for k, v in old["args"].items() if k in keep} == keep:
            done = old["per_class"]
            start -= old["total_seconds"]

    def save(per_class: dict) -> None:
        names = sorted(per_class, key=lambda k: int(k.split()[-1]))
        seconds: dict[str, float] = {}
        for name in names:
            for k, v in per_class[name]["seconds"].items():
                seconds[k] = seconds.get(k, 0.0) + v
        write({"per_class": {k: per_class[k] for k in names},
               "results": {k: per_class[k]["results"][k] for k in names},
               "seconds": seconds})

    run_loco(args, done, save)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
