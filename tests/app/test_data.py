"""abstain.app.data: the rows of a file and the score tables of the same rows read in chunks
give the same operations."""

from __future__ import annotations

import numpy as np
import pytest

from abstain import metrics as m
from abstain.app.chunks import summarise
from abstain.app.data import Rows, Tables, as_data
from abstain.app.io import write_table
from abstain.app.tables import prepare

OPTIONS = {"scores": None, "loss": None, "label": None, "prediction": None, "is_ood": None,
           "ood_score": "g", "dropna": False}


def _columns(n=120, seed=0):
    rng = np.random.default_rng(seed)
    ood = rng.random(n) < 0.3
    return {"loss": np.where(ood, 0.0, rng.integers(0, 2, n)).astype(float),
            "u": rng.integers(0, 8, n) / 8, "g": np.round(rng.normal(size=n) + ood, 1),
            "is_ood": ood.astype(float)}


@pytest.fixture
def both(tmp_path):
    cols = _columns()
    write_table(tmp_path / "t.csv", cols)
    rows = as_data(prepare(cols, ood_score="g"))
    tables = as_data(summarise(str(tmp_path / "t.csv"), rows=25, options=OPTIONS))
    return rows, tables


def test_as_data_wraps_either_path_once(both):
    rows, tables = both
    assert isinstance(rows, Rows) and isinstance(tables, Tables)
    assert as_data(rows) is rows and (rows.chunked, tables.chunked) == (False, True)
    for attr in ("names", "pairs", "has_ood", "n_id", "n_ood", "n_dropped", "bounded"):
        assert getattr(rows, attr) == getattr(tables, attr), attr
    assert rows.pairs == {"u+g": ("u", "g")}


def test_the_metrics_and_counts_are_the_same_on_both_paths(both):
    rows, tables = both
    assert m.aurc(*rows.selective_args("u")) == m.aurc(*tables.selective_args("u"))
    for name in ("u", "u+g"):
        got = [view.ood_metrics(name, tpr=0.8, fpr=0.4, search="exact") for view in both]
        assert got[0][1] == got[1][1] == (None if name == "u" else "exact")
        np.testing.assert_array_equal(list(got[0][0].values()), list(got[1][0].values()))
        assert list(got[0][0]) == list(got[1][0])
    assert rows.base_error() == tables.base_error()
    assert rows.n_wrong() == tables.n_wrong()


def test_the_histograms_count_the_same_rows(both):
    rows, tables = both
    for (v, g, w), (tv, tg, tw) in zip(rows.histograms("u"), tables.histograms("u"),
                                       strict=True):
        assert w is None
        for group in (False, True):
            on_rows = np.unique(v[g == group], return_counts=True)
            keep = (tg == group) & (tw > 0)
            np.testing.assert_array_equal(on_rows[0], tv[keep])
            np.testing.assert_array_equal(on_rows[1], tw[keep])


def test_a_resample_of_the_rows_is_the_same_view():
    view = as_data(prepare(_columns(), ood_score="g"))
    idx = np.arange(0, 120, 2)
    sub = view.take(idx)
    assert isinstance(sub, Rows) and sub.n_id + sub.n_ood == 60
    np.testing.assert_array_equal(sub.columns("u+g"), view.columns("u+g")[idx])
