"""``Sample.resampled``: the sample of a bootstrap resample, with or without the grid's kept
orders, searches and measures like the sample of the drawn rows."""

from __future__ import annotations

import numpy as np
import pytest

from abstain._ood_search.sample import Sample, tpr_fpr_constraint


def _sample(n=120, seed=0):
    rng = np.random.default_rng(seed)
    ood = rng.random(n) < 0.4
    s = np.column_stack([np.round(rng.normal(size=n) + ood, 1), np.round(rng.normal(size=n), 1)])
    w_loss = np.where(ood, 0.0, (rng.random(n) < 0.3) * 1.0)
    return s, (~ood) * 1.0, ood * 1.0, w_loss


@pytest.mark.parametrize("kept", [None, 20, 7])
def test_a_resample_searches_as_its_drawn_rows(kept) -> None:
    """Kept orders for the directions searched (20), for others (7: the drawn rows are
    sorted anew) or none: the best rule of every direction is the drawn rows' one."""
    s, w_id, w_ood, w_loss = _sample()
    base = Sample(s, w_id, w_ood, w_loss)
    if kept is not None:
        assert base.keep_orders(kept)
    rng = np.random.default_rng(3)
    for _ in range(4):
        counts = np.bincount(rng.integers(0, s.shape[0], s.shape[0]), minlength=s.shape[0])
        got = base.resampled(counts)
        i = np.repeat(np.arange(s.shape[0]), counts)
        want = Sample(s[i], w_id[i], w_ood[i], w_loss[i])
        con = tpr_fpr_constraint(want, 0.6, 0.4)
        a, b = got.run("grid", 20, con, None), want.run("grid", 20, con, None)
        assert (a is None) == (b is None)
        if a is not None:
            assert a[0].objective == b[0].objective and (a[0].I, a[0].O) == (b[0].I, b[0].O)
            assert np.array_equal(a[1], b[1]) and a[2] == b[2]


def _no_sort(monkeypatch, calls):
    """Count the sorts of grid directions (one call per batch of directions)."""
    from abstain._ood_search import sample as sample_module

    for name in ("grid_orders", "grid_orders_both"):
        real = getattr(sample_module, name, None)
        if real is not None:
            monkeypatch.setattr(sample_module, name,
                                lambda *a, _real=real, _name=name, **k:
                                calls.append(_name) or _real(*a, **k))


def _ulps(n=300, seed=4):
    """Scores a few float steps apart: the exact tie groups differ from the rounded ones
    in most directions."""
    s, w_id, w_ood, w_loss = _sample(n, seed)
    rng = np.random.default_rng(seed)
    return 1 + rng.integers(0, 40, (n, 2)) * 2.0**-52, w_id, w_ood, w_loss


@pytest.mark.filterwarnings("ignore::abstain.exceptions.InfeasibleTargetWarning")
@pytest.mark.parametrize("data", [_sample, _ulps])
def test_a_pair_resample_on_kept_orders_sorts_no_direction(monkeypatch, data) -> None:
    """The four metrics of a pair's resample (the rule's rounded tie groups and the
    envelopes' exact ones) come from the orders kept once: no direction is sorted again,
    and the values are the drawn rows' own, bit for bit. The exact tie groups differ
    from the rounded ones in 2 of the 24 directions (their orders then say so,
    ``GridOrders.base``) or in most (``_ulps``)."""
    from abstain.metrics._ood import grid_pair_metrics

    s, w_id, w_ood, w_loss = data(n=300, seed=4)
    base = Sample(s, w_id, w_ood, w_loss)
    assert base.keep_orders(24)
    calls: list[str] = []
    _no_sort(monkeypatch, calls)
    rng = np.random.default_rng(5)
    for _ in range(3):
        counts = np.bincount(rng.integers(0, 300, 300), minlength=300)
        got = grid_pair_metrics(base.resampled(counts), 0.5, 0.4, True, 24)
        assert calls == []
        i = np.repeat(np.arange(300), counts)
        want = grid_pair_metrics(Sample(s[i], w_id[i], w_ood[i], w_loss[i]), 0.5, 0.4, True, 24)
        assert {k: float(v).hex() for k, v in got.items()} == {
            k: float(v).hex() for k, v in want.items()}
        calls.clear()


@pytest.mark.parametrize("cache", [0, 1 << 21])
@pytest.mark.parametrize("d", [30, 24])
def test_pair_metrics_sort_each_direction_once(monkeypatch, cache, d) -> None:
    """With the grid kept or not (``GRID_CACHE``), the AUROC, FPR, OSCR and risk of one pair
    sort each batch of directions once, and equal the functions' own values (with 24
    directions the exact tie groups differ from the rounded ones in two)."""
    from abstain._ood_search import sample as sample_module
    from abstain.metrics import auroc, fpr_at_tpr, oscr, selective_risk_at_tpr_fpr
    from abstain.metrics._ood import grid_pair_metrics

    s, w_id, w_ood, w_loss = _sample(n=400, seed=6)
    monkeypatch.setattr(sample_module, "GRID_CACHE", cache)
    calls: list[str] = []
    _no_sort(monkeypatch, calls)
    got = grid_pair_metrics(Sample(s, w_id, w_ood, w_loss), 0.5, 0.4, True, d)
    assert calls == ["grid_orders_both"]  # d directions of 400 rows: one batch
    ood = w_ood > 0
    losses = np.where(ood, np.nan, w_loss)
    kw = {"search": "grid", "n_directions": d}
    want = {"auroc": auroc(ood, s, **kw), "fpr_at_tpr": fpr_at_tpr(ood, s, 0.5, **kw),
            "oscr": oscr(losses, ood, s, **kw),
            "risk_at_tpr_fpr": selective_risk_at_tpr_fpr(losses, ood, s, 0.5, 0.4, **kw)}
    assert {k: float(v).hex() for k, v in got.items()} == {
        k: float(v).hex() for k, v in want.items()}


@pytest.mark.parametrize("data", [_sample, _ulps])
@pytest.mark.parametrize("d", [24, 30])
def test_exact_orders_say_which_directions_differ(data, d) -> None:
    """``grid_orders_both``'s exact orders are the rounded ones (one object) where no
    direction's order or tie groups change, else they name (``base``) every direction that
    differs from the rounded orders where those are at most half; the running masses
    built from the rounded ones and a resample's orders drawn so are those of the exact
    orders themselves."""
    from abstain._ood_search.sample import _draw_each
    from abstain._ood_search.search import (
        RunningMasses,
        grid_orders,
        grid_orders_both,
        grid_weights,
    )

    s, w_id, w_ood, w_loss = data(n=300, seed=4)
    w = grid_weights(d)
    rounded, exact = grid_orders_both(s, w)
    alone = grid_orders(s, w, exact=True)
    assert np.array_equal(exact.order, alone.order)
    assert np.array_equal(exact.change, alone.change)
    differ = np.flatnonzero((alone.order != rounded.order).any(axis=1)
                            | (alone.change != rounded.change).any(axis=1))
    assert (exact is rounded) == (differ.size == 0)
    if exact is rounded:
        return
    if exact.base is None:
        assert 2 * differ.size > d
        return
    assert exact.base[0] is rounded and np.array_equal(exact.base[1], differ)
    weights = [w_id, w_ood, w_loss * 0.3]
    like = RunningMasses(exact, weights, RunningMasses(rounded, weights))
    plain = RunningMasses(exact._replace(base=None), weights)
    for i in range(3):
        assert np.array_equal(like[i], plain[i])
    rows = np.random.default_rng(1).random(300) < 0.6
    kept = rounded.grouped()
    drawn_r, drawn_e = _draw_each([kept, exact.grouped()._replace(base=(kept, exact.base[1]))],
                                  rows, {})
    want = exact.drawn(rows)
    assert drawn_e.base is not None and drawn_e.base[0] is drawn_r
    assert np.array_equal(drawn_e.order, want.order)
    assert np.array_equal(drawn_e.change, want.change)
