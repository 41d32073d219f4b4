"""Curves at bounds given in any order: each value is the one at its own bound."""

from __future__ import annotations

import numpy as np
import pytest

from abstain.metrics import ood_pr_curve, ood_roc_curve


@pytest.mark.parametrize(("columns", "search"), [(1, "auto"), (2, "grid"), (2, "exact")])
def test_roc_curve_at_unsorted_fpr_bounds(columns, search) -> None:
    rng = np.random.default_rng(0)
    ood = rng.random(300) < 0.4
    s = (rng.normal(size=(300, 2)) + ood[:, None] * 0.7)[:, :columns].squeeze()
    q = np.array([0.9, 0.1, 0.5, 0.0, 1.0, 0.3, 0.5])
    got = ood_roc_curve(ood, s, fpr=q, search=search)
    one = [ood_roc_curve(ood, s, fpr=[v], search=search).tpr[0] for v in q]
    assert np.array_equal(got.fpr, q) and np.array_equal(got.tpr, one)
    assert got.tpr[4] == 1.0 and got.tpr[1] <= got.tpr[2] <= got.tpr[0]


def test_pr_curve_at_unsorted_recall_bounds() -> None:
    rng = np.random.default_rng(1)
    ood = rng.random(300) < 0.4
    s = rng.normal(size=(300, 2)) + ood[:, None] * 0.7
    q = np.array([0.9, 0.1, 0.5, 1.0, 0.3])
    got = ood_pr_curve(ood, s, recall=q, search="grid")
    one = [ood_pr_curve(ood, s, recall=[v], search="grid").precision[0] for v in q]
    assert np.array_equal(got.precision, one)


def test_an_infeasible_risk_warns_at_the_callers_line() -> None:
    from abstain.exceptions import InfeasibleTargetWarning
    from abstain.metrics import selective_risk_at_tpr_fpr

    rng = np.random.default_rng(2)
    ood = rng.random(200) < 0.4
    s = rng.normal(size=(200, 2))
    losses = np.where(ood, np.nan, 1.0)
    for search in ("grid", "exact"):
        with pytest.warns(InfeasibleTargetWarning) as got:
            selective_risk_at_tpr_fpr(losses, ood, s, 0.99, 0.01, search=search)
        assert [w.filename for w in got] == [__file__]
