"""abstain.metrics._registry: every public metric is registered, entries are checked, and a
registered metric reaches StreamingMetric and evaluate_ood by name alone."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import abstain.metrics as m
from abstain.metrics import (
    METRICS,
    MetricSpec,
    StreamingMetric,
    aurc,
    evaluate_ood,
    evaluate_ood_tables,
    fpr_at_tpr,
    register_metric,
)
from abstain.tables import PairTable, ScoreTable

#: Public functions of abstain.metrics that are no entry of the registry, and why.
NOT_METRICS = {
    "ood_roc_curve": "a curve of OOD detection, drawn, not a value",
    "ood_pr_curve": "a curve of OOD detection, drawn, not a value",
    "risk_coverage_curve_at_fpr": "a curve, drawn by RiskAtFPRDisplay",
    "neg_aurc_scorer": "a scorer of model selection (estimator, X, y)",
    "neg_selective_risk_scorer": "a scorer of model selection (estimator, X, y)",
    "coverage_at_risk_scorer": "a scorer of model selection (estimator, X, y)",
    "bootstrap_indices": "bootstrap machinery",
    "bootstrap_interval": "bootstrap machinery",
    "check_bootstrap": "bootstrap machinery",
    "metric_replicates": "bootstrap machinery: the registry's metrics on many resamples",
    "resample_counts": "bootstrap machinery",
    "check_pair_search": "the check of the search option of a pair's metrics",
    "resolve_search": "how the search option of a pair's metrics computes them, on what",
    "evaluate_ood": "the table of the registry's OOD metrics",
    "evaluate_ood_tables": "the table of the registry's OOD metrics",
    "register_metric": "the registry itself",
}

#: The columns of the command line's metric table, in order.
TABLE = ["aurc", "e_aurc", "augrc", "selective_risk_at_coverage", "auroc", "aupr_in",
         "aupr_out", "fpr_at_tpr", "oscr", "selective_risk_at_tpr_fpr"]


def _public_functions():
    return {name for name in m.__all__
            if inspect.isfunction(getattr(m, name))}


def test_every_public_metric_function_is_registered():
    missing = _public_functions() - set(NOT_METRICS) - set(METRICS)
    assert not missing, f"register these metrics in abstain.metrics._registry: {missing}"
    assert set(NOT_METRICS) <= _public_functions()  # an exception no name needs leaves
    assert {name: spec.function for name, spec in METRICS.items()} == {
        name: getattr(m, name) for name in METRICS}


def test_the_table_keeps_its_columns_and_order():
    assert [s.name for s in METRICS.values() if s.table] == TABLE
    assert [s.kind for s in METRICS.values() if s.table] == ["selective"] * 4 + ["ood"] * 6
    for spec in METRICS.values():
        if spec.table:
            assert spec.label and spec.glossary, spec.name
            assert spec.higher_is_better in (True, False), spec.name


def test_pair_says_which_metrics_take_a_score_pair():
    """``MetricSpec.pair`` is set exactly for the OOD metrics that take two score columns."""
    rng = np.random.default_rng(0)
    ood = np.arange(60) % 3 == 0
    s = rng.normal(size=(60, 2))
    losses = (rng.random(60) < 0.3).astype(float)
    targets = {"tpr": 0.5, "fpr": 0.5, "precision": 0.5, "recall": 0.5, "false_alarm": 0.5,
               "coverage": 0.5}
    for spec in METRICS.values():
        if spec.kind != "ood":
            continue
        params = inspect.signature(spec.function).parameters
        kw = {k: v for k, v in targets.items() if k in params}
        args = (losses, ood) if "losses" in params else (ood,)
        if spec.pair:
            assert np.all(np.isfinite(spec.function(*args, s, **kw))), spec.name
        else:
            with pytest.raises(ValueError, match="must be one column"):
                spec.function(*args, s, **kw)


def test_instances_keys_labels_and_matching():
    spec = METRICS["selective_risk_at_tpr_fpr"]
    settings = {"coverage": (0.8,), "tpr": (0.95,), "fpr": (1e-05,)}
    (key, label, options), = spec.instances(settings)
    assert (key, label) == ("risk@tpr0.95,fpr1e-05", "risk at TPR>=95%, FPR<=0.001%")
    assert options == {"tpr": 0.95, "fpr": 1e-05}
    assert spec.infeasible_note(options) == ("infeasible: no rule on these rows keeps TPR >= "
                                             "95% with FPR <= 0.001%")
    assert spec.matches(key) and not METRICS["selective_risk_at_coverage"].matches(key)
    assert METRICS["selective_risk_at_coverage"].matches("risk@0.8")
    assert not METRICS["aurc"].matches("e_aurc") and not METRICS["aurc"].matches("aurc2")
    assert not METRICS["risk_coverage_curve"].matches("risk_coverage_curve")  # no column
    # settings that differ beyond six digits get keys and labels of their own
    near = METRICS["selective_risk_at_coverage"].instances({"coverage": (0.8, 0.8000001)})
    assert [(k, label) for k, label, _ in near] == [
        ("risk@0.8", "risk at coverage 80%"), ("risk@0.8000001", "risk at coverage 80.00001%")]
    assert all(METRICS["selective_risk_at_coverage"].matches(k) for k, _, _ in near)
    assert METRICS["auroc"].truth == ("is_ood",)
    assert METRICS["oscr"].truth == ("losses", "is_ood")
    assert METRICS["aurc"].truth == ("losses",)


def half_aurc(losses, uncertainty=None):
    return aurc(losses, uncertainty) / 2


def tnr_at_tpr_plus(is_ood, scores=None, *, tpr=0.95):
    return 1.0 - fpr_at_tpr(is_ood, scores, tpr)


@pytest.fixture
def toy():
    specs = [register_metric(MetricSpec(half_aurc, "selective", "half AuRC", "half AuRC")),
             register_metric(MetricSpec(tnr_at_tpr_plus, "ood", "TNR+ at TPR {tpr}",
                                        "TNR+: 1 - FPR at TPR t", key="tnr+@{tpr}",
                                        params=("tpr",), higher_is_better=True))]
    yield specs
    for spec in specs:
        METRICS.pop(spec.name)


def test_a_registered_metric_is_streamed_and_a_column_of_evaluate_ood(toy):
    rng = np.random.default_rng(0)
    losses, s, ood = rng.integers(0, 2, 50).astype(float), rng.random(50), rng.random(50) < .3
    tracker = StreamingMetric("half_aurc").update(losses[:20], s[:20])
    assert tracker.update(losses[20:], s[20:]).compute() == aurc(losses, s) / 2
    table = evaluate_ood(losses, ood, {"s": s, "pair": np.column_stack([s, losses])}, tpr=0.8,
                         fpr=0.9)
    assert table.metrics[-1] == "tnr_at_tpr_plus"
    assert table.row("s")["tnr_at_tpr_plus"] == 1 - fpr_at_tpr(ood, s, 0.8)
    assert "tnr_at_tpr_plus" not in table.row("pair")  # takes one column
    tabled = evaluate_ood_tables({"s": ScoreTable.from_arrays(s, losses, is_ood=ood)}, tpr=0.8,
                                 fpr=0.9)
    assert tabled.row("s") == table.row("s")
    with pytest.raises(TypeError, match="options of tnr_at_tpr_plus must be among tpr"):
        StreamingMetric("tnr_at_tpr_plus", coverage=0.5)


def strict_risk(losses, uncertainty=None, *, coverage=0.5):
    """A user's metric: NaN and an InfeasibleTargetWarning of its own past coverage 0.9."""
    import warnings

    from abstain import InfeasibleTargetWarning

    if coverage > 0.9:
        warnings.warn(InfeasibleTargetWarning("strict_risk: infeasible"), stacklevel=2)
        return float("nan")
    return aurc(losses, uncertainty)


def test_the_library_silences_its_own_warnings_and_leaves_the_filters_alone():
    # silencing by the process's filters (catch_warnings) is not thread-safe: a registered
    # metric's own warnings pass through, the library's are silenced for this call only,
    # and a metric of the user's is not run on the probe table at construction
    import warnings

    from abstain import InfeasibleTargetWarning
    from abstain.metrics import metric_replicates, resample_counts
    from abstain.tables import TableResampler

    spec = register_metric(MetricSpec(strict_risk, "selective", table=False))
    try:
        rng = np.random.default_rng(0)
        r = TableResampler(rng.random(50), (rng.random(50) < 0.3) * 1.0)
        counts = resample_counts(rng.integers(0, 50, (5, 50)), 50)
        before = list(warnings.filters)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert np.isnan(metric_replicates(r, counts, [(spec, {"coverage": 0.95})])).all()
            StreamingMetric("strict_risk", coverage=0.95)  # not run on the probe
            ood = rng.random(50) < 0.3
            marked = TableResampler(rng.random(50), np.where(ood, np.nan, 0.0), is_ood=ood)
            got = metric_replicates(marked, counts, [(METRICS["selective_risk_at_tpr_fpr"],
                                                      {"tpr": 1.0, "fpr": 0.0})])
        assert [str(w.message) for w in caught] == ["strict_risk: infeasible"] * 5
        assert all(w.category is InfeasibleTargetWarning for w in caught)
        assert got.shape == (5, 1) and warnings.filters == before
    finally:
        METRICS.pop(spec.name)


@pytest.mark.parametrize("search", ["auto", "exact", "grid"])
def test_evaluate_ood_tables_equals_evaluate_ood_on_the_rows(search):
    rng = np.random.default_rng(1)
    n = 80
    ood = rng.random(n) < 0.4
    losses = np.where(ood, 0.0, rng.integers(0, 2, n).astype(float))
    a, b = rng.integers(0, 5, n).astype(float), np.round(rng.normal(size=n), 1) + ood
    rows = evaluate_ood(losses, ood, {"a": a, "a+b": np.column_stack([a, b])}, tpr=0.8,
                        fpr=0.3, search=search)
    tables = evaluate_ood_tables({"a": ScoreTable.from_arrays(a, losses, is_ood=ood),
                                  "a+b": PairTable.from_arrays(np.column_stack([a, b]), losses,
                                                               is_ood=ood)},
                                 tpr=0.8, fpr=0.3, search=search)
    assert tables.metrics == rows.metrics and tables.search == rows.search
    np.testing.assert_array_equal(tables.applicable, rows.applicable)
    np.testing.assert_array_equal(tables.values, rows.values)
    assert np.isnan(tables.low).all() and tables.n_bootstrap == 0


def test_evaluate_ood_tables_refuses_bad_input():
    with pytest.raises(ValueError, match=r"tables must be a non-empty dict .*; got dict \(empty"):
        evaluate_ood_tables({})
    with pytest.raises(ValueError, match=r"tables\['s'\] must be a ScoreTable or a PairTable; "
                                         "got ndarray"):
        evaluate_ood_tables({"s": np.zeros(3)})


@pytest.mark.parametrize(("spec", "match"), [
    (MetricSpec(aurc, "selective", "AuRC"), "spec.function must have a new name; got 'aurc'"),
    (MetricSpec(half_aurc, "other", "x"), "spec.kind must be one of 'selective', 'ood'; got "
                                          "'other'"),
    (MetricSpec(half_aurc, "selective", "x", params=("tpr",)),
     r"spec.params must be among \('coverage',\) and arguments of half_aurc; got 'tpr'"),
    (MetricSpec(tnr_at_tpr_plus, "ood", "x", params=("tpr",)),
     r"spec.key must have one field of each parameter \('tpr',\); got 'tnr_at_tpr_plus'"),
    (MetricSpec(half_aurc, "selective"), "spec.label must be given for a metric of the table"),
    (MetricSpec(half_aurc, "selective", "x", pair="envelope"),
     "spec.pair must be None, 'envelope' or 'rule' .*; got 'envelope' for a selective"),
    ("aurc", "spec must be a MetricSpec; got 'aurc'"),
])
def test_register_metric_refuses_a_bad_entry(spec, match):
    with pytest.raises(ValueError, match=match):
        register_metric(spec)
    assert "half_aurc" not in METRICS


@pytest.mark.parametrize(("extra", "match"), [
    ({"key": "aurc"}, r"^spec\.key must be new; got 'aurc'"),
    ({"column": "auroc"}, r"^spec\.column must be new; got 'auroc'")])
def test_a_key_or_column_in_use_is_refused(extra, match):
    """A registered metric of the same key or evaluate_ood column had its value replaced."""
    from abstain.metrics import METRICS, MetricSpec, register_metric

    def zero_metric(losses, uncertainty):
        return 0.0

    with pytest.raises(ValueError, match=match):
        register_metric(MetricSpec(zero_metric, "selective", label="Zero", **extra))
    assert "zero_metric" not in METRICS
