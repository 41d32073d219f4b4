"""ScoreTable: every metric and fit on a table equals the same call on the rows.

Random data with many ties, 0/1, whole-number, binary-grid and continuous losses. A table
built from the rows gives bit-for-bit the result of the rows; a table merged from parts
gives it bit for bit whenever the loss sums are exact in float64 (0/1, whole numbers,
multiples of 1/8), and to float64 rounding of the group sums otherwise.
"""

from __future__ import annotations

import base64
import json
import math
import re
import warnings
from fractions import Fraction

import numpy as np
import pytest
from reference.metrics_ref import aurc_ref

import abstain
from abstain import BoundedAbstention, BoundedImprovement, CostBased, ScoreTable
from abstain.metrics import (
    augrc,
    aupr_in,
    aupr_out,
    aurc,
    auroc,
    ccr_at_fpr,
    coverage_at_risk,
    detection_rate_at_false_alarm,
    e_aurc,
    fpr_at_tpr,
    ood_pr_curve,
    ood_roc_curve,
    oscr,
    risk_coverage_curve,
    risk_coverage_curve_at_fpr,
    sele_loss,
    selective_risk_at_coverage,
    selective_risk_at_precision_recall,
    selective_risk_at_tpr_fpr,
    tnr_at_tpr,
)
from abstain.models import (
    BoundedPrecisionRecall,
    BoundedTPRFPR,
    CostBasedOOD,
    least_fpr_at_tpr,
    least_risk_bound,
    most_recall_at_precision,
)

LOSS_KINDS = ("binary", "whole", "grid", "continuous")


def _losses(rng: np.random.Generator, n: int, kind: str) -> np.ndarray:
    if kind == "binary":
        return (rng.random(n) < 0.3).astype(float)
    if kind == "whole":
        return rng.integers(0, 4, n).astype(float)
    if kind == "grid":
        return rng.integers(0, 9, n) / 8.0
    return rng.random(n) * (rng.random(n) < 0.6)


def _rows(seed: int, kind: str, n: int = 400, levels: int = 25):
    rng = np.random.default_rng(seed)
    u = rng.integers(0, levels, n) / 7.0
    return rng, u, _losses(rng, n, kind)


def _parts(rng, n, k=4):
    cuts = np.sort(rng.choice(np.arange(1, n), size=k - 1, replace=False))
    return np.split(rng.permutation(n), cuts)


def _same(a, b) -> bool:
    """Equal, NaN equal to NaN, through NamedTuples and arrays."""
    if isinstance(a, tuple):
        return all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True))


def _close(a, b) -> bool:
    if isinstance(a, tuple):
        return all(_close(x, y) for x, y in zip(a, b, strict=True))
    return bool(np.allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-15,
                            equal_nan=True))


SELECTIVE = {
    "aurc": lambda ls, u: aurc(ls, u),
    "e_aurc": lambda ls, u: e_aurc(ls, u),
    "augrc": lambda ls, u: augrc(ls, u),
    "rc_curve": lambda ls, u: risk_coverage_curve(ls, u),
    "risk_at_cov": lambda ls, u: selective_risk_at_coverage(ls, u, coverage=0.37),
    "cov_at_risk": lambda ls, u: coverage_at_risk(ls, u, target_risk=0.2),
    "sele": lambda ls, u: sele_loss(ls, u),
}


def _table_call(f, table):
    """Call a two-array metric lambda with the table as losses and no uncertainty."""
    return f(table, None)


@pytest.mark.parametrize("kind", LOSS_KINDS)
@pytest.mark.parametrize("seed", range(3))
def test_selective_metrics_on_a_table_equal_the_rows(kind: str, seed: int) -> None:
    rng, u, ls = _rows(seed, kind)
    table = ScoreTable.from_arrays(u, ls)
    merged = ScoreTable.merge(*(ScoreTable.from_arrays(u[p], ls[p]) for p in _parts(rng, u.size)))
    assert merged.n == u.size and np.array_equal(merged.counts, table.counts)
    for name, f in SELECTIVE.items():
        rows = f(ls, u)
        assert _same(_table_call(f, table), rows), name
        on_parts = _table_call(f, merged)
        if kind == "continuous":
            assert _close(on_parts, rows), name
        else:
            assert _same(on_parts, rows), name


@pytest.mark.parametrize("kind", LOSS_KINDS)
def test_reject_model_fits_on_a_table_equal_the_rows(kind: str) -> None:
    rng, u, ls = _rows(7, kind)
    if kind == "whole":
        ls = ls / 4.0  # within loss_bound = 1 for the guaranteed fit
    table = ScoreTable.from_arrays(u, ls)
    parts = ScoreTable.merge(*(ScoreTable.from_arrays(u[p], ls[p]) for p in _parts(rng, u.size)))
    same = _close if kind == "continuous" else _same
    models = [CostBased(0.25), CostBased(0.7), BoundedAbstention(0.6), BoundedAbstention(1.0),
              BoundedImprovement(0.2), BoundedImprovement(0.3, delta=0.1, bound="sgr"),
              BoundedImprovement(0.001)]
    attrs = ("threshold_", "accept_prob_", "coverage_", "risk_", "feasible_", "risk_bound_",
             "min_risk_", "cost_", "n_samples_")
    for model in models:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", abstain.InfeasibleTargetWarning)
            rows = abstain.load_json(model.fit(u, ls).to_json())
            on_table = abstain.load_json(model.fit(table).to_json())
            on_parts = abstain.load_json(model.fit(parts).to_json())
        for a in attrs:
            if hasattr(rows, a):
                assert _same(getattr(on_table, a), getattr(rows, a)), (model, a)
                assert same(getattr(on_parts, a), getattr(rows, a)), (model, a)
        assert on_table.equivalent_ == rows.equivalent_
    assert least_risk_bound(table, delta=0.1) == least_risk_bound(u, ls, 0.1, bound="sgr")


def _ood_rows(seed: int, kind: str, n: int = 300):
    rng, u, ls = _rows(seed, kind, n=n, levels=15)
    if kind == "whole":
        ls = np.minimum(ls, 1.0)
    ood = rng.random(n) < 0.35
    ls = np.where(ood, np.nan, ls)
    return rng, u, ls, ood


OOD = {
    "auroc": lambda t, u, o, ls: auroc(t) if t is not None else auroc(o, u),
    "aupr_in": lambda t, u, o, ls: aupr_in(t) if t is not None else aupr_in(o, u),
    "aupr_out": lambda t, u, o, ls: aupr_out(t) if t is not None else aupr_out(o, u),
    "fpr95": lambda t, u, o, ls: fpr_at_tpr(t, tpr=0.9) if t is not None else fpr_at_tpr(o, u, 0.9),
    "tnr": lambda t, u, o, ls: tnr_at_tpr(t) if t is not None else tnr_at_tpr(o, u),
    "det": lambda t, u, o, ls: (detection_rate_at_false_alarm(t) if t is not None
                                else detection_rate_at_false_alarm(o, u)),
    "roc": lambda t, u, o, ls: ood_roc_curve(t) if t is not None else ood_roc_curve(o, u),
    "pr": lambda t, u, o, ls: ood_pr_curve(t) if t is not None else ood_pr_curve(o, u),
    "oscr": lambda t, u, o, ls: oscr(t) if t is not None else oscr(ls, o, u),
    "ccr": lambda t, u, o, ls: (ccr_at_fpr(t, fpr=0.2) if t is not None
                                else ccr_at_fpr(ls, o, u, 0.2)),
    "risk_tpr_fpr": lambda t, u, o, ls: (
        selective_risk_at_tpr_fpr(t, tpr=0.5, fpr=0.3) if t is not None
        else selective_risk_at_tpr_fpr(ls, o, u, 0.5, 0.3)),
    "risk_pr": lambda t, u, o, ls: (
        selective_risk_at_precision_recall(t, precision=0.7, recall=0.5) if t is not None
        else selective_risk_at_precision_recall(ls, o, u, 0.7, 0.5)),
    "rc_at_fpr": lambda t, u, o, ls: (
        risk_coverage_curve_at_fpr(t, fpr=0.3) if t is not None
        else risk_coverage_curve_at_fpr(ls, o, u, 0.3)),
    "least_fpr": lambda t, u, o, ls: (least_fpr_at_tpr(t, tpr=0.8) if t is not None
                                      else least_fpr_at_tpr(u, o, 0.8)),
    "most_recall": lambda t, u, o, ls: (most_recall_at_precision(t, precision=0.7)
                                        if t is not None
                                        else most_recall_at_precision(u, o, 0.7)),
}


@pytest.mark.parametrize("kind", ("binary", "grid", "continuous"))
@pytest.mark.parametrize("seed", range(2))
def test_ood_metrics_and_rules_on_a_table_equal_the_rows(kind: str, seed: int) -> None:
    rng, u, ls, ood = _ood_rows(seed, kind)
    table = ScoreTable.from_arrays(u, ls, is_ood=ood)
    parts = ScoreTable.merge(*(ScoreTable.from_arrays(u[p], ls[p], is_ood=ood[p])
                               for p in _parts(rng, u.size)))
    same = _close if kind == "continuous" else _same
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", abstain.InfeasibleTargetWarning)
        for name, f in OOD.items():
            rows = f(None, u, ood, ls)
            assert _same(f(table, u, ood, ls), rows), name
            assert same(f(parts, u, ood, ls), rows), name
        for model in (BoundedTPRFPR(0.6, 0.3), BoundedPrecisionRecall(0.7, 0.6),
                      CostBasedOOD(0.3, 1.0)):
            rows = json.loads(model.fit(u, ood, ls).to_json())
            assert json.loads(model.fit(table).to_json()) == rows
            on_parts = model.fit(parts)
            model.fit(u, ood, ls)
            for a in ("threshold_", "accept_prob_", "risk_", "tpr_", "fpr_"):
                assert same(getattr(on_parts, a), getattr(model, a)), (model, a)


def test_closed_form_aurc_matches_the_exact_reference_and_long_tables() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        n = int(rng.integers(1, 9))
        u = rng.integers(0, 3, n).astype(float)
        ls = rng.integers(0, 3, n) / 2.0
        exact = aurc_ref(ls, u, ties="mean", exact=True)
        assert isinstance(exact, Fraction)
        assert math.isclose(aurc(ScoreTable.from_arrays(u, ls)), float(exact), rel_tol=1e-14)
    # 2e5 rows in 50 groups: the harmonic differences after many rows keep their digits
    n = 200_000
    u = rng.integers(0, 50, n).astype(float)
    ls = (rng.random(n) < 0.1 + u / 100).astype(float)
    order = np.argsort(u, kind="stable")
    su, sl = u[order], ls[order]
    ends = np.flatnonzero(np.append(su[1:] != su[:-1], True))
    csum = np.cumsum(sl)
    starts = np.concatenate(([0], ends[:-1] + 1))
    group_sum = csum[ends] - np.concatenate(([0.0], csum[ends[:-1]]))
    before = np.concatenate(([0.0], csum[ends[:-1]]))
    i = np.arange(1, n + 1, dtype=float)
    idx = np.searchsorted(ends, np.arange(n))
    prefix = before[idx] + (i - starts[idx]) * group_sum[idx] / (ends - starts + 1)[idx]
    per_row = math.fsum(prefix / i) / n
    assert math.isclose(aurc(ScoreTable.from_arrays(u, ls)), per_row, rel_tol=1e-13)


def test_update_and_merge_keep_the_parts_and_empty_tables() -> None:
    rng, u, ls = _rows(1, "binary")
    table = ScoreTable()
    for p in np.array_split(np.arange(u.size), 5):
        table.update(u[p], ls[p])
    assert table == ScoreTable.from_arrays(u, ls)
    assert ScoreTable.merge(ScoreTable(), table, ScoreTable()) == table
    assert ScoreTable.merge().n == 0 and ScoreTable().n_groups == 0
    a = ScoreTable.from_arrays(u[:10], ls[:10])
    copy = json.loads(a.to_json())
    ScoreTable.merge(a, table)
    assert json.loads(a.to_json()) == copy  # merge leaves its inputs alone
    no_oracle = ScoreTable.from_arrays(u, ls, oracle=False)
    assert ScoreTable.merge(no_oracle, table).loss_values is None
    assert aurc(no_oracle) == aurc(ls, u)


def test_update_merges_batches_lazily_and_refuses_at_once() -> None:
    # many batches: a binary counter of parts (O(n log k)), merged when a field is read
    import copy
    import pickle

    rng = np.random.default_rng(4)
    u, ls = rng.random(3000), (rng.random(3000) < 0.3).astype(float)
    ood = rng.random(3000) < 0.2
    table = ScoreTable()
    for p in np.array_split(np.arange(u.size), 60):
        table.update(u[p], ls[p], is_ood=ood[p])
    assert "_pending" in vars(table) and len(vars(table)["_pending"].parts) > 1
    twin = copy.deepcopy(table)
    pickled = pickle.loads(pickle.dumps(table))
    assert repr(table) == f"ScoreTable(n=3000, groups=3000, ood={ood.sum()})"
    whole = ScoreTable.from_arrays(u, ls, is_ood=ood)
    assert table == whole and twin == whole and pickled == whole
    assert abstain.load_json(table.to_json()) == whole and "_pending" not in vars(table)
    assert auroc(table) == auroc(whole)
    # a batch that cannot join is refused by update itself, and the table keeps its rows
    with pytest.raises(ValueError, match="all have OOD marks or all have none"):
        table.update([0.5], [1.0])
    big = ScoreTable.from_arrays([0.1], [6e307])
    big.update([0.3], [6e307])
    with pytest.raises(ValueError, match="within the float64 range"):
        big.update([0.2], [6e307])  # finite alone, not with the table
    assert big.n == 2 and big.loss_sums.tolist() == [6e307, 6e307]
    with pytest.raises(ValueError, match="finite"):
        table.update([np.nan], [1.0], is_ood=[False])
    assert table == whole
    # continuous losses: to the round-off of the group sums
    cont = ScoreTable()
    w = rng.random(3000)
    for p in np.array_split(np.arange(u.size), 37):
        cont.update(np.round(u[p], 2), w[p])
    ref = ScoreTable.from_arrays(np.round(u, 2), w)
    assert np.array_equal(cont.counts, ref.counts)
    assert np.allclose(cont.loss_sums, ref.loss_sums, rtol=1e-13, atol=0.0)
    # an empty part that carries a loss distribution keeps it
    empty = ScoreTable()
    empty.max_loss, empty.binary = 2.0, False
    empty.loss_values, empty.loss_counts = np.array([2.0]), np.array([1], dtype=np.int64)
    empty.update([0.1], [0.0])
    assert empty.max_loss == 2.0 and empty.loss_values.tolist() == [0.0, 2.0]


def test_json_round_trip_and_refused_documents() -> None:
    _, u, ls, ood = _ood_rows(2, "grid")
    for table in (ScoreTable.from_arrays(u, ls, is_ood=ood),
                  ScoreTable.from_arrays(u, np.nan_to_num(ls))):
        again = abstain.load_json(table.to_json())
        assert again == table and again.counts.dtype == np.int64
    doc = json.loads(ScoreTable.from_arrays([0.1, 0.2], [1.0, 0.0]).to_json())
    assert doc["kind"] == "ScoreTable" and doc["params"] == {}
    bad = json.loads(json.dumps(doc))
    bad["fitted"]["counts"] = json.loads(ScoreTable.from_arrays(
        [0.1, 0.2], [0.5, 0.5]).to_json())["fitted"]["loss_sums"]
    with pytest.raises(ValueError, match="fitted.counts must hold whole numbers"):
        abstain.load_json(json.dumps(bad))
    swapped = ScoreTable.from_arrays([0.1, 0.2], [0.2, 0.1])
    swapped.values = swapped.values[::-1].copy()
    with pytest.raises(ValueError, match="fitted.values must be strictly increasing"):
        abstain.load_json(swapped.to_json())
    with pytest.raises(ValueError, match="an empty ScoreTable has nothing to write"):
        ScoreTable().to_json()


def _edited(table: ScoreTable, **fields) -> str:
    doc = json.loads(table.to_json())
    for k, v in fields.items():
        if isinstance(v, list):
            a = np.asarray(v, "<f8")
            v = {"float64_le_base64": base64.b64encode(a.tobytes()).decode(), "shape": [a.size]}
        doc["fitted"][k] = v
    return json.dumps(doc)


@pytest.mark.parametrize(("oracle", "fields", "message"), [
    (True, {"binary": True}, "fitted.binary must say whether every one of fitted.loss_values "
                             "is 0 or 1; got true."),
    (True, {"max_loss": 5.0}, "fitted.max_loss must be the largest of fitted.loss_values "
                              "(1.0); got 5.0."),
    (True, {"loss_values": [0.0, 0.25, 1.0]}, "fitted.loss_sums must add up to the sum over "
                                              "fitted.loss_values times fitted.loss_counts"),
    (False, {"binary": True}, "fitted.binary is true, so fitted.loss_sums must be whole numbers"),
])
def test_a_table_whose_loss_fields_contradict_each_other_is_refused(oracle, fields, message):
    # each field comes from the same rows: an edited one would change the metrics and rules
    rng = np.random.default_rng(0)
    u = np.round(rng.random(300), 2)
    losses = (rng.random(300) < u) * rng.choice([0.5, 1.0], 300)
    table = ScoreTable.from_arrays(u, losses, oracle=oracle)
    assert abstain.load_json(table.to_json()) == table
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        abstain.load_json(_edited(table, **fields))


def test_a_binary_table_without_its_loss_values_loads() -> None:
    table = ScoreTable.from_arrays([0.1, 0.2, 0.2], [1.0, 0.0, 1.0], oracle=False)
    assert abstain.load_json(table.to_json()) == table
    zero = ScoreTable.from_arrays([0.1, 0.2], [0.0, 0.0], oracle=False)
    assert zero.max_loss == 0.0 and abstain.load_json(zero.to_json()) == zero


def test_what_a_table_cannot_do_is_refused_with_the_reason() -> None:
    _, u, ls, ood = _ood_rows(0, "binary")
    plain = ScoreTable.from_arrays(u, np.nan_to_num(ls))
    marked = ScoreTable.from_arrays(u, ls, is_ood=ood)
    with pytest.raises(ValueError, match="ties='index' needs the row order"):
        aurc(plain, ties="index")
    with pytest.raises(ValueError, match="ties='index' needs the row order"):
        augrc(plain, ties="index")
    with pytest.raises(ValueError, match="uncertainty must be omitted when a ScoreTable"):
        aurc(plain, u)
    with pytest.raises(ValueError, match="losses must be omitted when a ScoreTable"):
        BoundedAbstention(0.5).fit(plain, ls)
    with pytest.raises(ValueError, match="has OOD marks; selective metrics"):
        aurc(marked)
    with pytest.raises(ValueError, match="has OOD marks; selective metrics"):
        CostBased(0.3).fit(marked)
    with pytest.raises(ValueError, match="has no OOD marks"):
        auroc(plain)
    with pytest.raises(ValueError, match="sample_weight must be omitted"):
        BoundedTPRFPR().fit(marked, sample_weight=np.ones(3))
    with pytest.raises(ValueError, match="must not be empty"):
        aurc(ScoreTable())
    with pytest.raises(ValueError, match="all have OOD marks or all have none"):
        ScoreTable.merge(plain, marked)
    with pytest.raises(TypeError, match=r"tables\[1\] must be a ScoreTable"):
        ScoreTable.merge(plain, [1, 2])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="built with oracle=False"):
        e_aurc(ScoreTable.from_arrays(u, np.nan_to_num(ls), oracle=False))
    only_id = ScoreTable.from_arrays([0.1, 0.2], [0.0, 1.0], is_ood=[0, 0])
    with pytest.raises(ValueError, match="got only ID in the ScoreTable"):
        auroc(only_id)
    with pytest.raises(ValueError, match="losses must not be NaN on ID rows"):
        ScoreTable.from_arrays([0.1, 0.2], [np.nan, 1.0], is_ood=[0, 1])
    with pytest.raises(ValueError, match="losses must be non-negative"):
        ScoreTable.from_arrays([0.1, 0.2], [-1.0, 1.0])
    with pytest.raises(ValueError, match="uncertainty must be finite"):
        ScoreTable.from_arrays([0.1, np.inf], [0.0, 1.0])
    with pytest.raises(ValueError, match="is_ood must hold only 0/1"):
        ScoreTable.from_arrays([0.1, 0.2], [0.0, 1.0], is_ood=[0, 2])
    with pytest.raises(ValueError, match="within the float64 range"):
        ScoreTable.from_arrays([0.1, 0.2], [1.5e308, 1.5e308])
    huge = ScoreTable.from_arrays([0.1, 0.2], [1e300, 1e300])
    assert huge.sq_loss_sums is None and aurc(huge) == aurc([1e300, 1e300], [0.1, 0.2])
    with pytest.raises(ValueError, match=r"loss_bound must be in \[2\*\*-485, 2\*\*485\] .* for "
                                         r"bound='sgr' with losses other than 0/1"):
        BoundedImprovement(0.5, delta=0.1, loss_bound=1e301).fit(huge)
    with pytest.raises(ValueError, match="losses must be given with uncertainty"):
        BoundedAbstention(0.5).fit([0.1, 0.2])
    # an OOD table tolerates NaN losses of OOD rows, a batch of one class, and OOD losses
    assert ScoreTable.from_arrays([0.1], [np.nan], is_ood=[1]).ood_counts.tolist() == [1]


def test_what_to_json_writes_load_json_reads_back_bit_for_bit() -> None:
    extremes = [-1e308, -5e-324, -0.0, 5e-324, 2.2250738585072014e-308, 1.0, 1e308]
    losses = [1.7976931348623157e308, 5e-324, 0.0, 1e-300, 4.9e-324, 0.0, 0.0]
    for table in (ScoreTable.from_arrays(extremes, losses),
                  ScoreTable.from_arrays(extremes, losses, is_ood=[0, 1, 0, 0, 1, 0, 0]),
                  ScoreTable.from_arrays(extremes, losses, oracle=True),
                  # OOD rows only: the loss distribution of the oracle part is empty
                  ScoreTable.from_arrays(extremes, losses, is_ood=[1] * 7, oracle=True)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no overflow in checking +-1e308 values
            again = abstain.load_json(table.to_json())
        assert again == table
        for name in table._FIELDS:
            a, b = getattr(table, name), getattr(again, name)
            assert (a is None and b is None) or np.asarray(a, np.float64).tobytes() == \
                np.asarray(b, np.float64).tobytes(), name


def test_a_loaded_table_is_checked_as_from_arrays_checks_it() -> None:
    doc = json.loads(ScoreTable.from_arrays([0.1, 0.2], [1.0, 1.0]).to_json())
    huge = json.loads(json.dumps(doc))
    huge["fitted"]["loss_sums"]["float64_le_base64"] = base64.b64encode(
        np.array([1e308, 1e308], dtype="<f8").tobytes()).decode()
    with pytest.raises(ValueError, match=r"^fitted\.loss_sums must have a sum within the "
                       r"float64 range; got a sum that overflows\.$"):
        abstain.load_json(json.dumps(huge))
    # a group's loss sum is at most its ID rows times the largest loss
    over = json.loads(json.dumps(doc))
    over["fitted"]["loss_sums"]["float64_le_base64"] = base64.b64encode(
        np.array([1e308, 1.0], dtype="<f8").tobytes()).decode()
    with pytest.raises(ValueError, match=r"^fitted\.loss_sums must be at most the ID rows of "
                       r"each group times fitted\.max_loss \(1\.0\); got 1e\+308 for 1 ID "
                       r"row\(s\) in group 0\.$"):
        abstain.load_json(json.dumps(over))
    for n in (1, 3, 1000):  # sums of many equal largest losses stay within the bound
        rows = ScoreTable.from_arrays(np.zeros(n), np.full(n, 0.1))
        assert abstain.load_json(rows.to_json()) == rows
    marked = json.loads(ScoreTable.from_arrays([0.1, 0.2], [1.0, 0.0], is_ood=[0, 1],
                                               oracle=True).to_json())
    marked["fitted"]["ood_counts"] = None  # every row ID: 2 ID rows for 1 loss
    with pytest.raises(ValueError, match=r"^fitted\.loss_counts must add up to the ID rows "
                       r"\(fitted\.counts less fitted\.ood_counts, where the table has OOD "
                       r"marks\); got 1 losses for 2 ID rows\.$"):
        abstain.load_json(json.dumps(marked))


def test_merge_called_on_a_table_merges_that_table_too():
    """``a.merge(b)`` is ``ScoreTable.merge(a, b)`` (as a plain classmethod it returned b's
    rows alone and dropped a's), for the three tables."""
    from abstain import BinnedTable, PairTable

    rng = np.random.default_rng(0)
    u, losses = rng.integers(0, 5, 30).astype(float), rng.integers(0, 2, 30).astype(float)
    ood = rng.random(30) < 0.3
    parts = [slice(0, 10), slice(10, 25), slice(25, 30)]
    tables = [ScoreTable.from_arrays(u[p], losses[p], is_ood=ood[p]) for p in parts]
    whole = ScoreTable.from_arrays(u, losses, is_ood=ood)
    assert tables[0].merge(tables[1], tables[2]) == whole == ScoreTable.merge(*tables)
    assert tables[0].merge() == tables[0]
    edges = np.arange(6) - 0.5
    binned = [BinnedTable.from_arrays(u[p], losses[p], edges=edges) for p in parts]
    got, want = binned[0].merge(*binned[1:]), BinnedTable.merge(*binned)
    for field in ("counts", "ood_counts", "loss_sums", "lows", "highs"):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field))
    assert got.counts.sum() == 30
    s2 = np.c_[u, rng.integers(0, 3, 30)]
    pairs = [PairTable.from_arrays(s2[p], losses[p], is_ood=ood[p]) for p in parts]
    assert pairs[0].merge(*pairs[1:]) == PairTable.merge(*pairs)
    assert pairs[0].merge(*pairs[1:]).n == 30


def test_a_copy_or_a_field_set_while_batches_are_pending_keeps_what_it_is_given() -> None:
    # a shallow copy shared the pending parts, and a field set before the merge was then
    # overwritten by it (the scaled grid copies a PairTable and sets its values)
    import copy

    rng = np.random.default_rng(2)
    u, ls = rng.random(60), (rng.random(60) < 0.4).astype(float)
    table = ScoreTable()
    for p in np.array_split(np.arange(60), 6):
        table.update(u[p], ls[p])
    twin = copy.copy(table)
    twin.update([0.5], [1.0])
    assert table.n == 60 and twin.n == 61
    table.values = table.values * 2.0  # set while nothing is pending any more
    assert np.array_equal(table.values, np.sort(u) * 2.0)
    again = ScoreTable()
    for p in np.array_split(np.arange(60), 6):
        again.update(u[p], ls[p])
    again.max_loss = 3.0  # set while parts are pending: the merge comes first
    assert again.max_loss == 3.0 and again.n == 60


def test_loaded_counts_that_add_up_past_int64_are_refused() -> None:
    """2048 groups of 2**52 rows each pass the bound on one count, but their int64 total
    wrapped to -2**63, and the AURC came out -0.4988 instead of 0.4989."""
    g = 2048
    table = ScoreTable.from_arrays(np.arange(g) / g, (np.arange(g) % 2).astype(float))
    no_oracle = {"loss_values": None, "loss_counts": None, "sq_loss_sums": None}
    doc = _edited(table, counts=[2.0**52] * g,
                  loss_sums=np.where(np.arange(g) % 2, 2.0**52, 0.0).tolist(), **no_oracle)
    with pytest.raises(ValueError, match=r"^fitted\.counts must add up to fewer than 2\*\*62 "
                                         r"rows; got about 9\.22337e\+18\.$"):
        abstain.load_json(doc)
    pairs = abstain.PairTable.from_arrays(np.c_[np.arange(g), np.arange(g)],
                                          np.zeros(g), is_ood=np.arange(g) % 2 == 1)
    pdoc = json.loads(pairs.to_json())
    for field, value in (("counts", 2.0**52), ("ood_counts", 0.0)):
        a = np.full(g, value, "<f8")
        pdoc["fitted"][field] = {"float64_le_base64": base64.b64encode(a.tobytes()).decode(),
                                 "shape": [g]}
    with pytest.raises(ValueError, match=r"^fitted\.counts must add up to fewer than 2\*\*62"):
        abstain.load_json(json.dumps(pdoc))
    # just below the bound: loaded, with the row count in int64
    ok = _edited(table, counts=[2.0**52] * 1023 + [1.0] * 1025,
                 loss_sums=np.where(np.arange(g) % 2, [2.0**52] * 1023 + [1.0] * 1025,
                                    0.0).tolist(), **no_oracle)
    assert abstain.load_json(ok).n == 1023 * 2**52 + 1025


def test_merges_and_totals_that_add_up_past_int64_are_refused() -> None:
    """Three tables of 2**62 - 2**51 rows each merged into -1.2e18 rows and an AURC of
    -1.49; ``from_totals`` took 2**63 rows (n = -2**63)."""
    g = 2047
    table = ScoreTable.from_arrays(np.arange(g) / g, (np.arange(g) % 2).astype(float))
    big = abstain.load_json(_edited(
        table, counts=[2.0**51] * g, loss_sums=np.where(np.arange(g) % 2, 2.0**51, 0.0).tolist(),
        loss_values=None, loss_counts=None, sq_loss_sums=None))
    assert big.n == g * 2**51
    with pytest.raises(ValueError, match=r"^the rows of the merged tables must add up to fewer "
                                         r"than 2\*\*62 rows; got about 1\.38283e\+19; merge "
                                         r"fewer rows \(a sample of them\)\.$"):
        ScoreTable.merge(big, big, big)
    c = np.full(2048, 2.0**52)
    with pytest.raises(ValueError, match=r"^counts must add up to fewer than 2\*\*62 rows"):
        ScoreTable.from_totals(np.arange(2048.0), c, np.zeros(2048), loss_values=[0.0],
                               loss_counts=[1])  # the counts are checked first
    with pytest.raises(ValueError, match=r"^counts must add up to fewer than 2\*\*62 rows"):
        abstain.PairTable.from_totals(np.c_[np.arange(2048.0), np.arange(2048.0)], c,
                                      np.zeros(2048), np.zeros(2048), max_loss=1.0)


def test_update_refuses_a_batch_past_2_62_rows_and_keeps_the_table() -> None:
    """A batch that took a table past 2**62 rows joined it: the next read of a field failed,
    and every one after it found no field at all."""
    k = 1024  # 2**62 - 1024 rows: a table that from_totals takes
    c = np.full(k, 2.0**52 - 1)
    for distinct in (1, 2000):
        table = ScoreTable.from_totals(np.arange(k) / k, c, np.zeros(k), loss_values=[],
                                       loss_counts=[], ood_counts=c)
        x = np.full(2000, 2.0) if distinct == 1 else np.linspace(2, 3, 2000)
        with pytest.raises(ValueError, match=r"^the rows of the table with this batch must add "
                                             r"up to fewer than 2\*\*62 rows"):
            table.update(x, np.zeros(2000), is_ood=np.ones(2000, bool))
        assert table.n == k * (2**52 - 1) and table.counts.size == k
    pairs = abstain.PairTable.from_totals(np.c_[np.arange(k), np.arange(k)] / k, c, c,
                                          np.zeros(k), max_loss=0.0)
    with pytest.raises(ValueError, match=r"^the rows of the table with this batch"):
        pairs.update(np.full((2000, 2), 2.0), np.full(2000, np.nan), is_ood=np.ones(2000, bool))
    assert pairs.n == k * (2**52 - 1)
    # 2**62 - 1 rows in all: summed in float64 they round to 2**62, yet they are below it
    last = np.r_[np.full(k - 1, 2.0**52), 2.0**52 - 1]
    near = ScoreTable.from_totals(np.arange(k) / k, last, np.zeros(k), loss_values=[],
                                  loss_counts=[], ood_counts=last)
    assert near.n == 2**62 - 1


def test_row_totals_are_counted_exactly_and_equal_scores_within_2_53() -> None:
    from abstain.tables._parts import check_total_rows

    # many small parts beside a large one: a float64 running total rounded them away
    parts = [np.array([2**62 - 2**23], dtype=np.int64)] + [np.array([255])] * 33_000
    with pytest.raises(ValueError, match=r"^parts must add up to fewer than 2\*\*62 rows"):
        check_total_rows(parts, "parts")
    check_total_rows(parts[:-200], "parts")  # 2**62 - 2**23 + 32,800 * 255: below
    # from_totals grouped equal scores in float64: 2**53 - 1 and 2 at one score made 2**53
    with pytest.raises(ValueError, match=r"^counts of equal values must add up to fewer than "
                                         r"2\*\*53 rows at one value"):
        ScoreTable.from_totals([0.5, 0.5], [2.0**53 - 1, 2.0], [0.0, 0.0],
                               loss_values=[0.0, 1.0], loss_counts=[2**52, 2**52 + 1])
    with pytest.raises(ValueError, match=r"^loss_counts of equal values must add up"):
        ScoreTable.from_totals([0.25, 0.5], [2.0**52, 2.0**52], [0.0, 0.0],
                               loss_values=[0.0, 0.0], loss_counts=[2**52, 2**52])
    with pytest.raises(ValueError, match=r"^counts of equal values must add up"):
        abstain.PairTable.from_totals([[0.5, 0.5], [0.5, 0.5]], [2.0**53 - 1, 1.0], [0, 0],
                                      [0.0, 0.0], max_loss=1.0)
