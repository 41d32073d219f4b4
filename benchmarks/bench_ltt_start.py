"""How the Learn-then-Test default picks its start, measured: learning share and start rule.

``BoundedImprovement(target, delta=0.1)`` with 0/1 losses runs fixed-sequence testing with the
exact binomial p-value (``abstain._certify.ltt``): every ``L``-th row learns (the grid of
thresholds and the start), the others test the grid from the start upwards. This script
re-runs that search with other learning shares and start rules, on the same draws, and
prints the mean true coverage and the share of draws whose true selective risk exceeds the
target. Every variant fixes its grid and start from the learning rows alone, so every one
keeps the guarantee; they differ only in coverage. Start rules: the lowest grid point whose
binomial test, projected from the learning rows to the testing rows, has a p-value at most
``delta / margin``, with the learning count ``c`` taken as it is, or less ``s`` standard
deviations (``c - s sqrt(c)``). The variant ``L=10, s=1, margin=20`` is the library's
default (checked against ``ltt_search`` on every draw); ``L=10, s=0, margin=20`` was the
default before. Two references that are **not valid procedures**: ``ceiling`` (every row
tests a grid of 400 population quantiles from the start with the best mean coverage over
the draws, an oracle start) and ``ceiling 0.9n`` (the same with nine tenths of the rows, what
is left after the learning split).

Populations: ``linear`` (u ~ U(0, 1), P(error | u) = u / 4: the benchmark's), ``quadratic``
(0.3 u^2), ``step`` (0.02 below u = 0.5, 0.3 above) and ``digits`` (as in
bench_guarantees.py).

Usage: python benchmarks/bench_ltt_start.py [--draws 400] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from bench_guarantees import CEILING_GRID, DELTA, Population, ceiling_outcomes, digits
from scipy import special

from abstain._certify.ltt import GRID_SIZE, binomial_pvalue, ltt_search

# (learning share 1 / L, standard deviations off the learning count, margin)
VARIANTS = [(10, 0, 20), (10, 1, 20), (10, 2, 20), (10, 0, 50), (10, 0, 100), (7, 1, 20),
            (15, 1, 20)]
DEFAULT = (10, 1, 20)


def curve(name, p_error, risk):
    """A simulated population: u ~ U(0, 1), P(error | u) = p_error(u); risk(t) of u <= t."""
    def draw(rng, n):
        u = rng.random(n)
        return u, (rng.random(n) < p_error(u)).astype(float)

    def truth(t):
        c = float(np.clip(t, 0.0, 1.0))
        return c, (float(risk(c)) if c > 0 else 0.0)

    ts = np.linspace(0.0, 1.0, 100001)[1:]

    def oracle(target):
        ok = ts[risk(ts) <= target]
        return float(ok.max()) if ok.size else 0.0

    grid = np.append(np.arange(1, CEILING_GRID + 1) / CEILING_GRID, np.inf)
    return Population(name, draw, truth, oracle, grid=grid)


def populations():
    return [
        curve("linear", lambda u: u / 4, lambda t: t / 8),
        curve("quadratic", lambda u: 0.3 * u**2, lambda t: 0.1 * t**2),
        curve("step", lambda u: np.where(u < 0.5, 0.02, 0.3),
              lambda t: np.where(t < 0.5, 0.02, (0.01 + 0.3 * (t - 0.5)) / np.maximum(t, 1e-12))),
        digits(),
    ]


def search(u, x, alpha, every, sds, margin):
    """The fixed-sequence search of abstain._certify.ltt with another share and start rule."""
    learn = np.arange(u.size) % every == 0
    ul, xl, ut, xt = u[learn], x[learn], u[~learn], x[~learn]
    grid = np.unique(np.append(np.quantile(ul, np.arange(1, GRID_SIZE + 1) / GRID_SIZE),
                               np.inf))
    order = np.argsort(ul, kind="stable")
    sums = np.concatenate(([0.0], np.cumsum(xl[order])))
    c = np.searchsorted(ul[order], grid, side="right")
    counted = np.maximum(c - sds * np.sqrt(c), 0.0)
    scale = ut.size / ul.size
    m, k = counted * scale, np.minimum(sums[c], counted) * scale
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where((m > 0) & (k < m), special.betainc(m - k, k + 1.0, 1.0 - alpha), 1.0)
    safe = np.flatnonzero(p <= DELTA / margin)
    tail = grid[int(safe[0]) if safe.size else int(np.argmin(p)):]
    order = np.argsort(ut, kind="stable")
    tsums = np.concatenate(([0.0], np.cumsum(xt[order])))
    mt = np.searchsorted(ut[order], tail, side="right")
    passed = binomial_pvalue(tsums[mt], mt.astype(float), alpha) <= DELTA
    run = passed.size if passed.all() else int(np.argmin(passed))
    return None if run == 0 else float(tail[run - 1])


def cell(pop, n, target, draws, rng):
    rows = {v: [] for v in VARIANTS}
    ceil = {key: [np.zeros(pop.grid.size), np.zeros(pop.grid.size)] for key in (1.0, 0.9)}
    for _ in range(draws):
        u, x = pop.draw(rng, n)
        for v in VARIANTS:
            t = search(u, x, target, *v)
            if v == DEFAULT:  # the variant the library runs
                lib = ltt_search(u, x, target, DELTA, "binomial").threshold
                assert (t is None and np.isnan(lib)) or t == lib, (t, lib)
            rows[v].append(pop.truth(t) if t is not None else (0.0, 0.0))
        for share, acc in ceil.items():
            keep = int(round(share * n))
            c, b = ceiling_outcomes(pop, u[:keep], x[:keep], target)
            acc[0] += c / draws
            acc[1] += b / draws
    out = {v: (np.mean([c for c, _ in r]), np.mean([rk > target for _, rk in r]),
               np.mean([c == 0 for c, _ in r])) for v, r in rows.items()}
    for share, (c, b) in ceil.items():
        best = int(np.argmax(c))
        out[f"ceiling{'' if share == 1.0 else ' 0.9n'}"] = (c[best], b[best], np.nan)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=400)
    ap.add_argument("--out", default="benchmarks/results")
    args = ap.parse_args()
    names = [f"L={v[0]} s={v[1]} m={v[2]}" + (" (default)" if v == DEFAULT else "")
             for v in VARIANTS] + ["ceiling (not valid)", "ceiling 0.9n (not valid)"]
    lines = [
        "# Learn-then-Test start rules: mean true coverage (violation rate, share of draws "
        "that certify nothing)",
        "",
        f"`python benchmarks/bench_ltt_start.py --draws {args.draws}` (delta = {DELTA}, exact "
        "binomial p-value, 0/1 losses; the same draws for every column). `L`: one row in L "
        "learns; `s`: standard deviations taken off the projected learning count; `m`: the "
        "start's projected p-value must be at most delta / m. The ceilings are not valid "
        "procedures (oracle start chosen after seeing the draws). Standard error of a mean "
        f"coverage: at most {0.5 / np.sqrt(args.draws):.3f}; of a violation rate about "
        f"{np.sqrt(DELTA * (1 - DELTA) / args.draws):.3f}. The machine was shared.",
        "",
        "| population | n | target | oracle | " + " | ".join(names) + " |",
        "|---" * (len(names) + 4) + "|",
    ]
    rng = np.random.default_rng(2026)
    t0 = time.perf_counter()
    for pop in populations():
        for n in (500, 2000):
            for target in (0.05, 0.1, 0.2):
                res = cell(pop, n, target, args.draws, rng)
                vals = [res[v] for v in VARIANTS] + [res["ceiling"], res["ceiling 0.9n"]]
                txt = [f"{c:.3f} ({b:.3f}, {z:.2f})" if not np.isnan(z) else f"{c:.3f} ({b:.3f})"
                       for c, b, z in vals]
                lines.append(f"| {pop.name} | {n} | {target} | {pop.oracle(target):.3f} | "
                             + " | ".join(txt) + " |")
                print(lines[-1], flush=True)
    print(f"{time.perf_counter() - t0:.0f} s")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_ltt_start.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {out / 'bench_ltt_start.md'}")


if __name__ == "__main__":
    main()
