"""The pruned exact envelope (``_ood_search.envelope_branch``, what ``envelopes`` runs above
``SWEEP_BELOW`` distinct pairs) against the full sweep of every anchor state and the
brute-force envelope of tests/reference/ood_ref.py: the same area, values and first
reaches, on data with many ties, continuous data, pairs on lines through a point, whole
OOD masses above 1, dyadic and non-dyadic gains, one and two gain columns, with the
pruning forced on small data (``sweep_below=0``) and a deep refinement."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from reference import ood_ref as R

from abstain._ood_search import envelope as E
from abstain._ood_search import envelope_branch as B

#: rerun by ``make test`` under another BLAS kernel and NumPy CPU features
pytestmark = pytest.mark.cpu_exact

FULL = 10**9


def _same(a: E.Lines, b: E.Lines) -> None:
    """The two envelopes agree at every OOD mass of a grid, in area and in first reach."""
    tot = max(abs(a.total), 1.0)
    assert (a.n_ood, a.total) == (b.n_ood, b.total)
    x = np.unique(np.concatenate((np.linspace(0, a.n_ood, 61), np.arange(a.n_ood + 1),
                                  np.arange(a.n_ood) + 0.37)))
    np.testing.assert_allclose(E.value_at(a, x), E.value_at(b, x), rtol=0, atol=1e-12 * tot)
    assert E.area(a) == pytest.approx(E.area(b), abs=1e-12 * tot * max(a.n_ood, 1))
    for t in np.linspace(0, 1, 17) * a.total:
        assert E.first_reach(a, t) == pytest.approx(E.first_reach(b, t), abs=1e-9)
        # the best precision-like ratio over the points reaching t (ood_pr_curve)
        best = [max(y / (x + y + 1.0)) for x, y in (E.points_reaching(a, t),
                                                    E.points_reaching(b, t))]
        assert best[0] == pytest.approx(best[1], abs=1e-12)


def _data(rng: np.random.Generator, n: int, kind: str) -> tuple[np.ndarray, ...]:
    ood = (rng.random(n) < 0.4).astype(float)
    ood[0], ood[1] = 1.0, 0.0
    if kind == "ties":
        s = rng.integers(0, int(rng.choice([3, 5, 8])), (n, 2)).astype(float)
    elif kind == "lines":  # many pairs on a few lines through a few points
        base = rng.integers(-2, 3, (n, 2))
        step = np.array([[1, 2], [2, -1], [1, 1], [3, 1]])[rng.integers(0, 4, n)]
        s = (base + rng.integers(-4, 5, (n, 1)) * step).astype(float)
    else:
        s = rng.normal(size=(n, 2))
        s[:, 1] += ood
        if kind == "dup":  # continuous pairs, each repeated
            s = s[rng.integers(0, max(2, n // 3), n)]
            ood = (rng.random(n) < 0.4).astype(float)
            ood[0], ood[1] = 1.0, 0.0
    if rng.random() < 0.5:  # whole OOD masses above 1 (a PairTable's counts)
        ood = ood * rng.integers(1, 4, n)
    gain = (1 - np.minimum(ood, 1)) * rng.integers(1, 3, n)
    if kind == "ties" and rng.random() < 0.5:
        ccr = gain * rng.random(n)  # non-dyadic gains: the round-off margin
    else:
        ccr = gain * rng.integers(0, 3, n) / 2.0
    gains = np.stack((gain, ccr), axis=1)
    return s, ood, gains[:, : int(rng.integers(1, 3))]


@pytest.mark.parametrize("kind", ["ties", "lines", "normal", "dup"])
@pytest.mark.parametrize("seed", range(6))
def test_pruned_envelope_equals_the_full_sweep(kind, seed):
    rng = np.random.default_rng(100 * seed + len(kind))
    s, ood, gains = _data(rng, int(rng.integers(20, 160)), kind)
    full = E.envelopes(s, ood, gains, sweep_below=FULL)
    pruned = E.envelopes(s, ood, gains, sweep_below=0)
    for a, b in zip(full, pruned, strict=True):
        _same(a, b)


@pytest.mark.parametrize("seed", range(3))
def test_deep_refinement_a_coarse_start_and_the_cuts_change_nothing(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    s, ood, gains = _data(rng, 120, ("ties", "lines", "normal")[seed])
    full = E.envelopes(s, ood, gains, sweep_below=FULL)
    search = B.branch_envelopes
    for tune in ({"start": 2, "leaf_work": 0.02, "grid": 1, "cuts": 3},
                 {"start": 64, "leaf_work": 50, "cuts": 1},
                 {"start": 4, "leaf_work": 500, "cuts": 40}):
        monkeypatch.setattr(B, "branch_envelopes", functools.partial(search, **tune))
        for a, b in zip(full, E.envelopes(s, ood, gains, sweep_below=0), strict=True):
            _same(a, b)


@pytest.mark.parametrize("seed", range(8))
def test_pruned_envelope_against_the_brute_force(seed, random_sample):
    rng = np.random.default_rng(seed)
    s, is_ood, losses = random_sample(rng, n_max=10, levels=4)
    gain = np.where(is_ood, 0.0, 1 - losses)
    (got,) = E.envelopes(s, is_ood.astype(float), gain[:, None], sweep_below=0)
    segs = R.envelope_segments(s, is_ood, gain, n_dense=90)
    assert E.area(got) == pytest.approx(R.envelope_area_ref(segs), abs=1e-10)
    for x in np.linspace(0, got.n_ood, 13):
        want = R.envelope_value_ref(segs, float(x), float(gain.sum()))
        assert E.value_at(got, np.array([x]))[0] == pytest.approx(want, abs=1e-10)


def test_pairs_on_a_line_through_a_point():
    # (4, 7) OOD, (3, 6) ID, (5, 8) ID, (4, 0) OOD: exact AUROC 0.5625 in any power-of-two
    # units; repeated so that the pruning runs on the same geometry
    s = np.array([[4.0, 7.0], [3.0, 6.0], [5.0, 8.0], [4.0, 0.0]])
    ood = np.array([1.0, 0.0, 0.0, 1.0])
    for scale in (1.0, 128.0):
        (lines,) = E.envelopes(s * [scale, 1.0], ood, (1 - ood)[:, None], sweep_below=0)
        assert E.area(lines) / 4 == pytest.approx(0.5625, abs=1e-12)
    rng = np.random.default_rng(0)
    big = np.concatenate([s + rng.integers(-3, 4, 2) * 10 for _ in range(30)])
    bo = np.tile(ood, 30)
    full = E.envelopes(big, bo, (1 - bo)[:, None], sweep_below=FULL)
    pruned = E.envelopes(big, bo, (1 - bo)[:, None], sweep_below=0)
    _same(full[0], pruned[0])


def test_continuous_data_above_the_default_threshold():
    rng = np.random.default_rng(5)
    n = B.SWEEP_BELOW + 100
    s = rng.normal(size=(n, 2))
    ood = (rng.random(n) < 0.3).astype(float)
    s[:, 1] += 1.5 * ood
    gains = np.stack((1 - ood, (1 - ood) * (rng.random(n) < 0.8)), axis=1)
    full = E.envelopes(s, ood, gains, sweep_below=FULL)
    for a, b in zip(full, E.envelopes(s, ood, gains), strict=True):
        _same(a, b)
    assert math.isfinite(E.area(full[0]))


def test_swaps_exactly_at_a_cut(monkeypatch):
    # pairs whose offsets are orthogonal to the direction of a cut of a swept interval swap
    # exactly there: the swap lies in both parts, and the envelope is still the full sweep's
    arc = B.Arc.cover(4)[1]
    cut = arc.a0 + (arc.a1 - arc.a0) * np.arange(3) / 2
    w = B.unit_weights(cut)[1]
    line = np.array([[m * w[1], -m * w[0]] for m in (-2.0, -1.0, 1.0, 2.0)])
    rng = np.random.default_rng(3)
    s = np.concatenate((line, line + [1.0, 0.0], rng.integers(-2, 3, (40, 2)) * 0.5))
    ood = (rng.random(len(s)) < 0.5).astype(float)
    ood[:8] = [1, 0, 1, 0, 0, 1, 0, 1]
    gains = (1 - ood)[:, None]
    full = E.envelopes(s, ood, gains, sweep_below=FULL)
    search = B.branch_envelopes
    monkeypatch.setattr(B, "branch_envelopes", functools.partial(search, start=4,
                                                                 leaf_work=1e9, cuts=2))
    _same(full[0], E.envelopes(s, ood, gains, sweep_below=0)[0])


@pytest.mark.parametrize("form", ["scale", "line"])
def test_offsets_far_smaller_than_the_bands_are_swept_not_halved(form, call_limit):
    """A first score with few values and a second of a far smaller scale (or the pairs near
    one line): the points of one value never swap inside (0, pi), but no band bound tells
    them apart, so halving never sheds them. The stalled intervals are swept (``STALL``)
    after a few halvings instead of bounding about 2^20 intervals per starting one."""
    rng = np.random.default_rng(7)
    n = 400
    ood = (rng.random(n) < 0.4).astype(float)
    a = rng.integers(0, 6, n).astype(float)
    b = rng.normal(size=n) + ood
    s = np.stack((a, 1e-9 * b if form == "scale" else a + 1e-9 * b), axis=1)
    gains = (1 - ood)[:, None]
    calls = call_limit(B._Envelope, "narrow", 5000)
    pruned = E.envelopes(s, ood, gains, sweep_below=0)
    full = E.envelopes(s, ood, gains, sweep_below=FULL)
    _same(full[0], pruned[0])
    assert 0 < len(calls) < 1000
