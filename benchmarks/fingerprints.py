"""Fingerprints of the grouping and the one-column metrics, to compare machines bit for bit.

For five score families (continuous, rounded to 3 and to 1 decimals, zeros of both signs with
extremes, and close values under a huge span, where the packed-key order must sort runs
again) at 5,000 and 200,000 rows, the table holds the SHA-1 (first 12 hex digits) of:

- ``order``: ``stable_order`` of the scores (the rows' order, ties in row order);
- ``totals``: ``group_totals`` of continuous weights (values, counts and sums);
- ``aurc family``: ``aurc``, ``augrc``, ``e_aurc`` and ``aurc(ties="index")`` of those weights as
  losses;
- ``curve``: the risks of ``risk_coverage_curve``;

and the values of ``aurc`` (0/1 losses), ``auroc``, ``aupr_in``, ``aupr_out`` and
``fpr_at_tpr(0.95)``, printed with ``repr``. The data are drawn without libm (weights are
uniforms times powers of two: ``np.exp`` differs in the last bit between CPUs and NumPy
versions), so every machine starts from the same bits. An earlier table was computed on a
2-core AVX2 machine with NumPy 2.4.6 and, identically, on a 16-core AVX-512 machine with NumPy
2.5.2; the stored one was recomputed on a 2-core AVX-512 AMD EPYC with NumPy 2.4.6 when a tie
group's term of the AuRC became a direct sum (the ``aurc family`` of two tied families at
5,000 rows changed in the last bits); ``make bench-check`` reruns it and compares. Run:
``python benchmarks/fingerprints.py [--out FOLDER]``.
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

import numpy as np

from abstain._core.groups import group_totals, stable_order
from abstain.metrics import (
    augrc,
    aupr_in,
    aupr_out,
    aurc,
    auroc,
    e_aurc,
    fpr_at_tpr,
    risk_coverage_curve,
)

RESULTS = Path(__file__).parent / "results"
KINDS = ("uniform", "rounded3", "rounded1", "signs", "close")


def _hash(*arrays: object) -> str:
    digest = hashlib.sha1()
    for a in arrays:
        arr = np.asarray(a)
        digest.update(str(arr.dtype).encode())
        digest.update(np.ascontiguousarray(arr).tobytes())
    return digest.hexdigest()[:12]


def _scores(rng: np.random.Generator, n: int, kind: str) -> np.ndarray:
    if kind == "uniform":
        return rng.random(n)
    if kind == "rounded3":
        return np.round(rng.random(n), 3)
    if kind == "rounded1":
        return np.round(rng.normal(size=n), 1)
    if kind == "signs":
        return rng.choice([-0.0, 0.0, 1.0, -2.0, 1e300, -1e300, 5e-324], n)
    return np.concatenate([[-1e308, 1e308], 1 + rng.integers(0, n // 50, n - 2) * 2.0**-50])


def row(n: int, kind: str) -> str:
    rng = np.random.default_rng(n)
    u = _scores(rng, n, kind)
    w = rng.random(n) * np.ldexp(1.0, rng.integers(-20, 20, n))
    ood = rng.random(n) < 0.3
    err = ((rng.random(n) < 0.4) & ~ood).astype(float)
    order, _ = stable_order(u)
    values, counts, (sums,) = group_totals(u, w)
    family = [aurc(w, u), augrc(w, u), e_aurc(w, u), aurc(w, u, ties="index")]
    ood_values = [aurc(err, u), auroc(ood, u), aupr_in(ood, u), aupr_out(ood, u),
                  fpr_at_tpr(ood, u, 0.95)]
    cells = [f"{n:,}", kind, _hash(order), _hash(values, counts, sums), _hash(family),
             _hash(risk_coverage_curve(w, u).risk), *(repr(float(v)) for v in ood_values)]
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder of fingerprints.md")
    args = parser.parse_args()
    head = ("| n | scores | order | totals | aurc family | curve | aurc (0/1) | auroc | aupr_in "
            "| aupr_out | fpr_at_tpr |")
    lines = ["# Fingerprints of the grouping and the one-column metrics", "",
             "Bit for bit the same on every machine (see the script's docstring). Command: "
             "`python benchmarks/fingerprints.py`.", "", head, "|" + "---|" * 11]
    lines += [row(n, kind) for n in (5000, 200_000) for kind in KINDS]
    text = "\n".join(lines) + "\n"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "fingerprints.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
