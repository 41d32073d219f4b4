"""One JSON document shape for every fitted object, read back by ``abstain.load_json``.

Round trips of every kind are in ``test_common.py``; here: the document shape and the
NaN/inf policy, the refusal of any other format than ``abstain/1``, and hostile documents,
each of which must raise one ``ValueError`` naming the field.
"""

import base64
import json
import math
import warnings

import numpy as np
import pytest
from estimators import CASES

from abstain import (
    BoundedAbstention,
    BoundedImprovement,
    CostBased,
    InfeasibleTargetWarning,
    NotFittedError,
    load_json,
)
from abstain.combine import GuaranteedDetector
from abstain.detectors import KNN, MSP, ReAct
from abstain.models import BoundedTPRFPR, DoubleScoreDetector
from abstain.scores import LossRegression

RNG = np.random.default_rng(7)
U = RNG.integers(0, 5, 40).astype(float)
L = (RNG.random(40) < U / 5).astype(float)

RULES = [
    CostBased(reject_cost=0.3),
    BoundedAbstention(target_coverage=0.65, random_state=3),
    BoundedImprovement(target_risk=0.15),
    BoundedImprovement(target_risk=0.3, delta=0.2),
    BoundedImprovement(target_risk=1e-6, delta=0.1),  # infeasible
]


def _strict_loads(text):
    def refuse(name):
        raise AssertionError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def _fit(rule):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleTargetWarning)
        return rule.fit(U, L)


# --------------------------------------------------------------------------- the document
@pytest.mark.parametrize("rule", RULES, ids=repr)
def test_rule_round_trip(rule):
    rule = _fit(rule)
    text = rule.to_json()
    doc = _strict_loads(text)
    assert list(doc) == ["fitted", "format", "kind", "params"]  # sorted keys
    assert (doc["format"], doc["kind"]) == ("abstain/1", type(rule).__name__)
    loaded = load_json(text)
    assert type(loaded) is type(rule)
    assert loaded.get_params() == rule.get_params()
    for name in ("threshold_", "accept_prob_", "coverage_", "risk_", "feasible_", "n_samples_"):
        a, b = getattr(rule, name), getattr(loaded, name)
        assert a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b)), name
    assert loaded.equivalent_ == rule.equivalent_
    grid = np.linspace(-1, 6, 29)
    np.testing.assert_array_equal(loaded.accept_proba(grid), rule.accept_proba(grid))
    if isinstance(rule.random_state, int):
        np.testing.assert_array_equal(loaded.accept(U), rule.accept(U))


def test_non_finite_values_are_strings_where_their_field_allows_them():
    doc = _strict_loads(_fit(BoundedImprovement(1e-6, delta=0.1)).to_json())["fitted"]
    assert (doc["threshold_"], doc["risk_"], doc["risk_bound_"]) == ("-inf", "nan", "nan")
    plug_in = _strict_loads(CostBased(reject_cost=0.2).fit().to_json())["fitted"]
    assert (plug_in["coverage_"], plug_in["cost_"], plug_in["equivalent_"]) == ("nan", "nan", None)
    loaded = load_json(CostBased(reject_cost=0.2).fit().to_json())
    assert loaded.threshold_ == 0.2 and math.isnan(loaded.cost_) and loaded.equivalent_ is None
    # a NaN where the schema allows none is refused on writing as well as on reading
    rule = _fit(BoundedAbstention(0.5))
    rule.threshold_ = math.nan
    with pytest.raises(ValueError, match="fitted.threshold_ must be a finite number; got nan"):
        rule.to_json()


def test_arrays_are_base64_float64_and_nested_estimators_are_documents():
    case = CASES["DoubleScoreDetector"]
    det = case.fit(DoubleScoreDetector(MSP(temperature=2.0), KNN(k=3)))
    doc = _strict_loads(det.to_json())
    scale = doc["fitted"]["scale_"]
    assert scale["shape"] == [2]
    raw = np.frombuffer(base64.b64decode(scale["float64_le_base64"]), "<f8")
    np.testing.assert_array_equal(raw, det.scale_)
    for name, kind in (("misclassification_", "MSP"), ("ood_", "KNN"),
                       ("selector_", "BoundedTPRFPR")):
        nested = doc["fitted"][name]
        assert (nested["format"], nested["kind"]) == ("abstain/1", kind)
        assert isinstance(nested["fitted"], dict)
    # an estimator given as a parameter is a document without fitted state
    param = doc["params"]["ood"]
    assert (param["kind"], param["params"]["k"], param["fitted"]) == ("KNN", 3, None)
    assert doc["params"]["selector"] is None
    loaded = load_json(json.dumps(doc))
    assert isinstance(loaded.ood, KNN) and not hasattr(loaded.ood, "bank_")
    assert loaded.ood.k == 3 and loaded.misclassification.temperature == 2.0


def test_load_json_reads_paths_and_bytes(tmp_path):
    rule = _fit(BoundedAbstention(0.5))
    path = tmp_path / "rule.json"
    path.write_text(rule.to_json(), encoding="utf-8")
    for source in (path, str(path), rule.to_json().encode()):
        assert load_json(source).threshold_ == rule.threshold_


def test_a_generator_random_state_is_written_as_null():
    rule = BoundedAbstention(0.5, random_state=np.random.default_rng(0)).fit(U, L)
    assert _strict_loads(rule.to_json())["params"]["random_state"] is None


def test_a_seed_sequence_of_an_integer_is_written_as_that_integer():
    u = [0.0] * 16
    rule = BoundedAbstention(0.5, random_state=np.random.SeedSequence(1)).fit(u, [0, 1] * 8)
    assert _strict_loads(rule.to_json())["params"]["random_state"] == 1
    assert np.array_equal(load_json(rule.to_json()).accept(u), rule.accept(u))
    assert np.array_equal(BoundedAbstention(0.5, random_state=1).fit(u, [0, 1] * 8).accept(u),
                          rule.accept(u))
    for big in (2**63, 2**70):  # an integer of any size seeds as its SeedSequence does
        rule = BoundedAbstention(0.5, random_state=np.random.SeedSequence(big)).fit(
            u, [0, 1] * 8)
        assert _strict_loads(rule.to_json())["params"]["random_state"] == big
        assert np.array_equal(load_json(rule.to_json()).accept(u), rule.accept(u))
    for other in (np.random.SeedSequence(1, spawn_key=(2,)), np.random.PCG64(1)):
        rule = BoundedAbstention(0.5, random_state=other).fit(u, [0, 1] * 8)
        assert _strict_loads(rule.to_json())["params"]["random_state"] is None


def test_unfitted_rule_refuses():
    for rule in (CostBased(0.1), BoundedAbstention(0.5), BoundedImprovement(0.1)):
        with pytest.raises(NotFittedError, match="not fitted"):
            rule.accept_proba([0.1])
        with pytest.raises(NotFittedError):
            rule.to_json()


def test_sklearn_clone_and_params():
    from sklearn.base import clone

    rule = BoundedImprovement(target_risk=0.2, delta=0.1, random_state=0)
    copy = clone(rule)
    assert copy is not rule and copy.get_params() == rule.get_params()
    rule.set_params(target_risk=0.3)
    assert rule.target_risk == 0.3
    with pytest.raises(ValueError, match="not a parameter"):
        rule.set_params(target=0.3)
    expected = "BoundedAbstention(target_coverage=0.8, random_state=None)"
    assert repr(BoundedAbstention(0.8)) == expected


def test_accept_is_reproducible_and_matches_probability():
    u = np.zeros(20000)  # one tie group: every decision is randomised
    rule = BoundedAbstention(target_coverage=0.3, random_state=11).fit(u[:10], np.zeros(10))
    first, second = rule.accept(u), rule.accept(u)
    np.testing.assert_array_equal(first, second)
    assert abs(first.mean() - 0.3) < 0.02
    assert rule.accept_proba(np.array([])).shape == (0,)


# --------------------------------------------------------------------------- earlier formats
def _args(args):
    return [{k: np.asarray(v) for k, v in a.items()} if isinstance(a, dict) else np.asarray(a)
            for a in args]


def _answer(obj, case):
    """The case's method called on its arguments, or its fitted attribute."""
    out = getattr(obj, case["method"])
    return out(*_args(case["args"])) if callable(out) else out


KNN_FITTED = KNN(k=1).fit([[1.0, 0.0], [0.0, 1.0]])
# the per-family formats of the unreleased 0.1 development versions
OTHER_FORMATS = ["abstain.rule/1", "abstain.ood/1", "abstain.score/1", "abstain.detector/1",
                 "abstain.double-score/1", "abstain.base-scores/1", "abstain.combine/1",
                 "abstain.svor/1", "abstain/2", None]


@pytest.mark.parametrize("fmt", OTHER_FORMATS)
def test_any_other_format_is_refused_in_one_line(fmt):
    doc = json.loads(_fit(CostBased(0.3)).to_json())
    doc["format"] = fmt
    with pytest.raises(ValueError, match=r"^format must be 'abstain/1', the one format of "
                       r"abstain documents \(write the object again with to_json\); got "):
        load_json(json.dumps(doc))
    old = {"format": fmt, "model": "CostBased", "params": {}, "fitted": {}}
    with pytest.raises(ValueError, match=r"^format must be 'abstain/1'"):
        load_json(json.dumps(old))


def test_a_nested_document_of_another_format_is_refused_naming_it():
    det = CASES["DoubleScoreDetector"].fit(DoubleScoreDetector(ood=KNN(k=3)))
    doc = json.loads(det.to_json())
    doc["fitted"]["ood_"]["format"] = "abstain.detector/1"
    with pytest.raises(ValueError, match=r"^fitted\.ood_\.format must be 'abstain/1'"):
        load_json(json.dumps(doc))


# --------------------------------------------------------------------------- hostile documents
def _doc(obj=None):
    return json.loads((obj or _fit(BoundedAbstention(0.5))).to_json())


def _with(path, value, obj=None):
    doc = _doc(obj)
    *parents, last = path
    node = doc
    for key in parents:
        node = node[key]
    if value is KeyError:
        del node[last]
    else:
        node[last] = value
    return json.dumps(doc)


REACT = ReAct().fit(np.eye(3) + 0.5, weight=np.ones((2, 3)))
DOUBLE = CASES["DoubleScoreDetector"].fit(DoubleScoreDetector(ood=KNN(k=3)))
BANK = _doc(KNN_FITTED)["fitted"]["bank_"]


@pytest.mark.parametrize("name", ["target_risk", "delta", "loss_bound", "random_state"])
def test_a_document_missing_a_parameter_is_refused_naming_it(name):
    # a missing parameter would take the constructor's default beside a risk_bound_
    # computed with the value the rule was fitted with
    doc = json.loads(_fit(BoundedImprovement(target_risk=0.3, delta=0.2)).to_json())
    del doc["params"][name]
    with pytest.raises(ValueError, match=rf"^params\.{name} is missing: a BoundedImprovement "
                       r"document needs every parameter \(target_risk, delta, bound, "
                       r"guarantee, loss_bound, random_state\); write the value the object "
                       r"was fitted with\.$"):
        load_json(json.dumps(doc))


def test_every_parameter_is_required_even_one_added_late():
    # no parameter may be absent: each would take the constructor's default beside fitted
    # attributes computed with the value the object was fitted with
    rule = _fit(BoundedImprovement(target_risk=0.5, delta=0.2, bound="sgr"))
    doc = json.loads(rule.to_json())
    del doc["params"]["bound"]
    with pytest.raises(ValueError, match=r"^params\.bound is missing: a BoundedImprovement "
                       "document needs every parameter"):
        load_json(json.dumps(doc))
    det = CASES["DoubleScoreDetector"].fit(DoubleScoreDetector(MSP(), KNN(k=3)))
    doc = json.loads(det.to_json())
    del doc["params"]["ood"]["params"]["backend"]
    with pytest.raises(ValueError, match=r"^params\.ood\.params\.backend is missing: a KNN "
                       "document needs every parameter"):
        load_json(json.dumps(doc))


def test_the_fitted_guarantee_must_be_the_one_the_parameters_ask_for():
    doc = json.loads(_fit(BoundedImprovement(target_risk=0.5, delta=0.2)).to_json())
    assert doc["fitted"]["bound_"] == "binomial" and doc["fitted"]["risk_bound_"] != "nan"
    doc["params"]["delta"] = None  # the certified rule presented as an empirical one
    with pytest.raises(ValueError, match=r"^fitted\.bound_ must be null for params\.delta = "
                       r"None, params\.guarantee = None and params\.bound = 'auto'; got "
                       r"'binomial'\.$"):
        load_json(json.dumps(doc))
    doc["params"].update(delta=0.2, bound="hb")
    with pytest.raises(ValueError, match=r"^fitted\.bound_ must be 'hb' for params\.delta = "
                       r"0\.2, .*; got 'binomial'\.$"):
        load_json(json.dumps(doc))
    doc["params"].update(delta=None, bound="auto")
    doc["fitted"]["bound_"] = None
    with pytest.raises(ValueError, match=r'^fitted\.risk_bound_ must be "nan" for a rule '
                       r"fitted without delta or guarantee; got 0\.\d+\.$"):
        load_json(json.dumps(doc))


def _nest(depth):
    """A DoubleScoreDetector whose parameter nests another ``depth`` times."""
    doc = {"format": "abstain/1", "kind": "MSP", "params": MSP().get_params(), "fitted": None}
    for _ in range(depth):
        doc = {"format": "abstain/1", "kind": "DoubleScoreDetector",
               "params": {"misclassification": doc, "ood": None, "selector": None},
               "fitted": None}
    return json.dumps({**doc, "fitted": {}})


HOSTILE = [
    ("missing fitted", _with(["fitted"], KeyError),
     r"^fitted is missing: a document needs fitted, format, kind, params\.$"),
    ("columns not an object", _with(["columns"], "risk"),
     r"^columns must be an object \{\"scores\": \[column names\]\}; got 'risk'\.$"),
    ("columns of numbers", _with(["columns"], {"scores": [1]}),
     r"^columns.scores must be a list of strings; got \[1\]\.$"),
    ("nested-list bomb", "[" * 100000, r"^the document nests too deeply to be read\.$"),
    ("nested-object bomb", '{"a":' * 100000, r"^the document nests too deeply to be read\.$"),
    ("nested documents", _nest(12), r"nests documents more than 8 deep\.$"),
    ("not an object", "[1, 2]", r"^the document must be a JSON object .*; got \[1, 2\]\.$"),
    ("not JSON", '{"format": ', r"^the document is not valid JSON: Expecting value"),
    ("NaN constant", _with(["fitted", "risk_"], 0.0).replace("0.0", "NaN"),
     r"^the document is not valid JSON: NaN is not standard JSON"),
    ("threshold_ text", _with(["fitted", "threshold_"], "abc", _fit(CostBased(0.3))),
     r"^fitted\.threshold_ must be a finite number or \"-inf\"; got 'abc'\.$"),
    ("threshold_ 1e999", _with(["fitted", "threshold_"], 0.125).replace("0.125", "1e999"),
     r"^fitted\.threshold_ must be a finite number; got a number beyond the float64 range\.$"),
    ("threshold_ -1e999 for -inf", _with(["fitted", "threshold_"], 0.125, _fit(CostBased(0.3)))
     .replace("0.125", "-1e999"),
     r"^fitted\.threshold_ must be a finite number or \"-inf\"; got a number beyond the float64 "
     r"range; write the string \"-inf\" where that is meant\.$"),
    ("threshold_ nan not allowed", _with(["fitted", "threshold_"], "nan", _fit(CostBased(0.3))),
     r"^fitted\.threshold_ must be a finite number or \"-inf\"; got 'nan'\.$"),
    ("threshold_ -inf not allowed", _with(["fitted", "threshold_"], "-inf"),
     r"^fitted\.threshold_ must be a finite number; got '-inf'\.$"),
    ("accept_prob_ 5", _with(["fitted", "accept_prob_"], 5),
     r"^fitted\.accept_prob_ must be a finite number in \(0, 1\]; got 5\.$"),
    ("coverage_ negative", _with(["fitted", "coverage_"], -0.1),
     r"^fitted\.coverage_ must be a finite number in \[0, 1\]; got -0\.1\.$"),
    ("n_samples_ a bool", _with(["fitted", "n_samples_"], True),
     r"^fitted\.n_samples_ must be an integer in \[0, 9223372036854775807\]; got True\.$"),
    ("equivalent_ short", _with(["fitted", "equivalent_"], [0.5]),
     r"^fitted\.equivalent_ must be a list of 3 items or null; got \[0\.5\]\.$"),
    ("param of the wrong type", _with(["params", "target_coverage"], "abc"),
     r"^params\.target_coverage must be a real number; got 'abc'\.$"),
    ("param out of range", _with(["params", "target_coverage"], 1.5),
     r"^params\.target_coverage must be in \(0, 1\]; got 1\.5\.$"),
    ("random_state garbage", _with(["params", "random_state"], "abc"),
     r"^params\.random_state must be None, an integer >= 0 or a numpy Generator, BitGenerator "
     r"or SeedSequence; got 'abc'\.$"),
    ("param a nested list", _with(["params", "random_state"], [[1]]),
     r"^params\.random_state\[0\] must be a JSON scalar or a document \(params lists are "
     r"flat\); got \[1\]\.$"),
    ("param a huge integer", _with(["params", "target_coverage"], 10**400),
     r"^params\.target_coverage must be a finite real number; got an integer of 1329 bits\.$"),
    ("unknown param", _with(["params", "evil"], 1),
     r"^params\.evil is not a parameter of BoundedAbstention; the parameters are "
     r"target_coverage, random_state\.$"),
    ("a kind without parameters", _with(["kind"], "ScoreTable"),
     r"^params\.\w+ is not a parameter of ScoreTable; a ScoreTable has no "
     r"parameters\.$"),
    ("params not an object", _with(["params"], [1]),
     r"^params must be an object of parameters; got \[1\]\.$"),
    ("unknown kind", _with(["kind"], "os.system"),
     r"^kind must be a registered kind: (BankDetector, )?BoundedAbstention, .*; got "
     r"'os\.system'\.$"),
    ("unknown format", _with(["format"], "pickle"), r"^format must be 'abstain/1', the one "),
    ("unknown key", _with(["pickle"], 1), r"^pickle is not a key of this document"),
    ("unknown field", _with(["fitted", "__class__"], 1),
     r"^fitted\.__class__ is not a fitted attribute of BoundedAbstention; the fitted "
     r"attributes are threshold_, "),
    ("missing field", _with(["fitted", "risk_"], KeyError),
     r"^fitted\.risk_ is missing: a fitted BoundedAbstention needs threshold_, "),
    ("truncated base64", _with(["fitted", "bank_", "float64_le_base64"],
                               BANK["float64_le_base64"][:-4], KNN_FITTED),
     r"^fitted\.bank_\.float64_le_base64 must hold 32 bytes for shape \(2, 2\); got 30\.$"),
    ("base64 garbage", _with(["fitted", "bank_", "float64_le_base64"], "!!!!", KNN_FITTED),
     r"^fitted\.bank_\.float64_le_base64 must be valid base64"),
    ("array a list", _with(["fitted", "bank_"], [[1.0, 0.0]], KNN_FITTED),
     r"^fitted\.bank_ must be an array \{\"shape\": \[\.\.\.\], \"float64_le_base64\": "),
    ("array of NaN", _with(["fitted", "bank_", "float64_le_base64"],
                           base64.b64encode(np.full(4, np.nan).tobytes()).decode(), KNN_FITTED),
     r"^fitted\.bank_ must hold finite numbers; got 4 NaN or infinite\.$"),
    ("array of the wrong ndim", _with(["fitted", "bank_", "shape"], [4], KNN_FITTED),
     r"^fitted\.bank_ must be a 2-d array; got shape \(4,\)\.$"),
    ("array shapes disagree", _with(["fitted", "bias_"], _doc(
        ReAct().fit(np.eye(3) + 0.5, weight=np.ones((4, 3))))["fitted"]["bias_"], REACT),
     r"^fitted\.bias_ must have shape \(2,\) to match fitted\.weight_ axis 0; got \(4,\)\.$"),
    ("array and int disagree", _with(["fitted", "n_features_in_"], 5, KNN_FITTED),
     r"^fitted\.bank_ must have shape \(n, 5\) to match fitted\.n_features_in_; got \(2, 2\)"),
    ("nested of the wrong kind", _with(["fitted", "selector_"], _doc(KNN_FITTED), DOUBLE),
     r"^fitted\.selector_ must be a document of kind BoundedPrecisionRecall, BoundedTPRFPR or "
     r"CostBasedOOD; got KNN\.$"),
    ("nested field", _with(["fitted", "selector_", "fitted", "accept_prob_"], 5, DOUBLE),
     r"^fitted\.selector_\.fitted\.accept_prob_ must be a finite number in \(0, 1\]; got 5\.$"),
    ("nested param", _with(["params", "ood", "params", "k"], 0, DOUBLE),
     r"^params\.ood\.params\.k must be an integer >= 1; got 0\.$"),
    ("param of the wrong class", _with(["params", "ood"], _doc(_fit(CostBased(0.3))), DOUBLE),
     r"^params\.ood must be a detector of abstain\.detectors or None; got CostBased\.$"),
    ("fields disagree", _with(["fitted", "weights_"], [1.0, 0.0],
                              BoundedTPRFPR(0.5, 0.5).fit([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1],
                                                          [0, 0, 1, 0])),
     r"^fitted\.weights_ must hold 1 item\(s\) to match fitted\.n_scores_; got 2\.$"),
    ("labels unsorted", _with(["fitted", "classes_"], [1, 0],
                              LossRegression().fit([[0.0], [1.0]], [0, 1], [0.0, 1.0])),
     r"^fitted\.classes_ must be a list of labels \(strings or numbers\), sorted and distinct; "
     r"got \[1, 0\]\.$"),
    ("cross-field check", _with(["fitted", "rank_"], 10**6,
                                GuaranteedDetector().fit(RNG.normal(size=60))),
     r"^fitted\.rank_ must be at most fitted\.n_calibration_ = 60; got 1000000\.$"),
    ("risk above the target", _with(["fitted", "risk_"], 0.9, load_json(_with(
        ["fitted", "equivalent_"], None, _fit(BoundedImprovement(0.3))))),
     r"^fitted\.risk_ must be at most params\.target_risk \(0\.3\) as a fit makes it; got "
     r"0\.9\.$"),
    ("least risk above the risk", _with(["fitted", "min_risk_"], 0.9,
                                        _fit(BoundedImprovement(0.3))),
     r"^fitted\.min_risk_ must be at most fitted\.risk_ \(0\.3\) as a fit makes it; got "
     r"0\.9\.$"),
    ("certified bound above the target",
     _with(["fitted", "risk_bound_"], 0.9, _fit(BoundedImprovement(0.3, delta=0.2))),
     r"^fitted\.risk_bound_ must be at most params\.target_risk \(0\.3\) as a fit makes "
     r"it; got 0\.9\.$"),
    ("certified rule randomising",
     _with(["fitted", "accept_prob_"], 0.5, _fit(BoundedImprovement(0.3, delta=0.2))),
     r"^fitted\.accept_prob_ must be 1 for a certified rule \(it accepts whole tie groups\); "
     r"got 0\.5\.$"),
    ("coverage other than the target", _with(["params", "target_coverage"], 0.9),
     r"^params\.target_coverage must be fitted\.coverage_ \(0\.5\) as a fit makes it; got "
     r"0\.9\.$"),
    ("equivalent interval reversed", _with(["fitted", "equivalent_"], [0.5, [0.3, 0.2], None]),
     r"^fitted\.equivalent_\.target_risk must be an interval \[low, high\] with low <= "
     r"high; got \[0\.3, 0\.2\]\.$"),
    ("cost-based rule randomising", _with(["fitted", "accept_prob_"], 0.5,
                                          _fit(CostBased(0.3))),
     r"^fitted\.accept_prob_ must be a finite number in \[1, 1\]; got 0\.5\.$"),
    ("risk where nothing is accepted", _with(["fitted", "risk_"], "nan"),
     r'^fitted\.risk_ must be "nan" exactly where fitted\.coverage_ is 0; got nan at '
     r'coverage 0\.5\.$'),
    ("coverage of rows unknown", _with(["fitted", "coverage_"], "nan", _fit(CostBased(0.3))),
     r'^fitted\.coverage_ must be a number for a rule fitted on \d+ rows; got "nan"\.$'),
    ("plug-in rule off its cost", _with(["fitted", "threshold_"], 0.9, CostBased(0.3).fit()),
     r"^fitted\.threshold_ must be params\.reject_cost \(0\.3\), .* got threshold_ 0\.9\.$"),
    ("cost other than its parts", _with(["fitted", "cost_"], 1e300, _fit(CostBased(0.3))),
     r"^fitted\.cost_ must be fitted\.risk_ times fitted\.coverage_ plus params\.reject_cost "
     r"times the rest \(.*\) as a fit makes it; got 1e\+300\.$"),
    ("certified bound missing",
     _with(["fitted", "risk_bound_"], "nan", _fit(BoundedImprovement(0.3, delta=0.2))),
     r'^fitted\.risk_bound_ must be a number for a rule fitted with the .* bound; got "nan"\.$'),
    ("no rows", _with(["fitted", "n_samples_"], 0, _fit(BoundedImprovement(0.3))),
     r"^fitted\.n_samples_ must be at least 1 \(a fit on rows\); got 0\.$"),
    # a threshold that contradicts the coverage changed every decision
    ("rejects all but covers", _with(["fitted", "threshold_"], "-inf", _fit(CostBased(0.3))),
     r"^fitted\.threshold_ must be -inf exactly where the rule accepts no row"),
    ("accepts all uncertified", _with(["fitted", "threshold_"], "inf",
                                      _fit(BoundedImprovement(0.3))),
     r"^fitted\.threshold_ may be inf \(accept every new row\) only for a rule certified"),
    ("risk off its equivalent", _with(["fitted", "risk_"], 0.05,
                                      _fit(BoundedImprovement(0.3))),
     r"^fitted\.equivalent_\.target_risk must start at fitted\.risk_ = 0\.05; got "),
    ("not a path nor JSON", "no-such-file.json",
     r"^text_or_path must be a JSON document or the path of an existing file; got "
     r"'no-such-file\.json', which is neither\.$"),
    ("not text", 42, r"^text_or_path must be a JSON string or the path of a file; got 42\.$"),
    ("not UTF-8", b'{"format": "\xff"}', r"^the document is not valid JSON"),
]


@pytest.mark.parametrize("text, match", [h[1:] for h in HOSTILE], ids=[h[0] for h in HOSTILE])
def test_hostile_documents_raise_one_value_error_naming_the_field(text, match):
    with pytest.raises(ValueError, match=match) as info:
        load_json(text)
    assert type(info.value) is ValueError


def _fit_quiet(rule, u, loss):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleTargetWarning)
        return rule.fit(u, loss)


def _edited(obj, fitted=None, params=None):
    doc = _doc(obj)
    doc["fitted"].update(fitted or {})
    doc["params"].update(params or {})
    return json.dumps(doc)


# documents no fit writes, each field within its range but contradicting another
CONTRADICTIONS = [
    ("feasible rule that accepts nothing",
     _edited(BoundedImprovement(0.5).fit([0.1, 0.2, 0.3], [1, 0, 0]),
             {"threshold_": "-inf", "coverage_": 0.0, "risk_": "nan",
              "equivalent_": [0.0, None, None]}),
     r"^fitted\.feasible_ must be true exactly where the rule accepts rows \(fitted\.coverage_ "
     r"above 0\) for a rule fitted without delta or guarantee; got true at coverage 0\.0\.$"),
    ("infeasible rule below its target",
     _edited(_fit_quiet(BoundedImprovement(0.1), [0.1, 0.2, 0.3], [1, 0, 0]), {"min_risk_": 0.05}),
     r"^fitted\.min_risk_ must be above params\.target_risk \(0\.1\) for an infeasible rule "
     r"fitted without delta or guarantee \(a rule of that risk meets the target\); got 0\.05\.$"),
    ("randomised group but every row covered",
     _edited(BoundedAbstention(0.5).fit([0.1, 0.5, 0.5, 0.9], [0, 0, 1, 1]),
             {"coverage_": 1.0, "equivalent_": [1.0, [0.25, 0.25], [0.5, 0.5]]},
             {"target_coverage": 1.0}),
     r"^fitted\.coverage_ must leave at least 1 - fitted\.accept_prob_ = 0\.5 of a row of the "
     r"fitted\.n_samples_ = 4 rows rejected \(the rest of the threshold group\); got 1\.0\.$"),
    ("whole groups but a part of a row",
     _edited(CostBased(0.3).fit([0.1, 0.5, 0.5, 0.9], [0, 0, 1, 1]),
             {"coverage_": 0.3, "cost_": 0.21, "equivalent_": [0.3, [0.0, 0.0], [0.0, 0.5]]}),
     r"^fitted\.coverage_ must be a whole number of the fitted\.n_samples_ = 4 rows for a rule "
     r"with fitted\.accept_prob_ 1 \(whole tie groups\); got 0\.3 \(1\.2 rows\)\.$"),
    ("rows beyond int64", _edited(_fit(CostBased(0.3)), {"n_samples_": 10**400}),
     r"^fitted\.n_samples_ must be an integer in \[0, 9223372036854775807\]; got 1000"),
]


@pytest.mark.parametrize("text, match", [c[1:] for c in CONTRADICTIONS],
                         ids=[c[0] for c in CONTRADICTIONS])
def test_selective_documents_that_contradict_themselves_are_refused(text, match):
    with pytest.raises(ValueError, match=match):
        load_json(text)


def test_fits_at_the_edges_of_those_rules_load():
    """Every rule a fit writes loads: randomised groups, whole groups, infeasible fits,
    coverages that are whole counts only within round-off (0.07 of 100 rows)."""
    rng = np.random.default_rng(3)
    for n in (1, 2, 7, 100, 1001):
        u = rng.integers(0, 5, n).astype(float)
        loss = rng.integers(0, 2, n).astype(float)
        for rule in (CostBased(0.3), CostBased(0.7), BoundedAbstention(0.07),
                     BoundedAbstention(1.0), BoundedAbstention(0.5), BoundedImprovement(0.2),
                     BoundedImprovement(0.01), BoundedImprovement(0.5, delta=0.2)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", InfeasibleTargetWarning)
                fitted = rule.fit(u, loss)
            loaded = load_json(fitted.to_json())
            assert loaded.accept_proba(u).tolist() == fitted.accept_proba(u).tolist()


def test_a_hostile_file_names_its_path(tmp_path):
    path = tmp_path / "rule.json"
    path.write_text(_with(["fitted", "accept_prob_"], 5), encoding="utf-8")
    for source in (path, str(path)):
        with pytest.raises(ValueError, match=rf"^{path}: fitted\.accept_prob_ must be"):
            load_json(source)
    with pytest.raises(ValueError, match=r"^text_or_path names no file: '.*missing\.json'\.$"):
        load_json(tmp_path / "missing.json")
    with pytest.raises(ValueError, match=r"^cannot read"):
        load_json(tmp_path)  # a folder


JUNK = [None, "abc", "nan", "-inf", -1, 0, 1.5, 10**30, True, [], [1, "a"], [[1.0]], {},
        {"shape": [1], "float64_le_base64": "AAAAAAAA8D8="}, _doc(MSP())]


def _junk_documents(text):
    """The document with each params and fitted value (one level into nested documents)
    replaced, in turn, by each junk value."""
    doc = json.loads(text)
    for part in ("params", "fitted"):
        for key, value in (doc[part] or {}).items():
            for junk in JUNK:
                yield f"{part}.{key} = {junk!r}", {**doc, part: {**doc[part], key: junk}}
            if isinstance(value, dict) and value.get("format") == "abstain/1":
                for name, sub in _junk_documents(json.dumps(value)):
                    yield f"{part}.{key}: {name}", {**doc, part: {**doc[part], key: sub}}


@pytest.mark.parametrize("name", sorted(CASES))
def test_junk_in_any_field_is_a_value_error_or_a_valid_object(name):
    case = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = case.fit(case.make()).to_json()
    for what, doc in _junk_documents(text):
        try:
            load_json(json.dumps(doc))
        except ValueError as exc:
            assert type(exc) is ValueError, what
            assert str(exc).startswith(("params", "fitted")), (what, str(exc))


@pytest.mark.parametrize("classes", [[1, "2", 3], [True, 2, 3], ["a", 1.5]])
def test_class_labels_of_mixed_kinds_are_refused(classes):
    # a fit never writes them; np.asarray turned [1, "2", 3] into strings, so a loaded SVOR
    # predicted '2' where the fitted one predicts 2
    import json

    from abstain.ordinal import SVOR

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = np.clip(np.round(X[:, 0] + 2), 1, 3).astype(int)
    doc = json.loads(SVOR().fit(X, y).to_json())
    doc["fitted"]["classes_"] = classes
    with pytest.raises(ValueError, match=r"^fitted\.classes_ must hold labels of one kind "
                                         r"\(strings, numbers or booleans\); got a"):
        load_json(json.dumps(doc))
    doc["fitted"]["classes_"] = [1, 2, 3]
    assert list(load_json(json.dumps(doc)).classes_) == [1, 2, 3]
    # labels of one kind, booleans included, load as written
    from abstain.detectors import Mahalanobis

    det = Mahalanobis().fit(X, X[:, 0] > 0)
    assert list(load_json(det.to_json()).classes_) == [False, True]


@pytest.mark.parametrize(("bound", "delta", "losses"), [
    ("wsr", 0.1, [0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1, 1, 1, 0, 1, 0]),
    ("hb", 0.2, [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0]),
    ("binomial", 0.5, [1, 0, 0, 0, 0]),
])
def test_a_certified_bound_below_the_rules_risk_loads(bound, delta, losses):
    # the bound is of the rows the procedure tests (every tenth row learns where it starts)
    # and WSR stops at its best capital, so a fit makes risk_bound_ below risk_; load_json
    # refused such a rule's own document
    from abstain import BoundedImprovement, load_json

    losses = np.array(losses, dtype=float)
    u = np.arange(losses.size, dtype=float)
    rule = BoundedImprovement(target_risk=1.0, delta=delta, bound=bound).fit(u, losses)
    assert rule.feasible_ and rule.risk_bound_ < rule.risk_
    assert load_json(rule.to_json()).accept_proba(u).tolist() == rule.accept_proba(u).tolist()


def test_a_document_with_a_byte_order_mark_loads_from_a_file_and_a_string(tmp_path):
    # as bytes it loaded; a file (as Windows editors save it) and a str were refused
    from abstain import CostBased, load_json

    rule = CostBased(0.3).fit([0.1, 0.2, 0.6, 0.9], [0, 0, 1, 1])
    bom = b"\xef\xbb\xbf" + rule.to_json().encode()
    path = tmp_path / "rule.json"
    path.write_bytes(bom)
    for given in (bom, path, str(path), bom.decode("utf-8")):
        assert load_json(given).to_json() == rule.to_json()


def test_numbers_given_as_0d_arrays_or_fractions_are_written_as_numbers():
    # fit took them, and to_json ended in "TypeError: 'float' object is not iterable"
    from fractions import Fraction

    from abstain import BoundedImprovement, load_json

    u, losses = [0.1, 0.2, 0.3, 0.4], [0.0, 1.0, 0.0, 1.0]
    for target in (np.array(0.5), Fraction(1, 2)):
        rule = BoundedImprovement(target_risk=target).fit(u, losses)
        assert json.loads(rule.to_json())["params"]["target_risk"] == 0.5
        assert load_json(rule.to_json()).accept_proba(u).tolist() == \
            rule.accept_proba(u).tolist()


def test_a_document_that_load_json_would_refuse_is_never_written():
    """``set_params`` after a fit takes effect at the next fit; ``to_json`` in between
    wrote the new parameters beside the old fitted state, a document that ``load_json``
    refused, so a saved model could not be read back. It is refused as it is saved."""
    rng = np.random.default_rng(0)
    u, losses = rng.random(50), (rng.random(50) < 0.3).astype(float)
    for model, change in ((CostBased(0.5).fit(u, losses), {"reject_cost": 0.25}),
                          (KNN(k=5).fit(rng.normal(size=(20, 3))), {"k": 50})):
        text = model.to_json()
        model.set_params(**change)
        with pytest.raises(ValueError, match=rf"^this {type(model).__name__} cannot be saved: "
                           r"load_json would refuse its document \(.*\) If its parameters "
                           r"changed after fit \(set_params\), fit it again"):
            model.to_json()
        assert load_json(text).to_json() == text  # what was saved before still loads
