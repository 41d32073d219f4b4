"""A pair's bootstrap resample on its grid's kept orders equals the grid metrics of the drawn
rows (the same directions: the columns divided by the full rows' deviations)."""

from __future__ import annotations

import numpy as np
import pytest

from abstain.metrics._ood_table import PairResampler, _applicable, _table


def _rows(seed: int, n: int, continuous: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    ood = rng.random(n) < 0.35
    raw = rng.random(n) if continuous else (rng.random(n) < 0.25) * 1.0
    losses = np.where(ood, np.nan, raw)
    s = np.column_stack([np.round(rng.normal(size=n) + ood, 1),  # many ties
                         np.round(rng.normal(size=n) + 0.5 * ood, 1)])
    return losses, ood, s


def _drawn_row(losses, ood, s, i, d):
    applicable = _applicable([True], True)
    values, _ = _table([({"losses": losses[i], "is_ood": ood[i]}, s[i])], applicable, 0.9,
                       0.3, "grid", d)
    return values[0][applicable[0]]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("continuous", [False, True])
def test_resample_equals_the_drawn_rows(seed: int, continuous: bool) -> None:
    n, d = 90, 37
    losses, ood, s = _rows(seed, n, continuous)
    pr = PairResampler(losses, ood, s, tpr=0.9, fpr=0.3, search="auto", n_directions=d)
    assert pr.how == "scaled grid" and pr.usable
    scaled = s / s.std(axis=0)
    rng = np.random.default_rng(100 + seed)
    for _ in range(5):
        i = rng.integers(0, n, n)
        got = np.array(list(pr.row(np.bincount(i, minlength=n)).values()))
        want = _drawn_row(losses, ood, scaled, i, d)
        if continuous:  # the same sums, added in another order
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
        else:
            assert np.array_equal(got, want, equal_nan=True)


def test_grid_search_keeps_the_columns_as_given() -> None:
    losses, ood, s = _rows(0, 80, False)
    s = s * [100.0, 1.0]
    pr = PairResampler(losses, ood, s, tpr=0.9, fpr=0.3, search="grid", n_directions=20)
    i = np.random.default_rng(1).integers(0, 80, 80)
    got = np.array(list(pr.row(np.bincount(i, minlength=80)).values()))
    assert np.array_equal(got, _drawn_row(losses, ood, s, i, 20), equal_nan=True)


def test_exact_search_is_not_resampled_on_orders() -> None:
    losses, ood, s = _rows(0, 40, False)
    pr = PairResampler(losses, ood, s, tpr=0.9, fpr=0.3, search="exact")
    assert pr.how == "exact" and not pr.usable
    with pytest.raises(ValueError, match="drawn rows"):
        pr.row(np.ones(40, dtype=np.int64))


def test_infinite_scores_are_refused_by_name_before_the_columns_are_scaled() -> None:
    rng = np.random.default_rng(0)
    s = rng.random((3000, 2))
    s[0, 0], s[1, 0] = np.inf, -np.inf
    ood = np.arange(3000) % 3 == 0
    with pytest.raises(ValueError, match=r"scores\[:, 0\] must be finite; got 2 infinite"):
        PairResampler(np.where(ood, np.nan, 0.0), ood, s, tpr=0.9, fpr=0.5)


@pytest.mark.parametrize(("counts", "match"), [
    (np.zeros(40, dtype=np.int64), "at least one ID row"),
    (np.ones(39, dtype=np.int64), r"one per row \(40\); got shape \(39,\)"),
    (np.full(40, 0.5), "whole numbers, one per row"),
    (np.full(40, True), "whole numbers, one per row"),
    (-np.ones(40, dtype=np.int64), "at least 0"),
    ("ood", "at least one ID row"),
    ("id", "at least one OOD row"),
])
def test_counts_that_are_no_resample_with_both_classes_are_refused(counts, match) -> None:
    """All-zero counts raised "cannot reshape array of size 0", and a resample of one class
    gave an AUROC of 1 and an infinite FPR."""
    losses, ood, s = _rows(0, 40, False)
    pr = PairResampler(losses, ood, s, tpr=0.9, fpr=0.3, n_directions=12)
    if isinstance(counts, str):
        counts = (ood if counts == "ood" else ~ood).astype(np.int64)
    with pytest.raises(ValueError, match=match):
        pr.row(counts)


def test_a_bootstrap_refuses_losses_a_resample_could_sum_past_the_limit(tmp_path, capsys):
    """ID losses below a pair sample's limit on the rows (1e303 < 2.74e303) but not on a
    resample that draws their row again: the exact search of a resample's rows raised "...
    at most 2.74e+303 ...; got 3.0000000000000003e+303" (a sum the user never gave) at a
    resample that depended on the seed, and the grid's resample returned values (or, drawn
    10**6 times, an IndexError) where the drawn rows' own metrics refuse. A bootstrap now
    refuses such losses before any resample, with the bound they must meet: the ID rows
    (drawn apart from the OOD ones) times the largest loss; losses 3 ID rows can draw
    (3e301 x 3) still pass among 300 rows."""
    from abstain.app.cli import main
    from abstain.metrics import evaluate_ood

    rng = np.random.default_rng(8)
    n = 30
    ood = np.arange(n) >= 20
    s = rng.normal(size=(n, 2)) + ood[:, None]
    losses = np.where(ood, np.nan, 0.0)
    losses[0] = 1e303
    line = (r"losses must be at most 2.74e\+303 / 20 on the 20 ID rows for a bootstrap of a "
            r"score pair \(a resample may draw the row of the largest, 1e\+303, 20 times\)")
    for seed, search in ((0, "exact"), (1, "exact"), (0, "grid"), (0, "auto")):
        with pytest.raises(ValueError, match=line):
            evaluate_ood(losses, ood, {"pair": s}, n_bootstrap=5, random_state=seed,
                         search=search)
    assert evaluate_ood(losses, ood, {"pair": s}, search="exact").row("pair")["auroc"] > 0.5
    path = tmp_path / "big.csv"
    path.write_text("loss,is_ood,a,b\n" + "".join(
        f"{'' if o else repr(float(v))},{int(o)},{x!r},{y!r}\n"
        for v, o, (x, y) in zip(losses, ood, s.tolist(), strict=True)))
    assert main(["evaluate", str(path), "--is-ood", "is_ood", "--ood-score", "b",
                 "--pair-with", "a", "--search", "exact", "--bootstrap", "5"]) == 1
    assert "losses must be at most 2.74e+303 / 20 on the 20 ID rows" in capsys.readouterr().err
    # a computed sum rounds up: 11 x 2.4936927585425855e302 is within the limit, the sum of
    # 11 such losses (2.7430620343968443e303) is not; every seed is refused (some raised
    # mid-bootstrap)
    top = 2.4936927585425855e302
    few = np.r_[np.full(10, top), 0.0, np.full(3, np.nan)]
    marks = np.r_[np.zeros(11, bool), np.ones(3, bool)]
    for seed in range(5):
        with pytest.raises(ValueError, match="on the 11 ID rows"):
            evaluate_ood(few, marks, {"pair": rng.normal(size=(14, 2))}, n_bootstrap=2,
                         random_state=seed, search="exact")
    # 3 ID rows among 300: a resample sums at most 3 x 3e302, within the limit
    ood = np.arange(300) >= 3
    s = rng.normal(size=(300, 2)) + ood[:, None]
    losses = np.where(ood, np.nan, 3e302)
    for search in ("exact", "grid"):
        assert evaluate_ood(losses, ood, {"pair": s}, n_bootstrap=3, random_state=0,
                            search=search).low.shape == (1, 6)


def test_a_resample_whose_losses_sum_past_the_limit_is_refused() -> None:
    """Counts (any, not a bootstrap's) that draw a loss of 1e302 a thousand times: the
    drawn rows' own metrics refuse the sum, and so does the row (it returned values, and an
    IndexError where the sum overflowed: 10**6 draws of 1e303)."""
    rng = np.random.default_rng(0)
    ood = np.arange(40) % 2 == 1
    s = rng.normal(size=(40, 2)) + ood[:, None]
    losses = np.where(ood, np.nan, 0.5)
    losses[0] = 1e302  # 20 ID rows: any bootstrap resample sums within the limit
    pr = PairResampler(losses, ood, s, tpr=0.5, fpr=0.5, search="grid", n_directions=12,
                       bounded=False)
    for k in (10**3, 10**6):
        c = np.ones(40, dtype=np.int64)
        c[0] = k
        with pytest.raises(ValueError, match=r"at most 2.74e\+303 .*; the resample's is"):
            pr.row(c)
