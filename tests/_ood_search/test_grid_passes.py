"""The passes of the grid search over each direction's order: running sums of whole-number
weights as integers (bit for bit the float sums), the tie groups' starts found from the
candidates alone, and the knots without ties, each against the plain computation."""

from __future__ import annotations

import numpy as np
import pytest

from abstain._ood_search import grid, search
from abstain._ood_search import sample as sample_module
from abstain._ood_search.sample import Sample
from abstain._ood_search.search import (
    GridOrders,
    compact_weights,
    grid_orders,
    grid_weights,
    running_rows,
)


def _orders(rng: np.random.Generator, d: int, n: int) -> GridOrders:
    s = np.round(rng.normal(size=(n, 2)), 1)
    return grid_orders(s, grid_weights(d))


def _float_sums(orders: GridOrders, v: np.ndarray) -> np.ndarray:
    d, n = orders.order.shape
    c = np.zeros((d, n + 1))
    np.cumsum(np.take(v, orders.order), axis=1, out=c[:, 1:])
    return c


@pytest.mark.parametrize(("kind", "dtype"), [
    ("counts", np.int8), ("hundreds", np.int16), ("millions", np.int32),
    ("billions", np.int64), ("halves", np.float64), ("huge", np.float64),
    ("continuous", np.float64)])
def test_running_rows_equal_the_float_sums_bit_for_bit(kind, dtype) -> None:
    """Whole-number weights are gathered as the smallest integer type that holds them and
    summed in float64: bit for bit the float sums."""
    rng = np.random.default_rng(1)
    orders = _orders(rng, 12, 300)
    v = {"counts": rng.integers(0, 5, 300) * 1.0,
         "hundreds": rng.integers(0, 300, 300) * 1.0,
         "millions": rng.integers(0, 3_000_000, 300) * 1.0,
         "billions": rng.integers(0, 3 * 10**9, 300) * 1.0,
         "halves": rng.integers(0, 5, 300) / 2,
         "huge": np.full(300, 2.0**46) + rng.integers(0, 3, 300),  # sums past 2**52: floats
         "continuous": rng.random(300)}[kind]
    compact = compact_weights(v)
    assert compact.dtype == dtype
    for w in (v, compact):
        got = running_rows(orders, w)
        assert got.dtype == np.float64 and np.array_equal(got, _float_sums(orders, v))


def test_running_masses_are_summed_when_read(monkeypatch) -> None:
    """A metric that reads the ID and OOD masses of the grid does not sum the losses."""
    rng = np.random.default_rng(5)
    s = rng.normal(size=(400, 2))
    ood = rng.random(400) < 0.4
    summed = []
    real = search.running_rows
    monkeypatch.setattr(search, "running_rows", lambda o, v: summed.append(v) or real(o, v))
    sample = Sample(s, (~ood) * 1.0, ood * 1.0, np.zeros(400))
    for _, cum in sample.grid(8):
        cum[1]
        cum[0]
        cum[1]
    assert len(summed) == 2
    assert np.array_equal(summed[0], ood) and np.array_equal(summed[1], ~ood)


def test_group_starts_from_the_candidates_equal_the_running_maximum() -> None:
    rng = np.random.default_rng(2)
    for _ in range(2000):
        d, n = int(rng.integers(1, 6)), int(rng.integers(1, 120))
        tie = rng.choice([0.0, 0.3, 0.9, 0.99, 1.0])  # 0.99 and 1: groups past the walk
        change = rng.random((d, max(n - 1, 0))) > tie
        is_start = np.concatenate((np.ones((d, 1), bool), change), axis=1)
        want = np.maximum.accumulate(np.where(is_start, np.arange(n), 0), axis=1)
        is_end = np.concatenate((change, np.ones((d, 1), bool)), axis=1)
        cut = rng.integers(0, n + 1, d)  # each row's group ends from a cut on
        flat = np.flatnonzero(is_end & (np.arange(n)[None, :] >= cut[:, None]))
        rix, pos = np.divmod(flat, n)
        assert np.array_equal(search._group_starts(change, rix, pos), want.reshape(-1)[flat])


@pytest.mark.parametrize("ties", [False, True])
def test_knots_with_and_without_ties(ties) -> None:
    rng = np.random.default_rng(3)
    n = 200
    s = rng.normal(size=(n, 2))
    if ties:
        s = np.round(s, 1)
    ood = rng.random(n) < 0.3
    sample = Sample(s, (~ood) * 1.0, ood * 1.0, np.where(ood, 0.0, rng.random(n)))
    (starts, sizes, (o, i, ccr)), = grid._grid_knots(sample, 16, ("ood", "id", "ccr"))
    (orders, cum), = sample.grid(16, exact=True)  # the knots of the metrics: exact ties
    assert bool(orders.change.all()) is not ties
    for r in range(16):  # each direction's knots: its tie groups' ends, leading 0 included
        at = np.flatnonzero(np.concatenate(([True], orders.change[r], [True])))
        k = slice(starts[r], starts[r] + sizes[r])
        assert np.array_equal(o[k], cum[1][r, at]) and np.array_equal(i[k], cum[0][r, at])
        assert np.array_equal(ccr[k], cum[0][r, at] - cum[2][r, at])


def _interp_all(ood, ys, starts, sizes, b):
    """Every direction interpolated at every query (no block skipped), then the largest."""
    nudged = b * (1 + 1e-12)
    out = [np.full(b.size, -np.inf) for _ in ys]
    for st, sz in zip(starts, sizes, strict=True):
        o = ood[st : st + sz]
        j = np.searchsorted(o, nudged, side="right") - 1  # the last knot at or below
        nxt = np.minimum(j + 1, sz - 1)
        do = o[nxt] - o[j]
        with np.errstate(divide="ignore", invalid="ignore"):
            f = (b - o[j]) / do
        f[do == 0] = 0.0
        f = np.maximum(f, 0.0)
        for k, y in enumerate(ys):
            yr = y[st : st + sz]
            out[k] = np.maximum(out[k], (yr[nxt] - yr[j]) * f + yr[j])
    return out


@pytest.mark.parametrize("whole", [True, False])
def test_the_blocks_skipped_never_hold_the_largest_value(whole) -> None:
    rng = np.random.default_rng(4)
    for _ in range(60):
        d, q = int(rng.integers(1, 70)), int(rng.choice([1, 2, 17, 33, 101, 2001]))
        parts = []
        # whole masses: mostly fewer whole numbers than knots (their ranks from a table)
        scale = float(rng.choice([1, 1, 1000]))
        for _ in range(d):  # nondecreasing knots from 0, with runs of tied OOD masses
            m = int(rng.integers(1, 40))
            step = (rng.integers(0, 3, m) * scale if whole
                    else rng.random(m) * (rng.random(m) < 0.7))
            parts.append((np.concatenate(([0.0], np.cumsum(step))),
                          np.concatenate(([0.0], np.cumsum(rng.integers(0, 4, m) * 1.0))),
                          np.concatenate(([0.0], np.cumsum(rng.random(m))))))
        sizes = np.array([p[0].size for p in parts])
        starts = np.cumsum(sizes) - sizes
        ood, *ys = (np.concatenate([p[k] for p in parts]) for k in range(3))
        b = np.linspace(0.0, 1.0, q) * max(float(ood.max()), 1.0)
        # whole knots: each query's knot read from a table by whole number (masses below
        # the number of queries), or their ranks among the queries from a table (fewer
        # whole numbers than knots), or searched (more): the same values
        got = grid._interp_max(ood, ys, starts, sizes, b, whole)
        for g, w in zip(got, _interp_all(ood, ys, starts, sizes, b), strict=True):
            assert np.array_equal(g, w)


def test_knots_are_made_batch_by_batch(monkeypatch) -> None:
    """The metrics' grid knots were collected for every batch of directions before the
    first was read: all 360 directions at once, about 6 kB per distinct pair (1.3 GB at
    2e5 pairs). Each batch is now made when its caller reaches it."""
    rng = np.random.default_rng(0)
    n = 400
    s = rng.normal(size=(n, 2))
    ood = rng.random(n) < 0.3
    sample = Sample(s, (~ood) * 1.0, ood * 1.0, np.zeros(n))
    monkeypatch.setattr(sample_module, "GRID_CACHE", 0)  # nothing kept
    monkeypatch.setattr(search, "_BATCH_ELEMS", 4 * n)  # 4 directions a batch
    made = []
    real = sample.grid

    def counted(*args, **kwargs):
        for item in real(*args, **kwargs):
            made.append(item)
            yield item

    monkeypatch.setattr(sample, "grid", counted)
    batches = grid._grid_knots(sample, 16, ("ood", "id"))
    first = next(batches)
    assert len(made) == 1 and first[0].size == 4
    assert len(list(batches)) == 3 and len(made) == 4



@pytest.mark.parametrize("seed", range(8))
def test_a_resamples_envelopes_read_the_knot_blocks_ends_alone(monkeypatch, seed) -> None:
    """A resample on kept orders reads only the ends of its knot blocks (runs of groups that
    move only the ID and loss masses, or only the OOD mass): the same envelopes and least
    FPR, bit for bit, as every tie group's knots, from fewer knots. The rows hold ties,
    groups of both kinds, rows of no weight and rows with both ID and OOD weight (a
    table's)."""
    rng = np.random.default_rng(seed)
    n, d = 150, 24
    s = rng.integers(0, 12, size=(n, 2)).astype(float)
    kind = rng.choice(4, n, p=[0.45, 0.35, 0.1, 0.1])  # ID, OOD, both, neither
    w_id = np.where(kind % 2 == 0, rng.integers(1, 4, n), 0).astype(float)
    w_ood = np.where((kind == 1) | (kind == 2), rng.integers(1, 4, n), 0).astype(float)
    w_id[kind == 3] = 0.0
    w_loss = w_id * (rng.random(n) if seed % 2 else rng.integers(0, 2, n))
    sample = Sample(s, w_id, w_ood, w_loss, loss_above_one=False, grouped=True)
    assert sample.keep_orders(d)
    points = np.linspace(0.0, 1.0, 101)
    real = grid._grid_knots

    def every_knot(sample, n_directions, names, batches=None, blocks=False):
        return real(sample, n_directions, names, batches, False)

    for _ in range(6):
        counts = rng.integers(0, 3, n)
        counts[np.argmax(w_id)] = counts[np.argmax(w_ood)] = 1
        res = sample.resampled(counts)
        got = grid.envelopes_and_least_fpr(res, ("id", "ccr"), points, d, 0.8)
        with monkeypatch.context() as m:
            m.setattr(grid, "_grid_knots", every_knot)
            want = grid.envelopes_and_least_fpr(res, ("id", "ccr"), points, d, 0.8)
        for g, w in zip(got[0], want[0], strict=True):
            assert np.array_equal(g, w)
        assert got[1] == want[1]
        fewer, every = (sum(int(sz.sum()) for _, sz, _ in real(res, d, ("ood",), None, b))
                        for b in (True, False))
        assert fewer < every
