"""Exact searches that do not depend on the last bit (the CPU-independence tests).

Every transcendental the searches might call (NumPy's and the C library's ``arctan2``,
``cos``, ``sin``, ``tan``, ``hypot``), the library's unit vectors of angles and the rounded
projections the searches sort and bound with are perturbed by a random ``+-k`` ulps
(tests/perturb.py), as another CPU's kernels would round them. The exact fits, the exact
envelopes and the attainable-risk helper must return the same result bit for bit: the same
optimum (objective, masses, anchor, state), the same weight vector, the same envelope. The
data have many ties and pairs on lines through other pairs (integer scores, rounded
decimals, a second score that underflows), where two rounded angles of one swap used to
split it into two events. ``make test`` reruns this module under another BLAS kernel and
with NumPy's optional CPU features disabled (marker ``cpu_exact``)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from perturb import last_bits
from reference import ood_ref as R
from test_ood_branch import _data, _fan, _problem

from abstain._ood_search import envelope as E
from abstain._ood_search.branch import branch_search
from abstain._ood_search.sample import Sample
from abstain._ood_search.search import exact_search, unit_weights
from abstain.metrics import auroc, fpr_at_tpr, oscr
from abstain.models import BoundedTPRFPR, CostBasedOOD

pytestmark = pytest.mark.cpu_exact

KS = (1, 2, 4)


def _scores(rng: np.random.Generator, n: int, kind: str) -> np.ndarray:
    if kind == "integers":
        return rng.integers(0, int(rng.choice([3, 5, 9])), (n, 2)).astype(float)
    if kind == "lines":  # many pairs on a few lines through a few points
        base = rng.integers(-2, 3, (n, 2))
        step = np.array([[1, 2], [2, -1], [1, 1], [3, 1]])[rng.integers(0, 4, n)]
        return (base + rng.integers(-4, 5, (n, 1)) * step).astype(float)
    if kind == "decimals":  # rounded probabilities: collinear in decimal, not in binary
        return np.round(rng.random((n, 2)), 1)
    s = rng.random((n, 2))  # a second score that underflows towards 0
    s[: n // 3, 1] = 10.0 ** rng.uniform(-40, -9, n // 3)
    return s


def _same_state(a, b) -> None:
    assert (a is None) == (b is None)
    if a is None:
        return
    assert a.best == b.best and a.critical == b.critical
    assert np.array_equal(a.weights, b.weights)
    assert a.angle == pytest.approx(b.angle, rel=1e-15, abs=1e-15)  # reported via atan2


KINDS = ("integers", "lines", "decimals", "underflow")


def _draw(seed: int, lo: int, hi: int, kind: str):
    """A generator, a size in ``[lo, hi)``, pairs of ``kind`` and OOD marks (both classes)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(lo, hi))
    s = _scores(rng, n, kind)
    ood = rng.random(n) < 0.4
    ood[0], ood[1] = True, False
    return rng, n, s, ood


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", range(6))
def test_exact_and_branch_searches_ignore_the_last_bits(kind, seed, monkeypatch):
    rng, n, s, ood = _draw(700 + seed, 20, 90, kind)
    ls = np.where(ood, 0.0, (rng.random(n) < 0.3) * rng.choice([1.0, 0.5], n))
    sample = Sample.of(s, ood, ls)
    pts, x = sample.pairs()
    con, slopes = _problem(rng, sample, seed % 3)
    args = (pts, x, con, slopes, sample.n_id, sample.n_ood)
    full = exact_search(*args)
    pruned = branch_search(*args, sweep_below=0, leaf_work=float(rng.choice([0.5, 30.0])))
    last_bits(monkeypatch, k=KS[seed % 3], seed=seed)
    _same_state(exact_search(*args), full)
    _same_state(branch_search(*args, sweep_below=0,
                              leaf_work=float(rng.choice([0.5, 30.0]))), pruned)
    assert full is None or pruned.best.objective == pytest.approx(full.best.objective,
                                                                  rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("seed", [65, 2, 21, 3, 7])
def test_the_cases_that_failed_on_avx512_hold_under_perturbation(seed, monkeypatch):
    """The seeds of test_ood_branch that failed on an AVX-512 CPU: the branch and bound
    equals the full sweep with every last bit perturbed."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 90))
    s, ood, ls, w = _data(rng, n, int(rng.choice([0, 2, 3, 5, 12])), weighted=seed % 4 == 3)
    rng2 = np.random.default_rng(3000 + seed)
    s2, ood2, ls2, w2 = _fan(rng2, int(rng2.integers(40, 160)), weighted=seed % 2 == 1)
    for sc, oo, ll, ww, kind in ((s, ood, ls, w, seed % 3), (s2, ood2, ls2, w2, seed % 3)):
        sample = Sample.of(sc, oo, ll, ww)
        pts, x = sample.pairs()
        con, slopes = _problem(np.random.default_rng(seed), sample, kind)
        args = (pts, x, con, slopes, sample.n_id, sample.n_ood)
        ref = exact_search(*args)
        with monkeypatch.context() as mp:
            last_bits(mp, k=2, seed=seed)
            _same_state(exact_search(*args), ref)
            got = branch_search(*args, sweep_below=0, leaf_work=3.0, start=5)
        assert (got is None) == (ref is None)
        if ref is not None:
            assert got.best.at == ref.best.at and got.critical == ref.critical
            assert got.best.objective == pytest.approx(ref.best.objective, rel=1e-12)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", range(3))
def test_envelopes_and_risk_at_fpr_ignore_the_last_bits(kind, seed, monkeypatch):
    rng, n, s, ood = _draw(800 + seed, 30, 120, kind)
    ood = ood.astype(float)
    gains = np.stack(((1 - ood) * rng.integers(1, 3, n), (1 - ood) * rng.random(n)), axis=1)
    loss = (1 - ood) * (rng.random(n) < 0.3)
    targets = np.array([0.2, 0.5, 0.9]) * float((1 - ood).sum())
    before = [E.envelopes(s, ood, gains, sweep_below=b) for b in (0, 10**9)]
    risk = E.least_risk_at_fpr(s, 1 - ood, ood, loss, 0.3 * ood.sum(), targets)
    last_bits(monkeypatch, k=KS[seed], seed=seed)
    for b, ref in zip((0, 10**9), before, strict=True):
        for c, (got, want) in enumerate(zip(E.envelopes(s, ood, gains, sweep_below=b), ref,
                                            strict=True)):
            assert got.n_ood == want.n_ood and got.total == want.total
            if b:  # the full sweep: the same pieces, bit for bit
                for field in ("k", "a", "b"):
                    assert np.array_equal(getattr(got, field), getattr(want, field))
            # the pruned sweep keeps pieces by its bounds, whose rounding the perturbation
            # moves: the envelope itself is the same, bit for bit where every sum of gains
            # is exact (whole gains), else up to the order of the sums (a relative 1e-13)
            at = np.arange(2 * got.n_ood + 1) / 2.0
            tol = 0.0 if np.all(gains[:, c] == np.rint(gains[:, c])) else 1e-13 * got.total
            np.testing.assert_allclose(E.value_at(got, at), E.value_at(want, at), rtol=0,
                                       atol=tol)
            assert E.area(got) == pytest.approx(E.area(want), rel=1e-13, abs=1e-13)
    assert np.array_equal(E.least_risk_at_fpr(s, 1 - ood, ood, loss, 0.3 * ood.sum(), targets),
                          risk)


def test_exact_auroc_on_integer_scores_is_the_brute_force_under_perturbation(monkeypatch):
    """The reported failure: integer-valued scores whose exact two-score AUROC moved from
    0.704789 to 0.706298 when ``arctan2`` moved by 2 ulps."""
    rng = np.random.default_rng(11)
    n = 160
    S = rng.integers(0, 12, (n, 2)).astype(float)
    is_ood = rng.random(n) < 0.4
    S[is_ood] += rng.integers(0, 3, (int(is_ood.sum()), 2))
    loss = (~is_ood) * (rng.random(n) < 0.3).astype(float)
    ref = (auroc(is_ood, S, search="exact"), fpr_at_tpr(is_ood, S, 0.8, search="exact"),
           oscr(loss, is_ood, S, search="exact"))
    for k in KS:
        with monkeypatch.context() as mp:
            last_bits(mp, k=k, seed=k)
            got = (auroc(is_ood, S, search="exact"), fpr_at_tpr(is_ood, S, 0.8, search="exact"),
                   oscr(loss, is_ood, S, search="exact"))
        assert got == ref
    # the envelope's AUROC is the best over every direction of the brute force (small n)
    small = slice(0, 40)
    segs = R.envelope_segments(S[small], is_ood[small], (~is_ood[small]).astype(float))
    n_id, n_ood = int((~is_ood[small]).sum()), int(is_ood[small].sum())
    want = R.envelope_area_ref(segs) / (n_id * n_ood)
    assert auroc(is_ood[small], S[small], search="exact") == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_exact_fits_return_the_same_rule_under_perturbation(seed, monkeypatch):
    """The reported failure: ``BoundedTPRFPR(search="exact")`` returned a worse rule in 3 of
    8 seeds with ``arctan2`` moved by 2 ulps. Every fitted attribute is now the same."""
    rng = np.random.default_rng(seed)
    n = 300
    S = rng.integers(0, 15, (n, 2)).astype(float)
    is_ood = rng.random(n) < 0.3
    S[is_ood, 1] += rng.integers(0, 6, int(is_ood.sum()))
    loss = (~is_ood) * (rng.random(n) < 0.25 + 0.02 * S[:, 0]).astype(float)
    models = (BoundedTPRFPR(0.3, 0.3, search="exact"), CostBasedOOD(0.2, 1.0, 0.0,
                                                                     search="exact"))

    def fitted(m):
        f = json.loads(m.fit(S, is_ood, loss).to_json())["fitted"]
        assert f["feasible_"]
        # angle_ is reported only (the C library's atan2 of weights_, which the rule uses)
        return {k: v for k, v in f.items() if k != "angle_"}

    ref = [fitted(m) for m in models]
    last_bits(monkeypatch, k=2, seed=seed)
    assert [fitted(m) for m in models] == ref


def test_the_perturbation_reaches_the_functions_it_names(monkeypatch):
    """The fixture does perturb: a direction's unit vector and NumPy's arctan2 move."""
    a = np.linspace(0.1, 3.0, 200)
    w, t = unit_weights(a), np.arctan2(a, 1.0)
    last_bits(monkeypatch, k=4, seed=0)
    assert not np.array_equal(unit_weights(a), w)
    assert not np.array_equal(np.arctan2(a, 1.0), t)


def test_the_rerun_runs_under_the_kernels_it_names():
    """``make test`` reruns this module with ``OPENBLAS_CORETYPE`` and
    ``NPY_DISABLE_CPU_FEATURES`` set: they take effect (else the rerun proves nothing)."""
    import os

    core = os.environ.get("OPENBLAS_CORETYPE")
    disabled = os.environ.get("NPY_DISABLE_CPU_FEATURES", "").split()
    if not core and not disabled:
        pytest.skip("not the rerun of make test (no OPENBLAS_CORETYPE or "
                    "NPY_DISABLE_CPU_FEATURES set)")
    if disabled:
        from numpy._core._multiarray_umath import __cpu_features__

        assert not any(__cpu_features__.get(f) for f in disabled)
    if core:
        threadpoolctl = pytest.importorskip("threadpoolctl")
        arch = [i.get("architecture") for i in threadpoolctl.threadpool_info()
                if i.get("internal_api") == "openblas"]
        assert arch and all(a.lower() == core.lower() for a in arch)


def _line_pairs(rng: np.random.Generator, n: int) -> np.ndarray:
    """Integer pairs over wide ranges, many on one line through another, on both sides."""
    s = np.stack((rng.integers(0, 6, n), rng.integers(-15, 15, n)), 1).astype(float)
    k = n // 2
    s[k:] = s[0] + rng.integers(-3, 4, (n - k, 1)) * (s[1] - s[0])
    return s


@pytest.mark.parametrize("seed", range(24))
def test_the_brute_force_optimum_under_perturbation(seed, monkeypatch):
    """The exhaustive search of tests/reference/ood_ref.py (every direction where two pairs
    tie, one in every gap, every threshold), computed unperturbed; the full sweep and the
    branch and bound reach its optimum with every last bit perturbed."""
    rng = np.random.default_rng(1200 + seed)
    n = int(rng.integers(4, 12))
    s = _line_pairs(rng, n) if seed % 2 else rng.integers(0, 4, (n, 2)).astype(float)
    ood = rng.random(n) < 0.4
    ood[0], ood[1] = True, False
    ls = np.where(ood, 0.0, rng.integers(0, 3, n) / 2.0)
    sample = Sample.of(s, ood, ls)
    pts, x = sample.pairs()
    con, slopes = _problem(rng, sample, seed % 3)
    if con is None:
        ref = R.best_linear_2d(s, ood, ls, slopes)
    else:
        found = R.best_ratio_2d(s, ood, ls, con.a, con.b, con.k)
        ref = None if found is None else found[0]
    last_bits(monkeypatch, k=KS[seed % 3], seed=seed)
    args = (pts, x, con, slopes, sample.n_id, sample.n_ood)
    for got in (exact_search(*args), branch_search(*args, sweep_below=0, leaf_work=1.0)):
        assert (got is None) == (ref is None)
        if ref is not None:
            assert got.best.objective == pytest.approx(ref, abs=1e-12)


@pytest.mark.parametrize("seed", range(12))
def test_the_brute_force_envelope_under_perturbation(seed, monkeypatch):
    """AUROC and OSCR of the envelope over every direction (brute force, unperturbed) equal
    the exact metrics and the pruned envelope's area with every last bit perturbed."""
    rng = np.random.default_rng(1300 + seed)
    n = int(rng.integers(4, 12))
    s = _line_pairs(rng, n) if seed % 2 else np.round(rng.random((n, 2)) * 3, 0) / 4
    is_ood = rng.random(n) < 0.4
    is_ood[0], is_ood[1] = True, False
    losses = np.where(is_ood, 0.0, rng.integers(0, 3, n) / 2.0)
    n_id, n_ood = float(np.sum(~is_ood)), float(np.sum(is_ood))
    gains = (np.ones(n), 1 - losses)
    want = [R.envelope_area_ref(R.envelope_segments(s, is_ood, g, n_dense=90)) / (n_id * n_ood)
            for g in gains]
    last_bits(monkeypatch, k=KS[seed % 3], seed=seed)
    got = [auroc(is_ood, s, search="exact"), oscr(losses, is_ood, s, search="exact")]
    assert got == pytest.approx(want, abs=1e-12)
    for g, w in zip(gains, want, strict=True):
        lines = E.envelopes(s, is_ood.astype(float), (g * ~is_ood)[:, None], sweep_below=0)[0]
        assert E.area(lines) / (n_id * n_ood) == pytest.approx(w, abs=1e-12)
