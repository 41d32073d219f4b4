"""One score column of distinct scores: AUROC, AUPR and FPR at TPR read from the OOD marks
in score order (no per-group masses) give the floats of the grouped path bit for bit, and
agree with the brute-force definitions."""

from __future__ import annotations

import numpy as np
import pytest

from abstain import ScoreTable
from abstain._core.groups import min_rows_of_code_groups
from abstain._ood_search.sample import NO_LOSSES, Sample, validate_sample
from abstain.metrics import _columns, _ood, aupr_in, aupr_out, auroc, fpr_at_tpr

N = min_rows_of_code_groups() + 13


def _grouped(ood, s) -> Sample:
    """The sample of the rows through the weighted path (one group per distinct score)."""
    return Sample(*validate_sample(s, ood, NO_LOSSES, None))


def _data(seed):
    rng = np.random.default_rng(seed)
    scale = [1e-300, 1e-3, 1.0, 1e300][seed % 4]
    s = (rng.random(N) - rng.choice([0.0, 0.5])) * scale
    ood = rng.random(N) < rng.uniform(0.02, 0.98)
    return ood, s


@pytest.mark.parametrize("seed", range(8))
def test_marks_give_the_floats_of_the_grouped_path(seed) -> None:
    ood, s = _data(seed)
    marks = _ood._sample_or_marks(ood, s)
    assert isinstance(marks, np.ndarray)  # the path under test applies
    g = _grouped(ood, s)
    assert auroc(ood, s) == _columns.column_auroc(g)
    assert aupr_in(ood, s) == _columns.average_precision(g.w_id, g.w_ood)
    assert aupr_out(ood, s) == _columns.average_precision(g.w_ood[::-1], g.w_id[::-1])
    n_id = int(np.count_nonzero(~ood))
    rng = np.random.default_rng(seed)
    exact = [k / n_id for k in rng.integers(1, n_id + 1, 5)]  # targets on a knot
    near = [float(np.nextafter(t, d)) for t in exact for d in (0.0, 2.0)]  # and one ulp off
    for tpr in [0.95, 1.0, 1e-9, 0.5, *rng.random(5), *exact, *near]:
        expected = _ood.core.least_fpr(*_columns.column_running_sums(g), g.n_id, g.n_ood, tpr)
        assert fpr_at_tpr(ood, s, tpr=tpr) == expected
    table = ScoreTable.from_arrays(s, np.zeros(N), is_ood=ood)
    assert (auroc(table), aupr_in(table), aupr_out(table), fpr_at_tpr(table)) == (
        auroc(ood, s), aupr_in(ood, s), aupr_out(ood, s), fpr_at_tpr(ood, s))


def test_marks_agree_with_the_definitions() -> None:
    """AUROC as the pair count, AUPR-In as the mean precision at each ID row, FPR at TPR as
    the OOD fraction below the first ID row that reaches the TPR."""
    ood, s = _data(2)
    order = np.argsort(s)
    m = ood[order]
    i, o = s[~ood], s[ood]
    pairs = np.mean(i[:, None] < o[None, :])
    assert auroc(ood, s) == pytest.approx(pairs, rel=1e-12)
    id_rows = np.flatnonzero(~m)
    precision = np.arange(1, id_rows.size + 1) / (id_rows + 1)
    assert aupr_in(ood, s) == pytest.approx(precision.mean(), rel=1e-12)
    k = int(np.ceil(0.95 * id_rows.size))
    assert fpr_at_tpr(ood, s, tpr=0.95) == pytest.approx(
        np.count_nonzero(m[: id_rows[k - 1]]) / o.size, rel=1e-12)


def test_ties_take_the_grouped_path() -> None:
    ood, s = _data(2)
    s = np.round(s, 2)
    assert isinstance(_ood._sample_or_marks(ood, s), Sample)
    g = _grouped(ood, s)
    assert auroc(ood, s) == _columns.column_auroc(g)
    assert aupr_in(ood, s) == _columns.average_precision(g.w_id, g.w_ood)
