"""abstain.metrics.metric_replicates: every metric of one column on many resamples at once
equals the metric of each resample's own score table (the tables built from the resampled
rows), on random rows with many ties, 0/1, few-valued and continuous losses."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from abstain import metrics as m
from abstain.exceptions import InfeasibleTargetWarning
from abstain.metrics import METRICS, metric_replicates, resample_counts
from abstain.tables import TableResampler

#: Metrics whose values are counts (or ratios of counts) with 0/1 losses: equal bit for bit.
EXACT = {"auroc", "fpr_at_tpr", "selective_risk_at_coverage", "selective_risk_at_tpr_fpr"}


def _case(seed: int):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 260))
    ood = rng.random(n) < rng.uniform(0.1, 0.6)
    ood[:2] = [False, True]
    kind = seed % 3
    losses = ((rng.random(n) < 0.3) * 1.0 if kind == 0 else
              rng.integers(0, 3, n) / 2.0 if kind == 1 else rng.random(n))
    digits = int(rng.integers(0, 4))
    u = np.round(rng.normal(size=n) + ood, digits) if seed % 5 else rng.normal(size=n)
    # stratified resamples: every one keeps the ID and the OOD rows' numbers
    parts = [np.flatnonzero(~ood), np.flatnonzero(ood)]
    idx = np.concatenate([p[rng.integers(0, p.size, (12, p.size))] for p in parts], axis=1)
    return kind, np.where(ood, np.nan, losses), ood, u, resample_counts(idx, n)


def _options(spec, seed: int) -> dict[str, float]:
    values = {"coverage": (0.05, 0.5, 0.8, 1.0)[seed % 4], "tpr": (0.5, 0.75, 0.9, 1.0)[seed % 4],
              "fpr": (0.0, 0.1, 0.3, 1.0)[(seed // 4) % 4]}
    return {p: values[p] for p in spec.params}


@pytest.mark.parametrize("seed", range(40))
def test_each_metric_is_that_of_each_resamples_table(seed: int) -> None:
    kind, losses, ood, u, counts = _case(seed)
    r = TableResampler(u, losses, ood)
    specs = [s for s in METRICS.values() if s.table]
    chosen = [(s, _options(s, seed)) for s in specs]
    got = metric_replicates(r, counts, chosen)
    assert got.shape == (counts.shape[0], len(chosen))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleTargetWarning)
        for j, (spec, options) in enumerate(chosen):
            want = np.array([spec.function(r.table(c, marked=spec.kind == "ood"), **options)
                             for c in counts])
            if spec.name in EXACT and kind == 0:
                np.testing.assert_array_equal(got[:, j], want, err_msg=spec.name)
            # E-AuRC is a difference of two areas: its error is that of the areas
            scale = np.abs(want) + (1.0 if spec.name == "e_aurc" else 0.0)
            assert np.all((np.abs(got[:, j] - want) <= 1e-12 * scale)
                          | (np.isnan(got[:, j]) & np.isnan(want))), spec.name


@pytest.mark.parametrize("kind", [np.float32, np.float16,
                                  lambda v: np.array(v, dtype=np.float32)])
def test_float32_options_are_taken_as_the_metrics_take_them(kind) -> None:
    """A NumPy float32 coverage, TPR or FPR: the metric turns it into a float, so the
    batched replicates must too (their counts were float32: 0.6666666666666666 where the
    resample's table gives 0.6666666401757145)."""
    _, losses, ood, u, counts = _case(0)
    r = TableResampler(u, losses, ood)
    chosen = [(METRICS["selective_risk_at_coverage"], {"coverage": kind(0.15)}),
              (METRICS["selective_risk_at_tpr_fpr"], {"tpr": kind(0.175), "fpr": kind(0.1)})]
    got = metric_replicates(r, counts, chosen)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleTargetWarning)
        for j, (spec, options) in enumerate(chosen):
            want = [spec.function(r.table(c, marked=spec.kind == "ood"), **options)
                    for c in counts]
            np.testing.assert_array_equal(got[:, j], want, err_msg=spec.name)


def test_the_totals_hold_each_resamples_table() -> None:
    _, losses, ood, u, counts = _case(7)
    r = TableResampler(u, losses, ood)
    t = r.totals(counts)
    for row, c in enumerate(counts):
        table = r.table(c)
        keep = (t.id_rows[row] + t.ood_rows[row]) > 0
        assert np.array_equal(t.values[keep], table.values)
        assert np.array_equal(t.ood_rows[row][keep], table.ood_counts)
        assert np.array_equal(t.loss_sums[row][keep], table.loss_sums)  # the same sums
        drawn = t.loss_counts[row] > 0
        assert np.array_equal(t.loss_values[drawn], table.loss_values)


def test_a_registered_metric_is_computed_on_each_table() -> None:
    def tenth_aurc(losses, uncertainty=None):
        return m.aurc(losses, uncertainty) / 10

    spec = m.MetricSpec(tenth_aurc, "selective", "tenth of AuRC")
    _, losses, ood, u, counts = _case(3)
    r = TableResampler(u, losses, ood)
    got = metric_replicates(r, counts, [(spec, {}), (METRICS["aurc"], {})])
    np.testing.assert_allclose(got[:, 0], got[:, 1] / 10, rtol=1e-12)


def test_an_infeasible_target_is_nan_without_a_warning() -> None:
    u = np.array([0.1, 0.2, 0.3, 0.4])
    ood = np.array([False, True, False, True])
    r = TableResampler(u, np.array([0.0, np.nan, 1.0, np.nan]), ood)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = metric_replicates(r, np.array([[1, 1, 1, 1]]),
                                [(METRICS["selective_risk_at_tpr_fpr"], {"tpr": 1.0, "fpr": 0.0})])
    assert np.isnan(got[0, 0])


def test_bad_input_is_refused() -> None:
    r = TableResampler([0.1, 0.2], [0.0, 1.0])
    with pytest.raises(ValueError, match="OOD metrics take a TableResampler built with is_ood"):
        metric_replicates(r, np.ones((1, 2), int), [(METRICS["auroc"], {})])
    with pytest.raises(ValueError, match=r"counts must be whole numbers of shape \(m, 2\)"):
        r.totals(np.ones(2, int))
    with pytest.raises(ValueError, match=r"counts must be whole numbers of shape \(m, 2\)"):
        r.totals(np.ones((1, 2)))
    marked = TableResampler([0.1, 0.2, 0.3], [0.0, 1.0, np.nan], [False, False, True])
    with pytest.raises(ValueError, match=r"every resample must draw both ID and OOD rows for "
                       r"these metrics; resample 1 \(row 1 of counts\) does not"):
        metric_replicates(marked, np.array([[1, 1, 1], [2, 1, 0]]), [(METRICS["auroc"], {})])
    with pytest.raises(ValueError, match="every resample must draw an ID row"):
        metric_replicates(marked, np.array([[0, 0, 3]]), [(METRICS["aurc"], {})])
    with pytest.raises(ValueError, match=r"rows must be a 2-D array of row indices in \[0, 3\)"):
        resample_counts(np.array([[0, 3]]), 3)
    with pytest.raises(ValueError, match="rows must be a 2-D array"):
        resample_counts(np.array([0, 1]), 3)
    for dtype in (np.int8, np.uint16, np.uint32, np.uint64):  # uint64 + int64 is float64
        np.testing.assert_array_equal(resample_counts(np.array([[0, 0, 2], [1, 2, 2]], dtype), 3),
                                      [[2, 0, 1], [0, 1, 2]])
    # a registered curve: NumPy's "setting an array element with a sequence"
    with pytest.raises(ValueError, match=r"^metrics must each give one number to resample; "
                                         r"'risk_coverage_curve' gives a curve\.$"):
        metric_replicates(r, np.ones((1, 2), int), [(METRICS["risk_coverage_curve"], {})])


def test_resamples_with_other_id_and_ood_totals_each_get_their_own_constraint() -> None:
    """Unstratified resamples: the risk at TPR/FPR of each is searched with its own ID and
    OOD totals."""
    _, losses, ood, u, _ = _case(11)
    rng = np.random.default_rng(3)
    counts = resample_counts(rng.integers(0, u.size, (10, u.size)), u.size)
    counts = counts[(counts[:, ood].sum(axis=1) > 0) & (counts[:, ~ood].sum(axis=1) > 0)]
    assert len({int(c[ood].sum()) for c in counts}) > 1
    r = TableResampler(u, losses, ood)
    spec = METRICS["selective_risk_at_tpr_fpr"]
    got = metric_replicates(r, counts, [(spec, {"tpr": 0.7, "fpr": 0.4})])[:, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleTargetWarning)
        want = [spec.function(r.table(c), tpr=0.7, fpr=0.4) for c in counts]
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("top", [1e300, 1e305, 1e307])
def test_losses_near_the_float_maximum_give_the_metrics_of_the_drawn_rows(top: float) -> None:
    # the totals were summed unscaled: inf or NaN where each resample's metric is finite
    rng = np.random.default_rng(0)
    n = 100
    u = np.repeat(np.arange(25.0), 4)
    losses = (rng.random(n) < 0.5) * top
    rows = rng.integers(0, n, (3, n))
    specs = [(METRICS["aurc"], {}), (METRICS["augrc"], {}), (METRICS["e_aurc"], {}),
             (METRICS["selective_risk_at_coverage"], {"coverage": 0.5})]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = metric_replicates(TableResampler(u, losses), resample_counts(rows, n), specs)
    want = [[spec.function(losses[r], u[r], **opts) for spec, opts in specs] for r in rows]
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize(("name", "options", "message"), [
    ("aurc", {"ties": "index"}, "ties='index' needs the row order"),
    ("e_aurc", {"ties": "index"}, "ties='index' needs the row order"),
    ("augrc", {"ties": "bogus"}, "ties must be one of"),
    ("selective_risk_at_coverage", {"coverage": 1.5}, r"coverage must be in \(0, 1\]"),
    ("selective_risk_at_coverage", {"coverage": 0.0}, r"coverage must be in \(0, 1\]"),
    ("selective_risk_at_coverage", {"coverage": -0.5}, r"coverage must be in \(0, 1\]"),
])
def test_the_batched_metrics_check_their_options_as_the_metrics_do(name, options, message):
    # the batched formulas dropped ties and never read the coverage's range: a number came
    # back (the ties="mean" value, a risk at coverage 1.5) where the metric refuses
    from abstain.metrics import METRICS

    r = TableResampler([0.5, 0.5, 0.5, 0.5], [1.0, 1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match=message):
        metric_replicates(r, np.ones((2, 4), dtype=int), [(METRICS[name], options)])


def test_e_aurc_of_an_oracle_order_is_zero_on_the_rows_and_the_resamples():
    # the score's area is summed row by row, the oracle's by tie groups: equal in exact
    # arithmetic, not always in floats (614 of 2,000 such scores had 1e-17)
    from abstain.metrics import e_aurc

    rng = np.random.default_rng(4)
    for _ in range(200):
        n = int(rng.integers(2, 40))
        losses = np.sort((rng.random(n) < 0.4) * 1.0)
        u = np.sort(rng.random(n))
        assert e_aurc(losses, u) == 0.0 and e_aurc(losses, u, ties="index") == 0.0
        got = metric_replicates(TableResampler(u, losses), np.ones((1, n), dtype=int),
                                [(METRICS["e_aurc"], {})])
        assert got[0, 0] == 0.0
