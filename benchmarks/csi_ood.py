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
  classifier (``table2_ood.py``'s SmallCNN on all training images: MSP and Mahalanobis);
* z-values fitted on ``--holdout-rows`` training images that trained no network; ID test:
  ``--test-rows`` FashionMNIST test images; OOD: each set of
  ``load_ood_benchmark("fashion_mnist")`` (``--ood-rows`` of each); AUROC and detection
  rate at 5 % false alarms.

The paper's claim checked from the numbers: glrt-CSI beats CSI and glrt-SupCSI beats SupCSI
on average. Leave-one-class-out (the paper's Tables 10-11) needs two networks per held-out
class (twenty trainings); it is not run by this script.

Run: ``python benchmarks/csi_ood.py [--train-rows 4000] [--epochs 8] [--width 16]``; writes
``benchmarks/results/csi_ood.md`` and ``csi_ood_raw.json``. ``--quick`` checks the pipeline
on a tiny subset (its numbers mean nothing; write it elsewhere with ``--out``). With a GPU,
``--device cuda --train-rows 60000 --epochs 100 --width 16`` is the full size.
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
from abstain.detectors import CSI, MSP, Mahalanobis, ShiftedBaseScores, SupCSI

sys.path.insert(0, str(Path(__file__).parent))
from _timing import machine_line  # noqa: E402

OUT = Path(__file__).parent / "results"
FAR = 0.05
COMBINERS = ("fisher", "bonferroni", "simes", "stouffer", "alr")
ROWS = ("CSI", "glrt-CSI", "SupCSI", "glrt-SupCSI", "glrt-SupCSI+", *COMBINERS,
        "softmax (SmallCNN)", "Mahalanobis (SmallCNN)")
#: The paper's averages over its OOD sets (ResNet18; CIFAR-10 inliers, Tables 2 and 4):
#: AUROC and detection rate (%) at 5 % FAR.
PAPER = {"CSI": (0.9528, 80.4), "glrt-CSI": (0.9552, 81.6), "SupCSI": (0.9652, 82.4),
         "glrt-SupCSI": (0.9674, 82.6), "glrt-SupCSI+": (0.9677, 86.2)}


def log(msg: str, quiet: bool) -> None:
    if not quiet:
        print(msg, flush=True)


def network(images, labels, args, tag: str):
    """The trained network of CSI (``labels`` None) or SupCSI, from the cache or trained."""
    from abstain.torch import load_csi, save_csi, train_csi

    path = (data_home() / "models" / f"{tag}-n{len(images)}-w{args.width}-e{args.epochs}"
            f"-s{args.seed}.npz")
    if path.exists() and not args.quick:
        log(f"  {tag}: cached {path}", args.quiet)
        return load_csi(path), 0.0
    start = time.perf_counter()
    net = train_csi(images, labels, epochs=args.epochs, batch_size=args.batch_size,
                    width=args.width, device=args.device, random_state=args.seed,
                    progress=not args.quiet)
    seconds = time.perf_counter() - start
    if not args.quick:
        path.parent.mkdir(parents=True, exist_ok=True)
        save_csi(net.cpu(), path)
    log(f"  {tag}: trained in {seconds:.0f} s", args.quiet)
    return net.cpu(), seconds


def _metrics(stat_id, stat_ood) -> dict[str, float]:
    is_ood = np.r_[np.zeros(len(stat_id), bool), np.ones(len(stat_ood), bool)]
    s = np.r_[stat_id, stat_ood]
    return {"auroc": float(M.auroc(is_ood, s)),
            "dr": float(100 * M.detection_rate_at_false_alarm(is_ood, s, FAR))}


def run(args) -> dict:
    from table2_ood import pixel_stats, trained_model

    from abstain.torch import csi_outputs, extract, images_to_tensor

    bench = load_ood_benchmark("fashion_mnist")
    rng = np.random.default_rng(args.seed)
    order = rng.permutation(len(bench.X_train))
    tr = np.sort(order[: args.train_rows])
    ho = np.sort(order[args.train_rows: args.train_rows + args.holdout_rows])
    te = np.sort(rng.permutation(len(bench.X_test))[: args.test_rows])
    X, y = np.asarray(bench.X_train), np.asarray(bench.y_train)
    parts = {"train": X[tr], "holdout": X[ho], "id": np.asarray(bench.X_test)[te]}
    parts |= {name: np.asarray(v)[rng.permutation(len(v))[: args.ood_rows]]
              for name, v in bench.ood.items()}
    seconds: dict[str, float] = {}
    csi_net, seconds["train CSI"] = network(X[tr], None, args, "csi-fashion_mnist")
    sup_net, seconds["train SupCSI"] = network(X[tr], y[tr], args, "supcsi-fashion_mnist")
    start = time.perf_counter()
    out_c = {k: csi_outputs(csi_net, v) for k, v in parts.items()}
    out_s = {k: csi_outputs(sup_net, v) for k, v in parts.items()}
    csi = CSI().fit_outputs(out_c["train"])
    sup = SupCSI().fit_outputs(out_s["train"])
    sup_base = ShiftedBaseScores(kinds=("supcsi", "supocsvm", "supmah"),
                                 svm_max_samples=args.svm_max_samples,
                                 random_state=args.seed).fit(out_s["train"]["features"], y[tr])

    def base(k: str) -> dict[str, np.ndarray]:
        c = csi.base_scores(out_c[k]["projections"], out_c[k]["logits"])
        s = sup_base.score(out_s[k]["features"], out_s[k]["logits"])
        return {"csi": c, "supcsi": s[:, :4], "plus": np.hstack([c, s])}

    scores = {k: base(k) for k in parts}
    combos = {"glrt-CSI": ("glrt", "csi"), "glrt-SupCSI": ("glrt", "supcsi"),
              "glrt-SupCSI+": ("glrt", "plus"), **{m: (m, "plus") for m in COMBINERS}}
    fitted = {row: ScoreCombiner(method=m).fit(scores["holdout"][cols])
              for row, (m, cols) in combos.items()}
    model, _ = trained_model(bench, 5, 0, args.quiet) if not args.quick else (None, 0)
    stats: dict[str, dict[str, np.ndarray]] = {}
    for k in ("id", *bench.ood):
        row = {"CSI": csi.score_outputs(out_c[k]), "SupCSI": sup.score_outputs(out_s[k])}
        row |= {r: comb.score(scores[k][combos[r][1]]) for r, comb in fitted.items()}
        stats[k] = row
    if model is not None:
        mean, std = pixel_stats(bench)
        get = {k: extract(model, images_to_tensor(parts[k], mean, std), batch_size=512)
               for k in ("train", "id", *bench.ood)}
        maha = Mahalanobis().fit(get["train"].features, y[tr])
        for k in ("id", *bench.ood):
            stats[k]["softmax (SmallCNN)"] = MSP().score(get[k].logits)
            stats[k]["Mahalanobis (SmallCNN)"] = maha.score(get[k].features)
    results = {name: {r: _metrics(stats["id"][r], stats[name][r]) for r in stats["id"]}
               for name in bench.ood}
    seconds["scores and metrics"] = time.perf_counter() - start
    return {"results": results, "seconds": seconds,
            "sizes": {k: int(len(v)) for k, v in parts.items()}}


def render(raw: dict) -> str:
    res, args = raw["results"], raw["args"]
    sets = list(res)
    rows = [r for r in ROWS if r in res[sets[0]]]
    lines = ["# CSI and SupCSI against their GLRT combinations (FashionMNIST)", "",
             raw["machine"], "",
             f"`{raw['command']}`; protocol in the script's docstring. Networks: "
             f"{args['train_rows']} training images, width {args['width']}, {args['epochs']} "
             f"epochs, batch {args['batch_size']} (trained in "
             + ", ".join(f"{k} {v:.0f} s" for k, v in raw["seconds"].items()) + "). "
             f"Z-values on {args['holdout_rows']} other training images; ID test: "
             f"{raw['sizes']['id']} test images; {args['ood_rows']} rows of each OOD set.", ""]
    for metric, label, fmt in (("auroc", "AUROC", ".4f"),
                               ("dr", "Detection rate (%) at 5 % false alarms", ".1f")):
        lines += [f"{label}:", "", "| method | " + " | ".join(sets) + " | avg | paper (CIFAR-10"
                  " avg) |", "|---" * (len(sets) + 3) + "|"]
        for r in rows:
            vals = [res[s][r][metric] for s in sets]
            paper = PAPER.get(r)
            theirs = "-" if paper is None else format(paper[0 if metric == "auroc" else 1], fmt)
            lines.append(f"| {r} | " + " | ".join(format(v, fmt) for v in vals)
                         + f" | {format(float(np.mean(vals)), fmt)} | {theirs} |")
        lines.append("")
    mean = {r: float(np.mean([res[s][r]["auroc"] for s in sets])) for r in rows}
    lines.append("The paper's claim, on average AUROC over the OOD sets:")
    lines.append("")
    for a, b in (("glrt-CSI", "CSI"), ("glrt-SupCSI", "SupCSI")):
        holds = mean[a] > mean[b]
        lines.append(f"- {a} {'beats' if holds else 'does not beat'} {b}: {mean[a]:.4f} "
                     f"against {mean[b]:.4f} ({'holds' if holds else 'does not hold'} here; "
                     f"the paper: {PAPER[a][0]:.4f} against {PAPER[b][0]:.4f}).")
    lines += ["", "The paper's values are for CIFAR-10 inliers and ResNet18 networks trained "
              "for 100 epochs on 50,000 images; these are FashionMNIST and small networks "
              "trained for a few epochs on a CPU, so the levels differ; the comparison that "
              "carries over is between the rows of one table."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train-rows", type=int, default=4000)
    ap.add_argument("--holdout-rows", type=int, default=2000)
    ap.add_argument("--test-rows", type=int, default=2000)
    ap.add_argument("--ood-rows", type=int, default=2000)
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--width", type=int, default=16)
    ap.add_argument("--svm-max-samples", type=int, default=300)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="a tiny end-to-end check")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    if args.quick:
        args.train_rows, args.holdout_rows, args.test_rows, args.ood_rows = 60, 40, 40, 30
        args.epochs, args.width, args.batch_size, args.svm_max_samples = 1, 4, 20, 20
    start = time.perf_counter()
    machine = machine_line()
    log(machine, args.quiet)
    raw = run(args)
    raw |= {"machine": machine, "args": vars(args) | {"out": str(args.out)},
            "command": "python benchmarks/csi_ood.py " + " ".join(
                argv if argv is not None else sys.argv[1:]),
            "total_seconds": time.perf_counter() - start}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "csi_ood_raw.json").write_text(json.dumps(raw, indent=1) + "\n")
    (args.out / "csi_ood.md").write_text(render(raw))
    log(f"wrote {args.out / 'csi_ood.md'}", args.quiet)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
