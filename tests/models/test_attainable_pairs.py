"""What an OOD rule can attain: from a PairTable equal to the rows, and from the fit's own
sweep equal to :func:`least_fpr_at_tpr` and :func:`most_recall_at_precision`."""

import warnings

import numpy as np
import pytest

from abstain import InfeasibleTargetWarning, PairTable, ScoreTable
from abstain.models import (
    BoundedPrecisionRecall,
    BoundedTPRFPR,
    least_fpr_at_tpr,
    most_recall_at_precision,
)


@pytest.mark.parametrize("seed", range(6))
def test_least_fpr_and_most_recall_of_a_pair_table_equal_the_rows(seed):
    rng = np.random.default_rng(seed)
    n = 300
    s = rng.integers(0, 4, size=(n, 2)) / np.array([3.0, 7.0])  # few pairs, many ties
    is_ood = rng.random(n) < 0.3 + 0.1 * s[:, 0]
    parts = np.array_split(np.arange(n), 3)
    table = PairTable.merge(*(PairTable.from_arrays(s[i], np.zeros(i.size), is_ood=is_ood[i])
                              for i in parts))
    for tpr in (0.3, 0.8, 1.0):
        assert least_fpr_at_tpr(table, tpr=tpr) == least_fpr_at_tpr(s, is_ood, tpr)
        assert least_fpr_at_tpr(table, tpr=tpr, n_directions=7) == \
            least_fpr_at_tpr(s, is_ood, tpr, n_directions=7)
    for precision in (0.5, 0.8, 0.95):
        for prior in (None, 0.2):
            assert most_recall_at_precision(table, precision=precision, ood_prior=prior) == \
                most_recall_at_precision(s, is_ood, precision, ood_prior=prior)


def test_a_pair_table_with_is_ood_beside_it_is_refused():
    s = np.array([[0.1, 0.2], [0.3, 0.4], [0.5, 0.1], [0.2, 0.2]])
    is_ood = np.array([False, True, False, True])
    table = PairTable.from_arrays(s, np.zeros(4), is_ood=is_ood)
    with pytest.raises(ValueError, match="is_ood"):
        least_fpr_at_tpr(table, is_ood, 0.5)
    with pytest.raises(ValueError, match="is_ood"):
        most_recall_at_precision(table, is_ood, 0.5)


# -- what an infeasible fit attains comes from its own sweep ----------------------------------
def _ties(seed: int, columns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows with few distinct scores (many ties, ID and OOD mixed in a tie group)."""
    rng = np.random.default_rng(seed)
    n = 200 + 37 * seed
    is_ood = rng.random(n) < 0.35
    shift = np.where(is_ood, 1.0, 0.0)[:, None]
    s = np.round(rng.normal(shift, 1.2, size=(n, columns)) * 2) / 2
    losses = np.where(is_ood, 0.0, (rng.random(n) < 0.3).astype(float))
    return (s[:, 0] if columns == 1 else s), is_ood, losses


def _fits(seed: int, columns: int) -> list[tuple[object, tuple[object, ...]]]:
    """The data of one fit as rows and as the table of those rows: (data for the
    least/most functions, arguments of fit)."""
    s, is_ood, losses = _ties(seed, columns)
    table = (ScoreTable.from_arrays(s, losses, is_ood=is_ood) if columns == 1 else
             PairTable.from_arrays(s, losses, is_ood=is_ood))
    return [((s, is_ood), (s, is_ood, losses)), ((table,), (table,))]


def _attainable(rule, *fit_args) -> float | None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", InfeasibleTargetWarning)
        rule.fit(*fit_args)
    assert not rule.feasible_
    (w,) = [w for w in caught if issubclass(w.category, InfeasibleTargetWarning)]
    return w.message.attainable


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("columns, d", [(1, 360), (2, 360), (2, 7)])
def test_an_infeasible_tpr_fpr_fit_attains_the_least_fpr_at_its_tpr(seed, columns, d):
    for data, fit_args in _fits(seed, columns):
        for tpr in (0.4, 0.8, 0.95, 1.0):
            rule = BoundedTPRFPR(tpr=tpr, fpr=0.0, n_directions=d)
            assert _attainable(rule, *fit_args) == least_fpr_at_tpr(*data, tpr=tpr,
                                                                    n_directions=d)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("columns, d", [(1, 360), (2, 360), (2, 7)])
def test_an_infeasible_precision_recall_fit_attains_the_most_recall_at_its_precision(
        seed, columns, d):
    for data, fit_args in _fits(seed, columns):
        for precision in (0.9, 0.95, 0.99):
            for prior in (None, 0.2):
                rule = BoundedPrecisionRecall(precision=precision, recall=1.0, ood_prior=prior,
                                              n_directions=d)
                assert _attainable(rule, *fit_args) == most_recall_at_precision(
                    *data, precision=precision, ood_prior=prior, n_directions=d)


def test_the_exact_search_of_a_pair_records_no_attainable_value():
    # Branch and bound visits the directions that can hold the best rule, not a grid: what
    # the grid attains is not known to it.
    s, is_ood, losses = _ties(0, 2)
    assert _attainable(BoundedTPRFPR(tpr=0.95, fpr=0.0, search="exact"),
                       s, is_ood, losses) is None
    assert _attainable(BoundedPrecisionRecall(precision=0.99, recall=1.0, search="exact"),
                       s, is_ood, losses) is None
