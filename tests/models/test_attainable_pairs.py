"""What a double-score rule can attain, from a PairTable: equal to the rows."""

import numpy as np
import pytest

from abstain import PairTable
from abstain.models import least_fpr_at_tpr, most_recall_at_precision


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
