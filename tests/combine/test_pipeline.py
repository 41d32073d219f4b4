"""abstain.combine._pipeline: ScoreCombiner's direction, and what the three estimators of
abstain.combine (EmpiricalZ, ScoreCombiner, GuaranteedDetector) share: higher_is_inlier, the
estimator contract, the JSON round trip, the errors."""

from __future__ import annotations

import base64
import json
import re
import warnings

import numpy as np
import pytest

from abstain import NotFittedError, load_json
from abstain.combine import (
    STATISTICS,
    EmpiricalZ,
    GuaranteedDetector,
    ScoreCombiner,
    inlier_covariance,
)
from abstain.metrics import auroc


def test_higher_is_inlier_negates_the_inputs(rng):
    train, test = rng.normal(size=(40, 3)), rng.normal(size=(7, 3))
    plain = EmpiricalZ().fit(train).transform(test)
    flipped = EmpiricalZ(higher_is_inlier=True).fit(-train).transform(-test)
    np.testing.assert_array_equal(plain, flipped)
    for method in ("glrt", "fisher", "glrt_cov"):
        a = ScoreCombiner(method=method).fit(train).score(test)
        b = ScoreCombiner(method=method, higher_is_inlier=True).fit(-train).score(-test)
        np.testing.assert_array_equal(a, b)
    cal = rng.normal(size=100)
    d1 = GuaranteedDetector(alpha=0.1, delta=0.2).fit(cal)
    d2 = GuaranteedDetector(alpha=0.1, delta=0.2, higher_is_inlier=True).fit(-cal)
    np.testing.assert_array_equal(d1.accept(test[:, 0]), d2.accept(-test[:, 0]))
    np.testing.assert_array_equal(d1.score(test[:, 0]), d2.score(-test[:, 0]))


@pytest.mark.parametrize("method", STATISTICS)
def test_direction_on_a_toy_id_ood_pair(rng, method):
    """Base scores higher = more OOD; OOD inputs get positive z and larger statistics."""
    m = 6
    train = rng.normal(size=(2000, m))
    id_test = rng.normal(size=(400, m))
    ood_test = rng.normal(loc=1.5, size=(400, m))
    comb = ScoreCombiner(method=method).fit(train)
    assert abs(comb.transform(id_test).mean()) < 0.1
    assert comb.transform(ood_test).mean() > 1.0
    stat = comb.score(np.vstack([id_test, ood_test]))
    is_ood = np.r_[np.zeros(400), np.ones(400)]
    assert auroc(is_ood, stat) > 0.9
    # the paper's direction (inlier scores, small statistic = OOD) gives the same ranking
    paper = ScoreCombiner(method=method, higher_is_inlier=True).fit(-train)
    np.testing.assert_array_equal(paper.score(-np.vstack([id_test, ood_test])), stat)


def _fitted_objects(rng):
    train = rng.normal(size=(60, 3))
    return [
        EmpiricalZ().fit(train),
        EmpiricalZ(higher_is_inlier=True).fit(train),
        ScoreCombiner(method="glrt", epsilon=0.5).fit(train),
        ScoreCombiner(method="glrt_cov").fit(train),
        ScoreCombiner(method="simes", higher_is_inlier=True).fit(train),
        GuaranteedDetector(alpha=0.1, delta=0.05).fit(rng.normal(size=200)),
    ]


def test_json_round_trip_is_exact(rng):
    test = rng.normal(size=(30, 3)) * 3
    for obj in _fitted_objects(rng):
        text = obj.to_json()
        doc = json.loads(text)
        assert doc["format"] == "abstain/1" and doc["kind"] == type(obj).__name__
        back = load_json(text)
        assert type(back) is type(obj) and back.get_params() == obj.get_params()
        if isinstance(obj, GuaranteedDetector):
            np.testing.assert_array_equal(back.accept(test[:, 0]), obj.accept(test[:, 0]))
            assert back.threshold_ == obj.threshold_ and back.rank_ == obj.rank_
        elif isinstance(obj, EmpiricalZ):
            np.testing.assert_array_equal(back.transform(test), obj.transform(test))
        else:
            np.testing.assert_array_equal(back.score(test), obj.score(test))


def test_estimator_contract():
    sklearn_base = pytest.importorskip("sklearn.base")
    for obj in (EmpiricalZ(higher_is_inlier=True), ScoreCombiner(method="bj"),
                GuaranteedDetector(alpha=0.2)):
        clone = sklearn_base.clone(obj)
        assert clone.get_params() == obj.get_params() and clone is not obj
    with pytest.raises(NotFittedError, match="not fitted yet"):
        EmpiricalZ().transform([[0.0]])
    with pytest.raises(NotFittedError, match="not fitted yet"):
        ScoreCombiner().score([[0.0]])
    with pytest.raises(NotFittedError, match="not fitted yet"):
        GuaranteedDetector().accept([0.0])
    with pytest.raises(NotFittedError, match="not fitted yet"):
        GuaranteedDetector().to_json()


def test_estimator_errors(rng):
    with pytest.raises(ValueError, match=r"S_train must be a non-empty 2-D array"):
        EmpiricalZ().fit([1.0, 2.0])
    with pytest.raises(ValueError, match="S_train must be finite; got 1 NaN"):
        EmpiricalZ().fit([[1.0], [np.nan]])
    with pytest.raises(ValueError, match="higher_is_inlier must be True or False; got 'yes'"):
        EmpiricalZ(higher_is_inlier="yes").fit([[1.0]])
    ez = EmpiricalZ().fit(np.zeros((4, 2)))
    with pytest.raises(ValueError, match=r"S must have 2 column\(s\), as in fit; got 3"):
        ez.transform(np.zeros((1, 3)))
    with pytest.raises(ValueError, match="S must be finite"):
        ez.transform([[0.0, -np.inf]])
    with pytest.raises(ValueError, match="method must be one of"):
        ScoreCombiner(method="mean").fit(np.zeros((4, 2)))
    with pytest.raises(ValueError, match="epsilon is used only by methods"):
        ScoreCombiner(method="hc", epsilon=0.3).fit(np.zeros((4, 2)))
    with pytest.raises(ValueError, match=r"cal_stat must hold at least 45 values for FAR <= "
                                         r"alpha=0.05 with probability >= 1 - delta=0.1; got 44"):
        GuaranteedDetector(alpha=0.05, delta=0.1).fit(rng.normal(size=44))
    with pytest.raises(ValueError, match="cal_stat must be one-dimensional"):
        GuaranteedDetector().fit(np.zeros((50, 2)))
    with pytest.raises(ValueError, match=r"alpha must be in \(0, 1\); got 1.0"):
        GuaranteedDetector(alpha=1.0).fit(np.zeros(50))
    with pytest.raises(ValueError, match=r"Z_train must have at least 2 rows; got 1"):
        inlier_covariance([[1.0, 2.0]])
    with pytest.raises(ValueError, match=r"sigma must be a finite number in \[0, inf\)"):
        inlier_covariance(np.zeros((3, 2)), sigma=-1.0)
    # finite z-values whose products overflow gave inf entries (a warning alone)
    with np.errstate(all="raise"), pytest.raises(
            ValueError, match=r"^Z_train must keep its covariance within the float64 range "
                              r"\(\|z\| up to about 1e154\); got z-values of magnitude up "
                              r"to 2e\+200\.$"):
        inlier_covariance([[1e200, 1.0], [2e200, -1.0]])
    # products or sums beyond float64 of a covariance that is finite (math.fsum raised an
    # OverflowError, then the sum was refused): each column in units of a power of two
    assert inlier_covariance([[1e154, 1e154], [1e154, 1e154], [0.0, 1.0]],
                             sigma=0.0).tolist() == [[1e308, 1e308], [1e308, 1e308]]
    z = np.tile([[1e153, 1e-150], [1e153, -1e-150]], (100, 1))  # 200 rows: sums of 2e308
    big, small = inlier_covariance(z), inlier_covariance(np.ldexp(z, [-600, 0]), sigma=0.0)
    assert big.tolist() == [[float(np.ldexp(small[0, 0], 1200)), 0.0],
                            [0.0, small[1, 1] + 1e-6]]


def test_auto_reads_the_outliers_columns_by_name_seeds_and_bounded_resamples(rng):
    # S_outliers' columns in another order were read by position (auto kept "knn", which
    # does not see the outliers, for "msp"); choose() took a Generator only (AttributeError
    # for a seed); n_bootstrap=10**12 ran without end
    pd = pytest.importorskip("pandas")
    cols = ["msp", "energy", "knn"]
    train = pd.DataFrame(rng.normal(size=(400, 3)), columns=cols)
    out = pd.DataFrame(rng.normal(size=(100, 3)) + [3.0, 0, 0], columns=cols)
    fitted = ScoreCombiner(random_state=0, n_bootstrap=50).fit(train, out)
    assert [cols[c] for c in fitted.columns_] == ["msp"]
    with pytest.raises(ValueError, match=r"^S_outliers must have the columns of S_train, in "
                                         r"its order: \['msp', 'energy', 'knn'\]; got \['knn', "
                                         r"'energy', 'msp'\]\.$"):
        ScoreCombiner(random_state=0, n_bootstrap=50).fit(train, out[["knn", "energy", "msp"]])
    # arrays (no names) are read by position, as before
    ScoreCombiner(random_state=0, n_bootstrap=50).fit(train.to_numpy(), out.to_numpy())
    tasks = [(rng.normal(size=(50, 3)), rng.normal(size=(50, 3)), rng.normal(size=(50, 3)) + 1)]
    combiner = ScoreCombiner(n_bootstrap=20)
    assert combiner.choose(tasks, 7) == combiner.choose(tasks, np.random.default_rng(7))
    assert combiner.choose(iter(tasks), 7) == combiner.choose(tasks, 7)  # read once
    with pytest.raises(ValueError, match=r"^rng must be a numpy.random.Generator or a seed"):
        combiner.choose(tasks, "seven")
    with pytest.raises(ValueError, match=r"^n_bootstrap must be an integer in \[1, 1000000\]"):
        ScoreCombiner(n_bootstrap=10**12).fit(train, out)
    # choose() itself, on tasks of its own: the same checks
    for n_bootstrap in (0, 10**12):
        with pytest.raises(ValueError, match=r"^n_bootstrap must be an integer in \[1, "):
            ScoreCombiner(n_bootstrap=n_bootstrap).choose(tasks, 7)
    z, inl = pd.DataFrame(tasks[0][0], columns=cols), pd.DataFrame(tasks[0][1], columns=cols)
    with pytest.raises(ValueError, match=r"^the rows of every task must name the same columns "
                                         r"in one order: \['msp', 'energy', 'knn'\]; got "):
        combiner.choose([(z, inl, out[["knn", "energy", "msp"]].iloc[:50])], 7)


def test_json_errors(rng):
    assert isinstance(load_json(EmpiricalZ().fit([[1.0], [2.0]]).to_json()), EmpiricalZ)
    with pytest.raises(ValueError, match="^format must be 'abstain/1'"):
        load_json(json.dumps({"format": "abstain.combine/1", "model": "Pickle", "params": {},
                              "fitted": {}}))
    doc = json.loads(EmpiricalZ().fit([[1.0], [2.0]]).to_json())
    doc["fitted"]["sorted_train_"] = {"shape": [1, 2], "float64_le_base64": base64.b64encode(
        np.array([2.0, 1.0]).tobytes()).decode()}
    with pytest.raises(ValueError, match="fitted.sorted_train_ must be sorted ascending"):
        load_json(json.dumps(doc))
    doc["fitted"]["sorted_train_"] = {"shape": [2, 1], "float64_le_base64": base64.b64encode(
        np.array([1.0, 2.0]).tobytes()).decode()}
    with pytest.raises(ValueError, match=r"^fitted\.sorted_train_ must hold at least 2 "
                                         r"training rows; got 1\.$"):
        load_json(json.dumps(doc))
    doc = json.loads(GuaranteedDetector().fit(rng.normal(size=50)).to_json())
    del doc["fitted"]["rank_"]
    with pytest.raises(ValueError, match="fitted.rank_ is missing"):
        load_json(json.dumps(doc))


@pytest.mark.parametrize("epsilon", [-0.1, 100.5, 1e300])
def test_epsilon_has_one_range_for_the_constructor_and_the_loader(rng, epsilon):
    S = rng.normal(size=(50, 3))
    match = (r"^epsilon must be a finite number in \[0, 100\] \(z-values lie within \+-10; a "
             rf"larger epsilon ranks as Stouffer's sum\); got {re.escape(repr(epsilon))}\.$")
    with pytest.raises(ValueError, match=match):
        ScoreCombiner(method="glrt", epsilon=epsilon).fit(S)
    doc = json.loads(ScoreCombiner(method="glrt", epsilon=100.0).fit(S).to_json())
    doc["params"]["epsilon"] = epsilon
    with pytest.raises(ValueError, match="^params." + match[1:]):
        load_json(json.dumps(doc))
    # the largest epsilon gives finite statistics, ranked as Stouffer's sum
    stat = load_json(ScoreCombiner(method="glrt", epsilon=100.0).fit(S).to_json()).score(S)
    assert np.isfinite(stat).all()
    np.testing.assert_array_equal(np.argsort(stat, kind="stable"), np.argsort(
        ScoreCombiner(method="stouffer").fit(S).score(S), kind="stable"))


def test_a_covariance_that_is_not_positive_definite_is_refused_at_fit_and_at_load(rng):
    S = rng.normal(size=(50, 2))
    doc = json.loads(ScoreCombiner(method="glrt_cov").fit(S).to_json())
    singular = np.array([[1.0, 1.0], [1.0, 1.0]])
    doc["fitted"]["cov_"]["float64_le_base64"] = base64.b64encode(
        singular.astype("<f8").tobytes()).decode()
    with pytest.raises(ValueError, match=r"^fitted\.cov_ must be symmetric positive definite "
                       r"\(its Cholesky factorisation fails\); got smallest eigenvalue "):
        load_json(json.dumps(doc))
    # two equal columns have a singular covariance without the ridge sigma
    twins = np.column_stack([S[:, 0], S[:, 0]])
    with pytest.raises(ValueError, match=r"^the inlier covariance of S_train \(with sigma=0\.0\) "
                       r"must be symmetric positive definite .*; give sigma > 0"):
        ScoreCombiner(method="glrt_cov", sigma=0.0).fit(twins)
    assert np.isfinite(ScoreCombiner(method="glrt_cov").fit(twins).score(S)).all()


def test_extreme_training_scores_load_without_overflow_warnings():
    ez = EmpiricalZ().fit([[-1e308, 1.0], [1e308, 2.0], [0.0, 3.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = load_json(ez.to_json())
    np.testing.assert_array_equal(again.sorted_train_, ez.sorted_train_)


def test_a_selection_record_that_contradicts_the_choice_is_refused():
    rng = np.random.default_rng(0)
    S_in, S_out = rng.normal(size=(300, 3)), rng.normal(size=(100, 3)) + [1.5, 0, 0]
    doc = json.loads(ScoreCombiner(random_state=1, n_bootstrap=100).fit(S_in, S_out).to_json())
    sel = doc["fitted"]["selection_"]
    assert sel["method"] == "single" and sel["win_fraction"] < 0.9
    other = json.loads(json.dumps(doc))  # another column than the best single one
    other["fitted"]["selection_"]["columns"] = other["fitted"]["columns_"] = [2]
    with pytest.raises(ValueError, match=r"^fitted\.selection_\.columns must be \[single\] = "
                                         r"\[0\] for method 'single'; got \[2\]\."):
        load_json(json.dumps(other))
    kept = json.loads(json.dumps(doc))  # the combination marked as kept, with 0 % of wins
    s = kept["fitted"]["selection_"]
    s["method"], s["columns"] = s["combination_method"], s["combination_columns"]
    kept["fitted"]["method_"], kept["fitted"]["columns_"] = s["method"], s["columns"]
    with pytest.raises(ValueError, match=r"^fitted\.selection_ must keep the combination "
                                         r"exactly when its win_fraction reaches params\."
                                         r"confidence = 0\.9 and no task_loss_fractions entry "
                                         r"reaches it; got win_fraction 0\.0"):
        load_json(json.dumps(kept))
    kept["params"]["confidence"] = 1e-9  # where that combination would have been kept
    kept["fitted"]["selection_"]["win_fraction"] = 0.5
    kept["fitted"]["selection_"]["kind_win_fractions"] = [0.5]
    kept["fitted"]["selection_"]["task_loss_fractions"] = [0.25]
    with pytest.raises(ValueError, match=r"no task_loss_fractions entry reaches it"):
        load_json(json.dumps(kept))  # the veto: a task lost in 25 % >= 1e-9 of resamples
    kept["params"]["veto"] = False
    assert load_json(json.dumps(kept)).method_ == s["method"]
    kept["params"]["veto"] = True
    kept["fitted"]["selection_"]["task_loss_fractions"] = [0.0]
    assert load_json(json.dumps(kept)).method_ == s["method"]
    for field, value, why in (("task_loss_fractions", None, r"must be null exactly when "
                               r"win_fraction is"),
                              ("task_loss_fractions", [0.0, 0.0], r"must hold one fraction per "
                               r"proxy task \(n_tasks=1\); got 2"),
                              ("task_loss_fractions", [1.0], r"must not sum to more than 1")):
        bad = json.loads(json.dumps(kept))
        bad["fitted"]["selection_"][field] = value
        with pytest.raises(ValueError, match=why):
            load_json(json.dumps(bad))


def test_load_json_refuses_a_covariance_its_z_values_and_sigma_do_not_give():
    # a cov_ multiplied by 4 (still positive definite) or a sigma of 5 loaded and scored
    rng = np.random.default_rng(0)
    S = rng.normal(size=(300, 3))
    fitted = ScoreCombiner(method="glrt_cov").fit(S)
    doc = json.loads(fitted.to_json())
    for change in ("cov", "sigma"):
        bad = json.loads(json.dumps(doc))
        if change == "cov":
            bad["fitted"]["cov_"]["float64_le_base64"] = base64.b64encode(
                (4 * fitted.cov_).astype("<f8").tobytes()).decode()
        else:
            bad["params"]["sigma"] = 5.0
        with pytest.raises(ValueError, match=r"fitted\.cov_ must have the diagonal .* of the "
                                             r"z-values of fitted\.empirical_z_ and params\."
                                             r"sigma"):
            load_json(json.dumps(bad))
    load_json(json.dumps(doc))


def test_load_json_refuses_a_bank_whose_combiner_has_another_ridge():
    from abstain.combine import BankDetector
    from abstain.detectors import KNN, MSP, DetectorBank

    rng = np.random.default_rng(0)
    f = rng.normal(size=(600, 4))
    out = {"features": f, "logits": f[:, :3]}
    det = BankDetector(DetectorBank([MSP(), KNN(k=5, normalize=False)]), method="fisher",
                       alpha=0.1, delta=0.1, random_state=0).fit(
        {k: v[:200] for k, v in out.items()}, calibration_outputs={k: v[200:]
                                                                   for k, v in out.items()})
    doc = json.loads(det.to_json())
    doc["fitted"]["combiner_"]["params"]["sigma"] = 5.0
    with pytest.raises(ValueError, match=r"fitted\.combiner_ must have sigma = 1e-06"):
        load_json(json.dumps(doc))


def test_a_glrt_cov_combiner_of_inlier_scores_loads_its_own_document():
    # the load check took the stored (negated) training scores through transform, which
    # negated them again: every glrt_cov combiner with higher_is_inlier=True was refused
    S = np.random.default_rng(0).normal(size=(300, 3))
    for higher in (False, True):
        c = ScoreCombiner(method="glrt_cov", higher_is_inlier=higher).fit(S)
        np.testing.assert_array_equal(load_json(c.to_json()).score(S), c.score(S))
