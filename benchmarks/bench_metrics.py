"""Speed of the exact metrics against ``numpy.sort`` and ``numpy.argsort`` of the same scores.

For each size (default n = 1e6 and 1e7) and two score sets, continuous (no ties) and
rounded to three decimals (about 1000 tie groups):

- 0/1 losses and binary OOD labels (30 % OOD): ``aurc``, ``augrc``, ``auroc``, ``aupr_in``,
  ``fpr_at_tpr`` against ``np.sort`` and ``np.argsort`` of the scores. Goals: faster than
  one argsort (ratio < 1) and within 4x of the sort.
- continuous losses: ``aurc``, ``augrc`` against ``np.argsort``. Goal: within 1.3x.
- peers on the same arrays, where importable: scikit-learn's ``roc_auc_score`` and
  ``average_precision_score``; torch-uncertainty's ``AURC`` / ``AUGRC`` (its ``update`` with
  the confidence ``1 - u / 2`` as a 1-D probability and the errors as targets, then
  ``compute``); pytorch-ood's ``AUROC``, ``AUPR("id")`` and ``FPRAtTPR(0.95)`` (OOD rows
  labelled -1). The peers need a newer PyTorch than the library's extra pins; they are
  installed in ``.venv-peers`` (see ``make bench-detectors-peers``): run this script with that
  interpreter to time them, otherwise their rows say "not installed".

Every contender of one case is timed in turn (``best_times``: a, b, c, a, b, c, ...), so the
load of other jobs falls on all of them; a time is the best of ``--repeats`` calls after a
warm-up. :func:`machine_line` (CPU, NumPy's vector extensions, BLAS, load) is printed first and
written beside the table: NumPy's sort kernels differ with AVX-512.

Run: ``python benchmarks/bench_metrics.py [--sizes 1000000 10000000] [--repeats 3]``.
Writes benchmarks/results/bench_metrics.md.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import numpy as np
from _timing import best_times, machine_line  # benchmarks/ is on sys.path as a script

from abstain.metrics import augrc, aupr_in, aurc, auroc, fpr_at_tpr

RESULTS = Path(__file__).parent / "results" / "bench_metrics.md"
GOALS = ("Goals: 0/1 losses and binary labels: ratio to argsort < 1 and to sort <= 4; "
         "continuous losses: ratio to argsort <= 1.3.")


def _optional(name: str):
    try:
        return __import__(name, fromlist=["_"])
    except ImportError:
        return None


def _peers(u, losses, ood) -> tuple[dict[str, Callable[[], object]], list[str]]:
    """The peers' calls on the arrays, and the names of those not installed."""
    calls: dict[str, Callable[[], object]] = {}
    missing = []
    skm = _optional("sklearn.metrics")
    if skm is None:
        missing += ["sklearn roc_auc_score", "sklearn average_precision_score"]
    else:
        calls["sklearn roc_auc_score"] = lambda: skm.roc_auc_score(ood, u)
        calls["sklearn average_precision_score"] = lambda: skm.average_precision_score(~ood, -u)
    tu = _optional("torch_uncertainty.metrics.classification")
    torch = _optional("torch")
    if tu is None or torch is None:
        missing += ["torch-uncertainty AURC", "torch-uncertainty AUGRC"]
    else:
        conf = torch.from_numpy(1.0 - u / 2.0)  # in (0.5, 1]: the predicted class is 1
        target = torch.from_numpy(1 - losses.astype(np.int64))  # class 1 unless an error

        def metric(cls):
            def call():
                m = cls()
                m.update(conf, target)
                return m.compute()
            return call

        calls["torch-uncertainty AURC"] = metric(tu.AURC)
        calls["torch-uncertainty AUGRC"] = metric(tu.AUGRC)
    po = _optional("pytorch_ood.metrics")
    if po is None or torch is None:
        missing += ["pytorch-ood AUROC", "pytorch-ood AUPR-IN", "pytorch-ood FPR95TPR"]
    else:
        scores = torch.from_numpy(u)
        labels = torch.from_numpy(np.where(ood, -1, 0))

        def ood_metric(make):
            def call():
                return make().update(scores, labels).compute()
            return call

        calls["pytorch-ood AUROC"] = ood_metric(po.AUROC)
        calls["pytorch-ood AUPR-IN"] = ood_metric(lambda: po.AUPR("id"))
        calls["pytorch-ood FPR95TPR"] = ood_metric(lambda: po.FPRAtTPR(0.95))
    return calls, missing


def _ours(u, errors, ood, continuous) -> tuple[dict[str, Callable[[], object]], ...]:
    """The metrics on 0/1 losses and binary labels, and on continuous losses."""
    binary: dict[str, Callable[[], object]] = {
        "aurc": lambda: aurc(errors, u),
        "augrc": lambda: augrc(errors, u),
        "auroc": lambda: auroc(ood, u),
        "aupr_in": lambda: aupr_in(ood, u),
        "fpr_at_tpr": lambda: fpr_at_tpr(ood, u, 0.95),
    }
    cont: dict[str, Callable[[], object]] = {
        "aurc (continuous losses)": lambda: aurc(continuous, u),
        "augrc (continuous losses)": lambda: augrc(continuous, u),
    }
    return binary, cont


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10**6, 10**7])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-peers", action="store_true", help="skip the peers' rows")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    machine = machine_line()
    print(machine, flush=True)
    print(GOALS, flush=True)
    rows: list[tuple[int, str, str, str, float, float, float]] = []
    missing: list[str] = []
    for n in args.sizes:
        rng = np.random.default_rng(0)
        scores = rng.random(n)
        errors = (rng.random(n) < scores).astype(np.float64)
        ood = rng.random(n) < 0.3
        continuous = rng.random(n) * scores
        for data, u in (("no ties", scores), ("~1000 tie groups", np.round(scores, 3))):
            base = {"np.sort": lambda u=u: np.sort(u), "np.argsort": lambda u=u: np.argsort(u)}
            binary, cont = _ours(u, errors, ood, continuous)
            peers, missing = ({}, []) if args.no_peers else _peers(u, errors, ood)
            times = best_times({**base, **binary, **cont, **peers}, args.repeats)
            t_sort, t_arg = times["np.sort"], times["np.argsort"]
            print(f"n={n:,} {data}: np.sort {t_sort * 1e3:.1f} ms, np.argsort "
                  f"{t_arg * 1e3:.1f} ms", flush=True)
            for name in (*binary, *cont, *peers):
                kind = "continuous" if name in cont else "0/1"
                if name in peers:
                    kind = "peer"
                t = times[name]
                rows.append((n, data, kind, name, t, t / t_arg, t / t_sort))
                print(f"  {name:<34} {t * 1e3:9.1f} ms  / argsort {t / t_arg:5.2f}  "
                      f"/ sort {t / t_sort:6.2f}", flush=True)
            rows.append((n, data, "baseline", "np.argsort", t_arg, 1.0, t_arg / t_sort))
            rows.append((n, data, "baseline", "np.sort", t_sort, t_sort / t_arg, 1.0))
    lines = [
        "# Metric speed: ratios to numpy.argsort and numpy.sort of the same scores",
        "",
        f"Machine: {machine}.",
        "",
        GOALS,
        "",
        f"Command: `python benchmarks/bench_metrics.py --sizes {' '.join(map(str, args.sizes))} "
        f"--repeats {args.repeats}`; best of {args.repeats} interleaved calls after a warm-up. "
        "0/1 losses: errors with probability equal to the score; 30 % OOD rows; continuous "
        "losses: uniform times the score.",
        "",
        "| n | scores | losses | function | time (ms) | / argsort | / sort |",
        "|---:|---|---|---|---:|---:|---:|",
    ]
    for n, data, kind, name, t, r_arg, r_sort in rows:
        lines.append(f"| {n:,} | {data} | {kind} | `{name}` | {t * 1e3:.1f} | {r_arg:.2f} | "
                     f"{r_sort:.2f} |")
    for name in missing:
        lines.append(f"| | | peer | {name} | not installed | | |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
