"""A rule of the exact two-score search is applied by the exact sign of
``(x - anchor_) . weights_``, as the fit ordered the rows: on scores whose combined score
rounds (a lattice ``1 + k * eps``, integers scaled by 1e-300) the float projection tied rows
the fit separated, and the rule applied took other rates than it reported (an FPR of 1.0
over a bound of 0.5)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from abstain import load_json
from abstain.models import BoundedPrecisionRecall, BoundedTPRFPR, CostBasedOOD

EPS = np.finfo(float).eps
LATTICE = np.array([[0, 1], [1, 0], [0, 1], [1, 1], [0, 0], [0, 0], [0, 1], [1, 0], [0, 1],
                    [1, 1.0]])
LATTICE_OOD = np.array([1, 1, 0, 0, 0, 0, 0, 0, 0, 0], bool)
LATTICE_LOSS = np.array([1.0, 0, 0, 1, 1, 1, 0, 1, 0, 1])
TINY = np.array([[3, 2], [2, 1], [0, 1], [2, 3], [3, 1], [3, 1], [1, 3], [2, 2], [2, 2.0]])
TINY_OOD = np.array([0, 0, 0, 1, 0, 0, 0, 0, 0], bool)
TINY_LOSS = np.array([1.0, 0.0, 0.25, np.nan, 0.25, 1.0, 0.25, 0.0, 0.0])


def _applied(model, s, is_ood, losses):
    p = model.accept_proba(s)
    risk = np.sum(p[~is_ood] * losses[~is_ood]) / np.sum(p[~is_ood])
    return p[~is_ood].mean(), p[is_ood].mean(), risk


@pytest.mark.parametrize(("s", "is_ood", "losses"), [
    (LATTICE, LATTICE_OOD, LATTICE_LOSS), (1.0 + EPS * LATTICE, LATTICE_OOD, LATTICE_LOSS),
    (LATTICE + 1.0, LATTICE_OOD, LATTICE_LOSS), (TINY, TINY_OOD, TINY_LOSS),
    (TINY * 1e-300, TINY_OOD, TINY_LOSS), (TINY * 1.7e300, TINY_OOD, TINY_LOSS)])
@pytest.mark.parametrize("make", [lambda: BoundedTPRFPR(0.5, 0.5, search="exact"),
                                  lambda: BoundedPrecisionRecall(0.5, 0.5, search="exact")])
def test_the_exact_rule_applies_what_it_reports(s, is_ood, losses, make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make().fit(s, is_ood, losses)
    assert model.feasible_ and model.anchor_ is not None
    tpr, fpr, risk = _applied(model, s, is_ood, losses)
    assert tpr == pytest.approx(model.tpr_, abs=1e-12)
    assert fpr == pytest.approx(model.fpr_, abs=1e-12)
    assert risk == pytest.approx(model.risk_, abs=1e-12)
    if isinstance(model, BoundedTPRFPR):
        assert tpr >= 0.5 - 1e-12 and fpr <= 0.5 + 1e-12
    back = load_json(model.to_json())
    np.testing.assert_array_equal(back.accept_proba(s), model.accept_proba(s))


def test_the_anchor_is_checked_on_loading_and_only_exact_fits_have_one():
    model = BoundedTPRFPR(0.5, 0.5, search="exact").fit(1.0 + EPS * LATTICE, LATTICE_OOD,
                                                        LATTICE_LOSS)
    doc = json.loads(model.to_json())
    doc["fitted"]["anchor_"] = [1.0, 5.0]
    with pytest.raises(ValueError, match=r"fitted\.anchor_ must be the score pair at "
                                         r"fitted\.threshold_"):
        load_json(json.dumps(doc))
    grid = BoundedTPRFPR(0.5, 0.5).fit(LATTICE, LATTICE_OOD, LATTICE_LOSS)
    one = CostBasedOOD(0.3, 1.0, 0.1).fit(LATTICE[:, 0], LATTICE_OOD, LATTICE_LOSS)
    assert grid.anchor_ is None and one.anchor_ is None
    assert load_json(grid.to_json()).anchor_ is None


def test_a_plug_in_fit_after_an_exact_fit_drops_the_anchor():
    rule = CostBasedOOD(0.3, 1.0, 0.1, ood_prior=0.5, search="exact")
    rule.fit(TINY, TINY_OOD, TINY_LOSS)
    rule.fit()
    assert rule.anchor_ is None
    assert rule.accept_proba([[0.1, 0.1], [0.1, 0.5]]).tolist() == [1.0, 0.0]
