"""abstain.distributed on a LocalCluster(processes=False): both plans give the table of the
rows, and the metrics and fits on it equal those on the rows (1e6 rows); pair_table gives
the PairTable of the rows."""

from __future__ import annotations

import numpy as np
import pytest

from abstain import BoundedAbstention, BoundedImprovement, PairTable, ScoreTable
from abstain.metrics import augrc, aurc, auroc, e_aurc, fpr_at_tpr
from abstain.models import BoundedTPRFPR

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from abstain.distributed import pair_table, score_table  # noqa: E402

N = 1_000_000
# the test's rows are NumPy arrays sent with the graph; real data is read by the workers
pytestmark = pytest.mark.filterwarnings("ignore:Sending large graph:UserWarning")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(0)
    quantised = np.round(rng.random(N), 4)  # 10,001 groups
    fp32 = rng.random(N).astype(np.float32).astype(np.float64)  # about 970,000 groups
    losses = (rng.random(N) < 0.1 + 0.3 * quantised).astype(float)
    is_ood = rng.random(N) < 0.2
    return quantised, fp32, losses, is_ood


@pytest.mark.parametrize("scores", ["quantised", "fp32"])
@pytest.mark.parametrize("plan", ["tree", "range"])
def test_both_plans_give_the_table_of_the_rows(client, rows, scores, plan) -> None:
    quantised, fp32, losses, _ = rows
    u = quantised if scores == "quantised" else fp32
    table = score_table(da.from_array(u, chunks=N // 8), da.from_array(losses, chunks=N // 5),
                        plan=plan, n_ranges=3, oracle=True)
    whole = ScoreTable.from_arrays(u, losses)
    assert table == whole
    assert aurc(table) == aurc(losses, u) and augrc(table) == augrc(losses, u)
    assert e_aurc(table) == e_aurc(losses, u)
    for model in (BoundedAbstention(0.7), BoundedImprovement(0.3, delta=0.05, bound="sgr")):
        on_rows, on_table = model.fit(u, losses), type(model)(**model.get_params()).fit(table)
        assert (on_table.threshold_, on_table.accept_prob_) == (on_rows.threshold_,
                                                                on_rows.accept_prob_)


@pytest.mark.parametrize("plan", ["tree", "range"])
def test_both_plans_check_the_totals_as_a_table_of_the_rows_does(client, plan) -> None:
    # the range plan joined its ranges unchecked: a table whose own document is refused
    u = da.from_array(np.array([0.1, 0.2, 0.3, 0.4]), chunks=1)
    with pytest.raises(ValueError, match="losses must have a sum within the float64 range"):
        score_table(u, da.from_array(np.array([1e308, 0.0, 0.0, 1e308]), chunks=1), plan=plan,
                    n_ranges=2)
    losses = np.array([1e154, 0.0, 0.0, 1e154])  # their squares' sum overflows
    table = score_table(u, da.from_array(losses, chunks=1), plan=plan, n_ranges=2, oracle=True)
    assert table.sq_loss_sums is None
    assert table == ScoreTable.from_arrays(u.compute(), losses)


def test_dataframe_columns_ood_marks_and_the_auto_plan(client, rows) -> None:
    quantised, fp32, losses, is_ood = rows
    frame = dd.from_dict({"u": quantised[:200_000], "loss": losses[:200_000],
                          "ood": is_ood[:200_000]}, npartitions=6)
    table = score_table(frame["u"], frame["loss"], is_ood=frame["ood"])
    whole = ScoreTable.from_arrays(quantised[:200_000], losses[:200_000],
                                   is_ood=is_ood[:200_000], oracle=False)
    assert table == whole
    assert auroc(table) == auroc(is_ood[:200_000], quantised[:200_000])
    assert fpr_at_tpr(table) == fpr_at_tpr(is_ood[:200_000], quantised[:200_000])
    # auto: few groups take the tree, many groups beyond max_groups the range plan
    small = score_table(da.from_array(fp32[:50_000], chunks=10_000),
                        da.from_array(losses[:50_000], chunks=10_000), max_groups=10_000)
    assert small == ScoreTable.from_arrays(fp32[:50_000], losses[:50_000], oracle=False)


def test_bad_collections_are_refused(client, rows) -> None:
    quantised, _, losses, _ = rows
    frame = dd.from_dict({"u": quantised[:100], "loss": losses[:100]}, npartitions=2)
    with pytest.raises(ValueError, match="must be one column"):
        score_table(frame, frame["loss"])
    with pytest.raises(ValueError, match="must have the same length"):
        score_table(da.from_array(quantised[:100], chunks=50), da.from_array(losses[:90]))
    with pytest.raises(ValueError, match="plan must be one of"):
        score_table(da.from_array(quantised[:100]), da.from_array(losses[:100]), plan="star")
    with pytest.raises(ValueError, match="losses must be non-negative"):
        score_table(da.from_array(quantised[:100]), da.from_array(-losses[:100] - 1))
    with pytest.raises(ValueError, match="one-dimensional"):
        score_table(da.zeros((3, 3)), da.zeros((3, 3)))


def _pairs(rows, n):
    quantised, fp32, losses, is_ood = rows
    s = np.stack([quantised[:n], np.round(fp32[:n] * 2 + 2 * is_ood[:n], 1)], axis=1)
    return s, np.where(is_ood[:n], np.nan, losses[:n]), is_ood[:n]


def test_pair_table_gives_the_pair_table_of_the_rows(client, rows) -> None:
    n = N // 4
    s, losses, ood = _pairs(rows, n)  # 4 decimals x 1 decimal: about 200,000 pairs
    table = pair_table(da.from_array(s, chunks=(n // 8, 1)), da.from_array(losses, chunks=n // 5),
                       is_ood=da.from_array(ood, chunks=n // 8), fan_in=3)
    whole = PairTable.from_arrays(s, losses, is_ood=ood)
    assert table == whole and table.n == n
    # continuous losses: to float64 rounding of the summed losses
    cont = np.where(ood, np.nan, rows[1][:n])
    got = pair_table(da.from_array(s, chunks=(n // 4, 2)), da.from_array(cont, chunks=n // 4),
                     is_ood=da.from_array(ood, chunks=n // 4))
    ref = PairTable.from_arrays(s, cont, is_ood=ood)
    assert np.array_equal(got.values, ref.values) and np.array_equal(got.counts, ref.counts)
    np.testing.assert_allclose(got.loss_sums, ref.loss_sums, rtol=1e-12)


def test_pair_table_of_dataframe_columns_fits_the_rule_of_the_rows(client, rows) -> None:
    s, losses, ood = _pairs(rows, 5_000)
    s = np.round(s, 1)
    frame = dd.from_dict({"r": s[:, 0], "g": s[:, 1], "loss": losses, "ood": ood},
                         npartitions=5)
    table = pair_table(frame[["r", "g"]], frame["loss"], is_ood=frame["ood"])
    assert table == PairTable.from_arrays(s, losses, is_ood=ood)
    on_table = BoundedTPRFPR(tpr=0.8, fpr=0.5).fit(table)
    on_rows = BoundedTPRFPR(tpr=0.8, fpr=0.5).fit(s, ood, losses)
    assert on_table.feasible_ and np.array_equal(on_table.weights_, on_rows.weights_)
    assert (on_table.threshold_, on_table.accept_prob_, on_table.tpr_, on_table.fpr_) == (
        on_rows.threshold_, on_rows.accept_prob_, on_rows.tpr_, on_rows.fpr_)


def test_pair_table_refuses_bad_input(client, rows) -> None:
    s, losses, ood = _pairs(rows, 1000)
    S, L, M = (da.from_array(x, chunks=250) for x in (s, losses, ood))  # noqa: N806
    with pytest.raises(ValueError, match=r"more than max_pairs=10 distinct pairs .*Round both"):
        pair_table(S, L, is_ood=M, max_pairs=10)
    with pytest.raises(ValueError, match=r"shape \(n, 2\), one column per score; got shape"):
        pair_table(da.zeros((10, 3)), da.zeros(10), is_ood=da.zeros(10))
    frame = dd.from_dict({"a": s[:, 0], "b": s[:, 1], "c": s[:, 1]}, npartitions=2)
    with pytest.raises(ValueError, match=r"DataFrame of two columns \(s_r, s_g\); got"):
        pair_table(frame, L, is_ood=M)
    with pytest.raises(ValueError, match="Dask array of shape"):
        pair_table(s, L, is_ood=M)
    with pytest.raises(ValueError, match="is_ood must be a Dask array or Series"):
        pair_table(S, L, is_ood=None)
    with pytest.raises(ValueError, match="must have the same length"):
        pair_table(S, da.from_array(losses[:900]), is_ood=M)
    with pytest.raises(ValueError, match="max_pairs must be"):
        pair_table(S, L, is_ood=M, max_pairs=0)
    with pytest.raises(ValueError, match="losses must not be NaN on ID rows"):
        pair_table(S, da.from_array(np.full(1000, np.nan), chunks=250), is_ood=M)
    empty = da.zeros((0, 2), chunks=(1, 2))
    with pytest.raises(ValueError, match="scores must not be empty"):
        pair_table(empty, da.zeros(0, chunks=1), is_ood=da.zeros(0, chunks=1))


def test_a_mismatch_names_the_arguments_passed_and_a_2d_column_its_shape() -> None:
    u, pairs = da.from_array(np.linspace(0, 1, 10), chunks=5), da.zeros((10, 2), chunks=5)
    marks = da.from_array(np.arange(10) % 2, chunks=5)
    with pytest.raises(ValueError, match=r"^losses must be a one-dimensional Dask array \(one "
                                         r"value per row\); got shape \(10, 2\)\.$"):
        score_table(u, da.zeros((10, 2), chunks=5))  # same length: not a length mismatch
    with pytest.raises(ValueError, match=r"^is_ood must be a one-dimensional Dask array"):
        score_table(u, da.zeros(10, chunks=5), is_ood=da.zeros((10, 1), chunks=5))
    with pytest.raises(ValueError, match=r"^uncertainty must be a one-dimensional Dask array"):
        score_table(da.zeros((10, 2), chunks=5), da.zeros(10, chunks=5))
    with pytest.raises(ValueError, match=r"^uncertainty and losses must have the same length; got "
                                         r"uncertainty has 10, losses has 9\.$"):
        score_table(u, da.zeros(9, chunks=5))
    with pytest.raises(ValueError, match=r"^scores and losses must have the same length; got "
                                         r"scores has 10, losses has 9\.$"):
        pair_table(pairs, da.zeros(9, chunks=5), is_ood=marks)
    with pytest.raises(ValueError, match=r"^scores and is_ood must have the same length; got "
                                         r"scores has 10, is_ood has 11\.$"):
        pair_table(pairs, da.zeros(10, chunks=5), is_ood=da.zeros(11, chunks=5))
    with pytest.raises(ValueError, match=r"^losses must be a one-dimensional Dask array"):
        pair_table(pairs, da.zeros((10, 2), chunks=5), is_ood=marks)
    # Series of one length and partition count, split at other rows: said so (the rows of
    # one partition were quoted as the columns' lengths; an is_ood partition beside empty
    # ones was dropped without a word)
    import pandas as pd

    with dask.config.set(scheduler="synchronous"):
        su = dd.from_pandas(pd.Series(np.linspace(0, 1, 200)), npartitions=4)
        sl = da.from_array(np.zeros(200), chunks=(20, 60, 60, 60)).to_dask_dataframe()
        with pytest.raises(ValueError, match=r"^the arguments' partitions must hold the same "
                                             r"rows; one holds uncertainty 50, losses [26]0 rows"):
            score_table(su, sl)
        empty = da.from_array(np.zeros(100), chunks=(0, 100)).to_dask_dataframe()
        extra = da.from_array(np.zeros(130), chunks=(30, 100)).to_dask_dataframe()
        with pytest.raises(ValueError, match=r"is_ood 30 rows"):
            score_table(empty, empty, is_ood=extra)
    # a NumPy array beside a Dask one: only the arguments given, the array named as such
    with pytest.raises(ValueError, match=r"^uncertainty and losses must have the same "
                                         r"partitions; got 1 \(a NumPy array\) and 2 "
                                         r"partitions \(give every argument as a Dask"):
        score_table(np.linspace(0, 1, 10), da.zeros(10, chunks=5))


def test_pair_table_refuses_text_as_the_array_api_does(client, rows) -> None:
    s, losses, ood = _pairs(rows, 40)
    L, M = da.from_array(losses, chunks=20), da.from_array(ood, chunks=20)  # noqa: N806
    text = s.astype(str)  # numeric strings: refused, never parsed
    with pytest.raises(ValueError, match=r"^scores must be an array of real numbers \(int, "
                                         r"float or bool dtype\); got dtype <U"):
        PairTable.from_arrays(text, losses, is_ood=ood)
    with pytest.raises(ValueError, match=r"^scores must be an array of real numbers \(int, "
                                         r"float or bool dtype\); got dtype <U"):
        pair_table(da.from_array(text, chunks=(20, 2)), L, is_ood=M)
    g = s[:, 1].astype(object)
    g[3] = g[25] = "abc"
    frame = dd.from_pandas(__import__("pandas").DataFrame({"s_r": s[:, 0], "s_g": g}),
                           npartitions=2)
    with pytest.raises(ValueError, match=r"^scores column 's_g' must hold numbers \(int, float "
                                         r"or bool dtype\); got dtype \w+, such as 'abc'\.$"):
        pair_table(frame, dd.from_array(losses, chunksize=20), is_ood=dd.from_array(ood,
                                                                                    chunksize=20))


def test_rows_kept_by_a_mask_have_unknown_chunks_and_give_their_table(client) -> None:
    # U[keep], the usual way to keep the ID rows, has chunk sizes Dask does not know yet
    rng = np.random.default_rng(0)
    n = 1000
    u = np.round(rng.random(n), 2)
    losses = (rng.random(n) < u).astype(float)
    ood = rng.random(n) < 0.2
    U, L, M = (da.from_array(a, chunks=100) for a in (u, losses, ood))
    keep = ~M
    assert np.isnan(U[keep].chunks[0][0])
    table = score_table(U[keep], L[keep], oracle=True)
    assert table == ScoreTable.from_arrays(u[~ood], losses[~ood])
    s = np.c_[u, np.round(rng.random(n), 1)]
    S = da.from_array(s, chunks=(100, 2))
    pairs = pair_table(S[keep], L[keep], is_ood=M[keep] | (U[keep] > 0.9))
    assert pairs == PairTable.from_arrays(s[~ood], losses[~ood], is_ood=u[~ood] > 0.9)
