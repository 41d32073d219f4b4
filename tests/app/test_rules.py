"""abstain.app.rules: fit_rule is the model's own fit, infeasible targets name what is
attainable, rule files round-trip with their columns, apply_rule is the rule's accept."""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from abstain import InfeasibleTargetWarning
from abstain import metrics as m
from abstain.app.rules import (
    InfeasibleTargetError,
    apply_rule,
    fit_rule,
    load_rule,
    rule_columns,
    rule_to_json,
)
from abstain.app.tables import prepare
from abstain.models import (
    BoundedAbstention,
    BoundedImprovement,
    BoundedPrecisionRecall,
    BoundedTPRFPR,
    CostBased,
    CostBasedOOD,
    least_fpr_at_tpr,
    least_risk_bound,
    most_recall_at_precision,
)


def _table(seed: int = 0, n: int = 60) -> dict[str, np.ndarray]:
    """Scores rounded to one decimal (many ties); a quarter OOD rows with an empty loss."""
    rng = np.random.default_rng(seed)
    ood = np.arange(n) % 4 == 0
    u = np.round(rng.random(n), 1)
    loss = (rng.random(n) < u).astype(float)
    loss[ood] = np.nan
    g = np.round(rng.normal(np.where(ood, 1.5, 0.0), 1.0), 1)
    return {"loss": loss, "u": u, "g": g, "is_ood": ood.astype(float)}


T = _table()
OOD = T["is_ood"] == 1
LOSS = np.where(OOD, 0.0, T["loss"])
ID_ONLY = {"loss": np.nan_to_num(T["loss"]), "u": T["u"], "g": T["g"]}
ONE_COLUMN = (BoundedAbstention, BoundedImprovement, CostBased)

# (score columns, OOD score, fit_rule targets, the model fitted directly with random_state=0)
SELECTIVE = [
    ({"target_coverage": 0.7}, BoundedAbstention(target_coverage=0.7, random_state=0)),
    ({"target_risk": 0.3}, BoundedImprovement(target_risk=0.3, random_state=0)),
    ({"target_risk": 0.5, "delta": 0.1},
     BoundedImprovement(target_risk=0.5, delta=0.1, random_state=0)),
    ({"reject_cost": 0.3}, CostBased(reject_cost=0.3, random_state=0)),
]
OOD_MODELS = [
    ({"tpr": 0.8, "fpr": 0.5}, BoundedTPRFPR(tpr=0.8, fpr=0.5, random_state=0)),
    ({"precision": 0.8, "recall": 0.7},
     BoundedPrecisionRecall(precision=0.8, recall=0.7, random_state=0)),
    ({"precision": 0.6, "recall": 0.7, "ood_prior": 0.1},
     BoundedPrecisionRecall(precision=0.6, recall=0.7, ood_prior=0.1, random_state=0)),
    ({"reject_id_cost": 0.5, "predict_ood_cost": 1.0},
     CostBasedOOD(0.5, 1.0, 0.0, random_state=0)),
    ({"reject_id_cost": 0.6, "predict_ood_cost": 1.0, "reject_ood_cost": 0.1, "ood_prior": 0.4},
     CostBasedOOD(0.6, 1.0, 0.1, ood_prior=0.4, random_state=0)),
]
CASES = ([(["u"], None, kw, model) for kw, model in SELECTIVE]
         + [(["g"], None, kw, model) for kw, model in OOD_MODELS]
         + [(["u"], "g", kw, model) for kw, model in OOD_MODELS])
IDS = [f"{type(model).__name__}-{'+'.join(cols + [g] if g else cols)}-{i}"
       for i, (cols, g, _, model) in enumerate(CASES)]


def _direct(cols, ood_score, model):
    """The model fitted by hand on the table's arrays (not through prepare)."""
    if isinstance(model, ONE_COLUMN):
        return model.fit(T[cols[0]][~OOD], T["loss"][~OOD])
    s = np.stack([T[c] for c in cols + ([ood_score] if ood_score else [])], axis=1)
    return model.fit(s, OOD, LOSS)


@pytest.mark.parametrize("cols, ood_score, targets, model", CASES, ids=IDS)
def test_fit_rule_is_the_models_own_fit(cols, ood_score, targets, model):
    rule = fit_rule(prepare(T, scores=cols, ood_score=ood_score), **targets)
    expected = _direct(cols, ood_score, model)
    assert type(rule) is type(expected) and rule.feasible_
    assert rule.threshold_ > -np.inf  # a rule that accepts some rows
    assert rule.threshold_ == expected.threshold_
    assert rule.accept_prob_ == expected.accept_prob_
    assert rule.to_json() == expected.to_json()  # every parameter and fitted attribute


def test_selective_models_fit_on_the_id_rows_only():
    rule = fit_rule(prepare(T, scores=["u"]), target_coverage=0.7)
    assert rule.n_samples_ == int((~OOD).sum()) == 45
    assert fit_rule(prepare(T, scores=["u"]), target_coverage=0.7,
                    random_state=5).random_state == 5


def test_infeasible_target_risk_names_the_lowest_attainable_risk():
    data = prepare({"loss": [1, 0, 0, 1, 1], "u": [0.1, 0.2, 0.3, 0.4, 0.5]})
    with pytest.raises(InfeasibleTargetError) as exc:
        fit_rule(data, target_risk=0.1)
    # the least risk is 1/3, printed rounded up so that the printed value is feasible
    assert str(exc.value) == ("target risk 0.1 is infeasible: no threshold rule's selective risk "
                             "is at or below it; the lowest selective risk attainable on these "
                             "5 rows is 0.3334.")
    assert isinstance(exc.value, ValueError)
    assert fit_rule(data, target_risk=0.3334).feasible_
    with pytest.raises(InfeasibleTargetError):
        fit_rule(data, target_risk=0.3333)


def test_infeasible_risk_bound_names_the_least_attainable_bound():
    data = prepare(T, scores=["u"])
    with pytest.raises(InfeasibleTargetError) as exc:
        fit_rule(data, target_risk=0.05, delta=0.1)
    found = re.fullmatch(
        r"target risk 0\.05 with delta 0\.1 is infeasible for bound='binomial': the threshold "
        r"where the learning rows start its sequence for this target fails its test; the least "
        r"target that it meets with delta 0\.1 on these 45 rows is ([0-9.]+); the lowest "
        r"empirical selective risk is 0, and a bound nearer to it needs more rows or a larger "
        r"delta\.", str(exc.value))
    assert found, str(exc.value)
    printed = float(found.group(1))
    least = least_risk_bound(T["u"][~OOD], T["loss"][~OOD], 0.1)
    assert least <= printed <= least * (1 + 1e-3)  # four digits, rounded up
    assert fit_rule(data, target_risk=printed, delta=0.1).feasible_
    with pytest.raises(InfeasibleTargetError):
        fit_rule(data, target_risk=least * (1 - 1e-6), delta=0.1)


def _ties(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The data of a fit whose feasibility is not monotone in the target (with delta 0.05):
    few distinct scores, a risk that does not grow with the score."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 400))
    u = rng.integers(0, int(rng.integers(2, 30)), n).astype(float)
    return u, (rng.random(n) < rng.random()).astype(float)


def _feasible(u, loss, target, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleTargetWarning)
        return BoundedImprovement(target, **params).fit(u, loss).feasible_


def test_least_risk_bound_is_below_every_target_the_fit_meets():
    # Learn-then-Test certifies a bound of 0.378 at the target 0.66, and the least target
    # was given as 0.865: a bisection on the target, which assumed feasibility monotone.
    u, loss = _ties(46)
    rule = BoundedImprovement(0.66, delta=0.05).fit(u, loss)
    assert rule.feasible_ and rule.bound_ == "binomial" and rule.risk_bound_ < 0.38
    least = least_risk_bound(u, loss, 0.05)
    assert least <= 0.66
    assert _feasible(u, loss, least, delta=0.05)
    assert not _feasible(u, loss, math.nextafter(least, 0.0), delta=0.05)
    # not monotone: 0.8 fails, and the least target at or above it is named
    assert not _feasible(u, loss, 0.8, delta=0.05)
    above = least_risk_bound(u, loss, 0.05, above=0.8)
    assert 0.8 < above < 1.0 and _feasible(u, loss, above, delta=0.05)
    assert not _feasible(u, loss, math.nextafter(above, 0.0), delta=0.05)


def _message_numbers(message: str) -> list[float]:
    return [float(x) for x in re.findall(r"(?<![\w.])[0-9]+(?:\.[0-9]+)?(?:e-?[0-9]+)?", message)]


@pytest.mark.parametrize("bound", ["sgr", "binomial", "hb", "wsr"])
@pytest.mark.parametrize("seed", [46, 1, 68, 7])
def test_every_target_in_an_infeasible_message_is_met_as_it_says(bound, seed):
    u, loss = _ties(seed)
    if bound in ("hb", "wsr"):
        loss = np.round(loss * np.random.default_rng(seed).random(loss.size) * 8) / 8
    data = prepare({"loss": loss, "u": u})
    params = {"delta": 0.05, "bound": bound}
    grid = np.linspace(0.01, 0.99, 99)
    feasible = np.array([_feasible(u, loss, t, **params) for t in grid])
    for target in (0.01, *grid[~feasible][-1:]):
        with pytest.raises(InfeasibleTargetError, match=r"is infeasible for bound=") as exc:
            fit_rule(data, target_risk=float(target), **params)
        message = str(exc.value)
        targets = re.findall(r"(?:the least target that it meets with delta 0\.05 on these "
                             r"\d+ rows is|the least target at or above [0-9.e-]+ that it meets "
                             r"is) ([0-9.e-]+)", message)
        assert len(targets) == 1 + ("at or above" in message), message
        for printed in map(float, targets):
            assert _feasible(u, loss, printed, **params), message
        least = least_risk_bound(u, loss, 0.05, bound=bound)
        assert float(targets[0]) >= least
        assert float(targets[0]) <= least * (1 + 1e-3) or "at or above" not in message
        assert not _feasible(u, loss, math.nextafter(least, 0.0), **params)
        assert not np.any(feasible[grid < least])  # feasible only from the least target on
        if len(targets) == 2:  # a target beyond the least failed: the next feasible one
            after = least_risk_bound(u, loss, 0.05, bound=bound, above=float(target))
            assert after > target and float(targets[1]) >= after
            assert not _feasible(u, loss, math.nextafter(after, 0.0), **params)
            assert not np.any(feasible[(grid >= target) & (grid < after)])
        assert all(x > 0 for x in _message_numbers(message)[1:] if x < 1)


@pytest.mark.parametrize("kwargs, message", [
    ({"target_coverage": 0.5, "delta": 0.1}, "--delta must come with --target-risk; got it "
                                             "with --target-coverage."),
    ({"target_risk": 0.2, "bound": "sgr"}, "--bound must come with --target-risk and --delta; "
                                           "got --bound sgr without --delta."),
    ({"target_risk": 0.2, "delta": 0.1, "bound": "binomial", "loss_bound": 0.5},
     "losses must be at most --loss-bound 0.5 for the risk bound; got maximum 1.0."),
    ({"target_risk": 0.2, "delta": 2.0}, "--delta must be"),
    ({"target_coverage": 0.5, "ood_prior": 0.1},
     "--ood-prior must come with --precision and --recall or with --reject-id-cost and "
     "--predict-ood-cost; got it with --target-coverage."),
    ({"recall": 0.9}, "--precision and --recall must be given together."),
    ({"tpr": 0.9}, "--tpr and --fpr must be given together."),
    ({}, "exactly one target must be given (--target-coverage, --target-risk, --reject-cost, "
         "--tpr and --fpr, --precision and --recall, or --reject-id-cost and "
         "--predict-ood-cost); got none."),
])
def test_fit_rule_names_the_options_of_the_command_line(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        fit_rule(prepare(T, scores=["u"]), options=True, **kwargs)


def test_infeasible_message_names_the_options_of_the_command_line():
    with pytest.raises(InfeasibleTargetError, match=r"^target risk 0\.05 with --delta 0\.1 is "
                       r"infeasible for --bound sgr: .* a larger --delta\.$"):
        fit_rule(prepare(T, scores=["u"]), target_risk=0.05, delta=0.1, bound="sgr",
                 options=True)


@pytest.mark.parametrize("cols, ood_score", [(["g"], None), (["u"], "g")])
def test_infeasible_tpr_fpr_names_the_attainable_rates(cols, ood_score):
    data = prepare(T, scores=cols, ood_score=ood_score)
    with pytest.raises(InfeasibleTargetError) as exc:
        fit_rule(data, tpr=0.95, fpr=0.1)
    found = re.fullmatch(
        r"TPR >= 0\.95 with FPR <= 0\.1 is infeasible: at FPR <= 0\.1 the highest attainable "
        r"TPR is ([0-9.]+); at TPR >= 0\.95 the lowest attainable FPR is ([0-9.]+?)\.",
        str(exc.value))
    assert found, str(exc.value)
    tpr, fpr = float(found.group(1)), float(found.group(2))
    s = data.stacked(rule_columns(BoundedTPRFPR(), data))
    best = m.ood_roc_curve(OOD, s, fpr=[0.1]).tpr[0]
    least = least_fpr_at_tpr(s, OOD, 0.95)
    assert best * (1 - 1e-3) <= tpr <= best and 0 < tpr
    assert least <= fpr <= least * (1 + 1e-3) and fpr < 1
    assert fit_rule(data, tpr=tpr, fpr=0.1).feasible_
    assert fit_rule(data, tpr=0.95, fpr=fpr).feasible_
    with pytest.raises(InfeasibleTargetError):
        fit_rule(data, tpr=0.95, fpr=least * (1 - 1e-6))


@pytest.mark.parametrize("cols, ood_score", [(["g"], None), (["u"], "g")])
def test_infeasible_precision_recall_names_the_attainable_rates(cols, ood_score):
    data = prepare(T, scores=cols, ood_score=ood_score)
    with pytest.raises(InfeasibleTargetError) as exc:
        fit_rule(data, precision=0.99, recall=0.9)
    found = re.fullmatch(
        r"precision >= 0\.99 with recall >= 0\.9 is infeasible: at recall >= 0\.9 the highest "
        r"attainable precision is ([0-9.]+); at precision >= 0\.99 the highest attainable "
        r"recall is ([0-9.]+?)\.", str(exc.value))
    assert found, str(exc.value)
    precision, recall = float(found.group(1)), float(found.group(2))
    s = data.stacked(rule_columns(BoundedPrecisionRecall(), data))
    best = m.ood_pr_curve(OOD, s, recall=[0.9]).precision[0]
    most = most_recall_at_precision(s, OOD, 0.99)
    assert best * (1 - 1e-3) <= precision <= best
    assert most * (1 - 1e-3) <= recall <= most and 0 < recall
    assert fit_rule(data, precision=precision, recall=0.9).feasible_
    assert fit_rule(data, precision=0.99, recall=recall).feasible_
    with pytest.raises(InfeasibleTargetError):
        fit_rule(data, precision=0.99, recall=min(most * (1 + 1e-6), 1.0))


@pytest.mark.parametrize("cols, ood_score, targets, model", CASES, ids=IDS)
def test_rule_file_round_trip_and_apply(cols, ood_score, targets, model, tmp_path):
    data = prepare(T, scores=cols, ood_score=ood_score)
    rule = fit_rule(data, **targets)
    columns = rule_columns(rule, data)
    assert columns == (cols + [ood_score] if ood_score else cols)
    text = rule_to_json(rule, columns)
    (tmp_path / "rule.json").write_text(text)
    for source in (text, tmp_path / "rule.json", str(tmp_path / "rule.json")):
        loaded, names = load_rule(source)
        assert type(loaded) is type(rule) and names == columns
        assert loaded.to_json() == rule.to_json()
    # new rows, with ties at the threshold: apply_rule is the rule's accept on those columns
    new = prepare(_table(seed=1, n=400), scores=columns, need_loss=False)
    s = new.scores[columns[0]] if isinstance(rule, ONE_COLUMN) else new.stacked(columns)
    np.testing.assert_array_equal(loaded.accept_proba(s), rule.accept_proba(s))
    np.testing.assert_array_equal(apply_rule(loaded, new), rule.accept(s))
    np.testing.assert_array_equal(apply_rule(rule, new), rule.accept(s))


def test_apply_rule_draws_the_ties_at_the_threshold():
    rule = fit_rule(prepare(T, scores=["u"]), target_coverage=0.7)
    assert 0 < rule.accept_prob_ < 1
    new = prepare(_table(seed=1, n=400), scores=["u"], need_loss=False)
    tied = new.scores["u"] == rule.threshold_
    accept = apply_rule(rule, new)
    assert 0 < accept[tied].sum() < tied.sum()
    np.testing.assert_array_equal(accept[~tied], new.scores["u"][~tied] < rule.threshold_)
    np.testing.assert_array_equal(apply_rule(rule, new), accept)  # reproducible


def test_apply_rule_refuses_the_wrong_number_of_columns():
    pair = fit_rule(prepare(T, scores=["u"], ood_score="g"), tpr=0.8, fpr=0.5)
    with pytest.raises(ValueError, match=r"^the rule takes 2 score column\(s\); got 1: 'u'\.$"):
        apply_rule(pair, prepare(T, scores=["u"], need_loss=False))
    single = fit_rule(prepare(T, scores=["u"]), target_coverage=0.7)
    with pytest.raises(ValueError, match=r"^the rule takes one score column; got 2\.$"):
        apply_rule(single, prepare(T, scores=["u", "g"], need_loss=False))


@pytest.mark.parametrize("ood_score, held", [
    ("g", {"scores": ["u", "g", "u"]}),  # three names, one repeated: applied as two before
    ("g", {"scores": ["u", "u"]}), ("g", {"scores": ["u"]}), (None, {"scores": ["u", "g"]}),
    (None, {"scores": [""]})])
def test_load_rule_refuses_column_names_that_do_not_fit_the_rule(ood_score, held):
    import json

    data = prepare(T, scores=["u"], ood_score=ood_score)
    rule = fit_rule(data, **({"tpr": 0.8, "fpr": 0.5} if ood_score else
                             {"target_coverage": 0.7}))
    doc = json.loads(rule_to_json(rule, rule_columns(rule, data)))
    assert load_rule(json.dumps(doc))[1] == ["u", "g"][: 2 if ood_score else 1]
    doc["columns"] = held
    k = 2 if ood_score else 1
    with pytest.raises(ValueError, match=rf"^the rule file: columns\.scores must name the "
                                         rf"rule's {k} score column\(s\), each once; got "
                                         rf"{re.escape(json.dumps(held))}\. Write the rule again "
                                         rf"with abstain fit\.$"):
        load_rule(json.dumps(doc))


def test_load_rule_names_what_is_not_a_rule():
    from abstain.detectors import KNN

    text = KNN(k=1).fit([[1.0, 0.0], [0.0, 1.0]]).to_json()
    with pytest.raises(ValueError, match=r"^the rule file holds a KNN, not a reject rule on "
                                         r"score columns; abstain apply needs one of "
                                         r"BoundedAbstention, "):
        load_rule(text)
    rule = fit_rule(prepare(T, scores=["u"]), target_coverage=0.7)
    assert load_rule(rule.to_json())[1] is None  # a model's own file: no column names


@pytest.mark.parametrize("table, kwargs, data_kwargs, message", [
    (T, {}, {}, "exactly one target must be given (target_coverage, target_risk, reject_cost, "
                "tpr and fpr, precision and recall, or reject_id_cost and predict_ood_cost); "
                "got none."),
    (T, {"target_risk": 0.1, "reject_cost": 0.1}, {},
     "exactly one target must be given (target_coverage, target_risk, reject_cost, tpr and "
     "fpr, precision and recall, or reject_id_cost and predict_ood_cost); got target_risk, "
     "reject_cost."),
    (T, {"target_coverage": 0.5, "delta": 0.1}, {},
     "delta must come with target_risk; got it with target_coverage."),
    (T, {"target_coverage": 0.5, "ood_prior": 0.1}, {},
     "ood_prior must come with precision and recall or with reject_id_cost and "
     "predict_ood_cost; got it with target_coverage."),
    (T, {"target_coverage": 0.5, "reject_ood_cost": 0.1}, {},
     "reject_ood_cost must come with reject_id_cost and predict_ood_cost; got it with "
     "target_coverage."),
    (T, {"tpr": 0.9}, {}, "tpr and fpr must be given together."),
    (T, {"recall": 0.9}, {}, "precision and recall must be given together."),
    (T, {"predict_ood_cost": 1.0}, {},
     "reject_id_cost and predict_ood_cost must be given together."),
    (ID_ONLY, {"tpr": 0.9, "fpr": 0.1}, {"scores": ["u"]},
     "the tpr/fpr model needs an OOD column; the table has none."),
    (T, {"target_coverage": 0.5}, {"scores": ["u", "g"]},
     "the target_coverage model takes one score column; got 2: 'u', 'g'."),
    (T, {"target_coverage": 0.5}, {"scores": ["u"], "ood_score": "g"},
     "target_coverage takes one score column; an OOD score ('g') pairs columns for the OOD "
     "models only (tpr and fpr, precision and recall, reject_id_cost and predict_ood_cost)."),
    (T | {"h": T["u"]}, {"tpr": 0.9, "fpr": 0.1}, {"ood_score": "g"},
     "the tpr/fpr model takes one pair (s_r, OOD score); got 2 other score columns besides the "
     "OOD score 'g': 'u', 'h'."),
])
def test_fit_rule_refuses_bad_targets(table, kwargs, data_kwargs, message):
    with pytest.raises(ValueError) as exc:
        fit_rule(prepare(table, **data_kwargs), **kwargs)
    assert str(exc.value) == message


def test_infeasible_messages_never_offer_a_zero_target():
    # Every in-distribution row scores above every OOD row: the wrong direction for both.
    table = {"loss": [0.0, 0.0, 0.0, 0.0], "g": [0.9, 0.8, 0.2, 0.1], "is_ood": [0, 0, 1, 1]}
    data = prepare(table, scores=["g"])
    with pytest.raises(InfeasibleTargetError, match=r"no rule reaches precision >= 0\.99 at any "
                                                    r"recall\.$"):
        fit_rule(data, precision=0.99, recall=0.5)
    with pytest.raises(InfeasibleTargetError, match=r"no rule with FPR <= 0\.1 accepts any "
                                                    r"in-distribution row; at TPR >= 0\.5"):
        fit_rule(data, tpr=0.5, fpr=0.1)


def _step(printed: str) -> float:
    """One unit in the last of the four significant digits of a printed rate."""
    x = float(printed)
    return 10.0 ** (math.floor(math.log10(x)) - 3)


def _infeasible(data, **targets) -> bool:
    try:
        fit_rule(data, **targets)
    except InfeasibleTargetError:
        return True
    return False


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
@example(seed=12238)  # the highest TPR at FPR <= 0.001 is 0.201, computed as 0.20099999999999998
def test_every_number_of_an_infeasibility_message_flips_feasibility_there(seed):
    # Scores on a coarse grid (many ties), one OOD row in three: each number in the message
    # is met (a least value rounded up, a highest one down) and one unit of its fourth digit
    # beyond it is not.
    rng = np.random.default_rng(seed)
    n = int(rng.integers(9, 90))
    ood = np.arange(n) % 3 == 0
    u = np.round(rng.random(n) + 0.5 * ood, 1)
    loss = np.where(ood, np.nan, (rng.random(n) < rng.random()).astype(float))
    data = prepare({"loss": loss, "u": u, "is_ood": ood.astype(float)}, scores=["u"])
    number = r"([0-9.e-]+?)"

    def flips(printed, fit_at, *, up):
        """Met at the printed number, not one unit of its fourth digit beyond it."""
        beyond = float(printed) + (_step(printed) if up else -_step(printed))
        assert not _infeasible(data, **fit_at(float(printed)))
        if 0.0 < beyond <= 1.0:
            assert _infeasible(data, **fit_at(beyond))

    message = _message(data, target_risk=1e-3)
    if message:
        flips(re.search(rf"rows is {number}\.$", message).group(1),
              lambda x: {"target_risk": x}, up=False)
    message = _message(data, tpr=0.999, fpr=0.001)
    if message:
        found = re.search(rf"the highest attainable TPR is {number};", message)
        if found:
            flips(found.group(1), lambda x: {"tpr": x, "fpr": 0.001}, up=True)
        flips(re.search(rf"the lowest attainable FPR is {number}\.$", message).group(1),
              lambda x: {"tpr": 0.999, "fpr": x}, up=False)
    message = _message(data, precision=0.999, recall=0.999)
    if message:
        found = re.search(rf"the highest attainable precision is {number};", message)
        if float(found.group(1)) > 0:
            flips(found.group(1), lambda x: {"precision": x, "recall": 0.999}, up=True)
        found = re.search(rf"the highest attainable recall is {number}\.$", message)
        if found:
            flips(found.group(1), lambda x: {"precision": 0.999, "recall": x}, up=True)


def _message(data, **targets) -> str | None:
    """The message of an infeasible fit, or None when the fit is feasible."""
    try:
        fit_rule(data, **targets)
    except InfeasibleTargetError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("targets", [{"target_risk": 0.05},
                                     {"target_risk": 0.05, "delta": 0.1, "bound": "sgr"}])
def test_the_least_target_comes_from_the_fits_own_search(targets, monkeypatch):
    # Without delta and with SGR the fit knows what it attains (InfeasibleTargetWarning's
    # attainable): the message runs no second search, and offers the same number.
    data = prepare(T, scores=["u"])
    message = _message(data, **targets)

    def second_search(*args, **kwargs):
        raise AssertionError("a second search")

    monkeypatch.setattr("abstain.models._registry.least_risk_bound", second_search)
    assert _message(data, **targets) == message


@pytest.mark.parametrize("cols, ood_score", [(["g"], None), (["u"], "g")])
@pytest.mark.parametrize("targets", [{"tpr": 0.95, "fpr": 0.1},
                                     {"precision": 0.99, "recall": 0.9},
                                     {"precision": 0.99, "recall": 0.95, "ood_prior": 0.1}])
def test_the_least_fpr_and_most_recall_come_from_the_fits_own_sweep(cols, ood_score, targets,
                                                                     monkeypatch):
    # The fit of BoundedTPRFPR (BoundedPrecisionRecall) records the least FPR at its TPR (the
    # most recall at its precision) in the sweep that fits it: the message runs no second
    # search, and offers the same number (tests/models/test_attainable_pairs.py).
    data = prepare(T, scores=cols, ood_score=ood_score)
    message = _message(data, **targets)
    assert message is not None

    def second_search(*args, **kwargs):
        raise AssertionError("a second search")

    monkeypatch.setattr("abstain.models._registry.least_fpr_at_tpr", second_search)
    monkeypatch.setattr("abstain.models._registry.most_recall_at_precision", second_search)
    assert _message(data, **targets) == message


def test_fit_rule_refuses_a_keyword_that_no_rule_takes():
    with pytest.raises(TypeError, match=r"^fit_rule got unknown target\(s\) 'coverage'; known: "
                                        r"bound, delta, fpr, "):
        fit_rule(prepare(T, scores=["u"]), coverage=0.5)


def test_messages_keep_quoted_column_names_as_written():
    # columns named like the options of abstain fit came out as '--delta', '--tpr'
    data = prepare({"loss": np.array([0.0, 1.0, 0.0]), "delta": np.array([0.1, 0.2, 0.3]),
                    "tpr": np.array([0.3, 0.2, 0.1])})
    with pytest.raises(ValueError, match=r"^the --target-coverage model takes one score "
                                         r"column; got 2: 'delta', 'tpr'\.$"):
        fit_rule(data, target_coverage=0.5, options=True)


def test_load_rule_reads_text_with_a_byte_order_mark_and_white_space():
    # "\ufeff\n{...": the text was taken for a path (File name too long)
    from abstain import BoundedAbstention
    from abstain.app.rules import load_rule

    text = BoundedAbstention(0.5).fit([0.1, 0.2, 0.3, 0.4], [0.0, 1.0, 0.0, 1.0]).to_json()
    for lead in ("\ufeff", "\ufeff\n", "\ufeff\n "):
        loaded, _ = load_rule(lead + text)
        assert loaded.threshold_ == load_rule(text)[0].threshold_
