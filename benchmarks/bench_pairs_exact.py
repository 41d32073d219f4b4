"""Time of the two-score AUROC: the exact envelope, the default search and the grid, and
whether the default changes with the units of a column.

Contenders, on the same rows, called in turn (``best_times``) so that the load of other jobs
falls on all of them:

- ``exact``: ``auroc(is_ood, scores, search="exact")``, the envelope over every direction
  (timed up to ``--exact-max`` rows; it is quadratic in the worst case);
- ``auto``: ``auroc(is_ood, scores)``, the default: ``"exact"`` up to ``AUTO_EXACT_ROWS``
  rows, above them the grid of the columns divided by their standard deviations;
- ``grid``: ``auroc(is_ood, scores, search="grid")``, the 360 directions of the raw columns
  (the baseline of the ratios).

Data: two Gaussian scores, OOD rows shifted by (0.7, 0.3), 40 % OOD. The unit check prints
each search's value with the first column x1 and x100. The resample line times the exact
AUROC of a bootstrap resample of 2,000 rows (rows drawn with replacement, so repeated
pairs) against that of the rows themselves: what ``evaluate_ood(n_bootstrap=)`` and
``abstain report --bootstrap`` pay per resample of a pair. Run: ``python
benchmarks/bench_pairs_exact.py [--sizes 3000 20000 100000] [--exact-max 20000]``. Writes
benchmarks/results/bench_pairs_exact.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from _timing import best_times, machine_line

from abstain.metrics import AUTO_EXACT_ROWS, auroc

RESULTS = Path(__file__).parent / "results" / "bench_pairs_exact.md"


def _data(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    s = rng.normal(size=(n, 2))
    is_ood = rng.random(n) < 0.4
    s[is_ood] += [0.7, 0.3]
    return s, is_ood


def time_row(n: int, exact_max: int, repeats: int) -> list[str]:
    s, is_ood = _data(n)
    funcs = {"grid": lambda: auroc(is_ood, s, search="grid"), "auto": lambda: auroc(is_ood, s)}
    if n <= exact_max:
        funcs["exact"] = lambda: auroc(is_ood, s, search="exact")
    t = best_times(funcs, repeats)
    cells = [f"{n:,}", "exact" if n <= AUTO_EXACT_ROWS else "scaled grid"]
    for name in ("exact", "auto", "grid"):
        cells.append(f"{t[name]:.3f} s ({t[name] / t['grid']:.2f}x)" if name in t else "-")
    return cells


def resample_line(repeats: int, n: int = 2000) -> str:
    s, is_ood = _data(n)
    i = np.random.default_rng(1).integers(0, n, n)
    t = best_times({"rows": lambda: auroc(is_ood, s, search="exact"),
                    "resample": lambda: auroc(is_ood[i], s[i], search="exact")}, repeats)
    return (f"Exact AUROC of one bootstrap resample of {n:,} rows: {t['resample']:.3f} s "
            f"(the rows themselves: {t['rows']:.3f} s).")


def unit_line(n: int) -> str:
    s, is_ood = _data(n)
    t = s * [100.0, 1.0]
    parts = []
    for search in ("auto", "grid") + (("exact",) if n <= AUTO_EXACT_ROWS else ()):
        a, b = auroc(is_ood, s, search=search), auroc(is_ood, t, search=search)
        parts.append(f"`{search}` {a:.5f} vs {b:.5f} (difference {abs(a - b):.1e})")
    return f"{n:,} rows, first column x1 vs x100: " + "; ".join(parts) + "."


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[3000, 20000, 100000])
    ap.add_argument("--exact-max", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    machine = machine_line()
    print(machine)
    rows = [time_row(n, args.exact_max, args.repeats) for n in args.sizes]
    head = ["rows", "auto is", "exact", "auto (default)", "grid"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    units = [unit_line(n) for n in sorted({min(args.sizes), max(args.sizes)})]
    resample = resample_line(args.repeats)
    text = "\n".join([
        "# Two-score AUROC: exact envelope, default search and grid",
        "",
        f"`python benchmarks/bench_pairs_exact.py --sizes {' '.join(map(str, args.sizes))} "
        f"--exact-max {args.exact_max}`. {machine}",
        "",
        f"Best of {args.repeats} after a warm-up, the contenders interleaved; ratios against "
        "`grid` in the same run. `-`: not timed (above `--exact-max`).",
        "",
        *lines,
        "",
        resample,
        "",
        "Units of a column:",
        "",
        *[f"- {u}" for u in units],
        "",
    ])
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
