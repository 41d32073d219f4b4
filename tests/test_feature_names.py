"""feature_names_in_ of every estimator whose fit takes a matrix of columns (scikit-learn's
contract): a data frame's column names are kept, saved, and checked at every later call."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from abstain import load_json
from abstain.combine import EmpiricalZ, ScoreCombiner
from abstain.detectors import KNN, MSP, Mahalanobis, ReAct, ViM
from abstain.scores import SELE, TCP, LossRegression

pd = pytest.importorskip("pandas")

rng = np.random.default_rng(0)
X = pd.DataFrame(rng.normal(size=(120, 3)) * [1.0, 2.0, 0.5] + 1.0, columns=["a", "b", "c"])
Y = rng.integers(0, 3, 120)
W, B = rng.normal(size=(3, 3)), rng.normal(size=3)
LOSSES = (rng.random(120) < 0.3).astype(float)
OUTLIERS = pd.DataFrame(rng.normal(size=(60, 3)) + 2.0, columns=["a", "b", "c"])


def _fit_and_use(kind: str):
    """(fit, use): fit the estimator on the frame ``X``, use it on a matrix ``M``."""
    cases = {
        "KNN": (lambda M: KNN(k=3).fit(M), lambda e, M: e.score(M)),
        "Mahalanobis": (lambda M: Mahalanobis().fit(M, Y), lambda e, M: e.score(M)),
        "ViM": (lambda M: ViM(dim=1).fit(M, weight=W, bias=B), lambda e, M: e.score(M)),
        "ReAct": (lambda M: ReAct().fit(M, weight=W, bias=B), lambda e, M: e.score(M)),
        "MSP": (lambda M: MSP().fit(M), lambda e, M: e.score(M)),
        "EmpiricalZ": (lambda M: EmpiricalZ().fit(M), lambda e, M: e.transform(M)),
        "ScoreCombiner(glrt)": (lambda M: ScoreCombiner(method="glrt").fit(M),
                                lambda e, M: e.score(M)),
        "ScoreCombiner(auto)": (lambda M: ScoreCombiner(random_state=0).fit(
            M, OUTLIERS if isinstance(M, pd.DataFrame) else OUTLIERS.to_numpy()),
            lambda e, M: e.score(M)),
        "LossRegression": (lambda M: LossRegression().fit(M, Y, LOSSES),
                           lambda e, M: e.score(M, Y)),
        "SELE": (lambda M: SELE().fit(M, Y, LOSSES), lambda e, M: e.score(M, Y)),
        "TCP": (lambda M: TCP().fit(M, Y, LOSSES), lambda e, M: e.score(M, Y)),
    }
    return cases[kind]


KINDS = ["KNN", "Mahalanobis", "ViM", "ReAct", "MSP", "EmpiricalZ", "ScoreCombiner(glrt)",
         "ScoreCombiner(auto)", "LossRegression", "SELE", "TCP"]


@pytest.mark.parametrize("kind", KINDS)
def test_column_names_are_kept_checked_and_saved(kind):
    # fitted on a frame, these used columns in another order without a word (Mahalanobis
    # 5.75 became 18.17 on the same rows)
    fit, use = _fit_and_use(kind)
    est = fit(X)
    assert est.feature_names_in_.tolist() == ["a", "b", "c"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same = use(est, X)  # the same names: no warning
    np.testing.assert_array_equal(same, use(fit(X.to_numpy()), X.to_numpy()))
    with pytest.raises(ValueError, match=r"^The feature names should match those that were "
                                         r"passed during fit: \['a', 'b', 'c'\]; got "
                                         r"\['c', 'b', 'a'\]\.$"):
        use(est, X[["c", "b", "a"]])
    with pytest.warns(UserWarning, match="X does not have valid feature names, but "):
        use(est, X.to_numpy())
    loaded = load_json(est.to_json())
    assert loaded.feature_names_in_.tolist() == ["a", "b", "c"]
    with pytest.raises(ValueError, match="The feature names should match"):
        use(loaded, X[["b", "a", "c"]])
    doc = json.loads(est.to_json())
    doc["fitted"]["feature_names_in_"] = ["a", "b"]
    with pytest.raises(ValueError, match=r"fitted\.feature_names_in_ must hold 3 strings, one "
                                         r"per column"):
        load_json(json.dumps(doc))
    doc["fitted"]["feature_names_in_"] = ["a", "b", 3]
    with pytest.raises(ValueError, match="fitted.feature_names_in_"):
        load_json(json.dumps(doc))
    plain = fit(X.to_numpy())  # fitted on an array: no names, and a frame warns
    assert not hasattr(plain, "feature_names_in_")
    assert "feature_names_in_" not in json.loads(plain.to_json())["fitted"]
    with pytest.warns(UserWarning, match="X has feature names, but "):
        use(plain, X)


def test_many_names_are_shown_by_the_first_difference():
    wide = pd.DataFrame(rng.normal(size=(40, 12)), columns=[f"f{i}" for i in range(12)])
    est = KNN(k=3).fit(wide)
    swapped = wide[[*wide.columns[:5], "f6", "f5", *wide.columns[7:]]]
    with pytest.raises(ValueError, match=r"^The feature names should match those that were "
                                         r"passed during fit \(12 names\); got 12, and column 5 "
                                         r"is 'f6' where fit had 'f5'\.$"):
        est.score(swapped)


def test_no_warning_where_the_library_makes_the_arrays_or_nothing_was_fitted():
    # tune_detector scored its shuffled proxy rows, arrays it made itself, with candidates
    # fitted on the caller's frame; a logit detector fitted on nothing warned on any frame
    from abstain.models import tune_detector

    logits = pd.DataFrame(rng.normal(size=(60, 3)), columns=["x", "y", "z"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tune_detector(KNN(normalize=False), {"k": [1, 5]}, {"features": X.iloc[:60]},
                      train_outputs={"features": X.iloc[60:]}, random_state=0)
        MSP().score(logits)
        MSP().fit().score(logits)
        tune_detector(MSP(), {"temperature": [1.0, 2.0]}, {"logits": logits}, random_state=0)


def test_tune_detector_checks_the_names_of_the_outlier_frame():
    # the candidates were compared on arrays: an OOD frame of the same columns in another
    # order was scored by position (AUROC 0.912 for 0.98)
    from abstain.detectors import shuffled_columns
    from abstain.models import tune_detector

    ood = X.iloc[:60] + 3.0
    with pytest.raises(ValueError, match="The feature names should match"):
        tune_detector(KNN(normalize=False), {"k": [1, 5]}, {"features": X.iloc[60:]},
                      ood_outputs={"features": ood[["b", "a", "c"]]},
                      train_outputs={"features": X.iloc[:60]}, criterion="auroc")
    # the shuffled rows of a frame are a frame of its columns; other tables give an array
    assert list(shuffled_columns(X, random_state=0).columns) == ["a", "b", "c"]
    pa = pytest.importorskip("pyarrow")
    assert isinstance(shuffled_columns(pa.Table.from_pandas(X), random_state=0), np.ndarray)


def test_the_warning_points_at_the_callers_line():
    # through score_outputs, _work or transform the warning named a line of the library
    est = Mahalanobis().fit(X, Y)
    for call in (lambda: est.score(X.to_numpy()),
                 lambda: est.score_outputs({"features": X.to_numpy()}),
                 lambda: ScoreCombiner(method="glrt").fit(X).score(X.to_numpy()),
                 lambda: LossRegression().fit(X, Y, LOSSES).decision_function(X.to_numpy(), Y)):
        with pytest.warns(UserWarning, match="does not have valid feature names") as caught:
            call()
        assert caught[0].filename == __file__
