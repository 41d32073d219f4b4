"""abstain.plot's display objects: the curves, areas, references and operating points they
draw equal the metrics and fitted rules they come from."""

import numpy as np
import pytest

from abstain import BoundedAbstention, CostBased
from abstain import metrics as m
from abstain.detectors import MSP
from abstain.models import BoundedTPRFPR
from abstain.plot import (
    GeneralizedRiskCoverageDisplay,
    OODPrecisionRecallDisplay,
    OODRocDisplay,
    RiskAtFPRDisplay,
    RiskCoverageDisplay,
)

Figure = pytest.importorskip("matplotlib.figure").Figure

rng = np.random.default_rng(3)
N = 300
IS_OOD = rng.random(N) < 0.3
SCORES = rng.normal(IS_OOD * 1.2, 1.0).round(1)  # many ties
LOSSES = np.where(IS_OOD, 0.0, (rng.random(N) < 0.15 + 0.1 * (SCORES > 0)).astype(float))
ID = ~IS_OOD


def _ax():
    return Figure().subplots()


def test_risk_coverage_display_is_the_metric_curve_with_its_aurc():
    ax = _ax()
    d = RiskCoverageDisplay.from_predictions(LOSSES[ID], SCORES[ID], name="u", ax=ax,
                                             references=("random", "oracle"))
    curve = m.risk_coverage_curve(LOSSES[ID], SCORES[ID])
    np.testing.assert_array_equal(d.coverage, curve.coverage)
    np.testing.assert_array_equal(d.risk, curve.risk)
    assert d.line_.get_label() == f"u (AuRC = {m.aurc(LOSSES[ID], SCORES[ID]):.4f})"
    assert d.ax_ is ax and d.figure_ is ax.figure
    assert set(d.reference_lines_) == {"random", "oracle"}
    np.testing.assert_array_equal(d.reference_lines_["random"].get_ydata(),
                                  [LOSSES[ID].mean()] * 2)


def test_oracle_is_the_mean_of_the_smallest_losses_at_each_coverage():
    losses = rng.integers(0, 3, 40).astype(float)  # ties among the losses
    d = RiskCoverageDisplay.from_predictions(losses, rng.random(40), ax=_ax())
    cov, risk = d.references["oracle"]
    ordered = np.sort(losses)
    for c, r in zip(cov, risk, strict=True):
        k = round(c * losses.size)
        assert r == pytest.approx(ordered[:k].mean())


def test_rule_point_is_the_fitted_rules_coverage_and_risk():
    rule = BoundedAbstention(target_coverage=0.7, random_state=0).fit(SCORES[ID], LOSSES[ID])
    d = RiskCoverageDisplay.from_predictions(LOSSES[ID], SCORES[ID], rule=rule, ax=_ax())
    assert d.point == pytest.approx((rule.coverage_, rule.risk_))
    assert d.point_.get_label() == (f"rule: coverage {rule.coverage_:.3f}, risk "
                                    f"{rule.risk_:.4f}")
    g = GeneralizedRiskCoverageDisplay.from_predictions(LOSSES[ID], SCORES[ID], rule=rule,
                                                        ax=_ax())
    assert g.point == pytest.approx((rule.coverage_, rule.coverage_ * rule.risk_))


def test_generalized_display_has_the_augrc():
    d = GeneralizedRiskCoverageDisplay.from_predictions(LOSSES[ID], SCORES[ID], ax=_ax(),
                                                        references=["oracle"])
    curve = m.risk_coverage_curve(LOSSES[ID], SCORES[ID])
    np.testing.assert_allclose(d.risk, curve.coverage * curve.risk)
    assert d.line_.get_label() == f"AUGRC = {m.augrc(LOSSES[ID], SCORES[ID]):.4f}"


def test_roc_and_pr_displays_are_the_metric_curves_with_their_areas():
    roc = OODRocDisplay.from_predictions(IS_OOD, SCORES, name="s", ax=_ax(),
                                         references=("random", "oracle"))
    curve = m.ood_roc_curve(IS_OOD, SCORES)
    np.testing.assert_array_equal(roc.x, curve.fpr)
    np.testing.assert_array_equal(roc.y, curve.tpr)
    assert roc.line_.get_label() == f"s (AUROC = {m.auroc(IS_OOD, SCORES):.4f})"
    pr = OODPrecisionRecallDisplay.from_predictions(IS_OOD, SCORES, ax=_ax(),
                                                    references=["random"])
    assert pr.line_.get_label() == f"AUPR-In = {m.aupr_in(IS_OOD, SCORES):.4f}"
    assert pr.references["random"][1].tolist() == [ID.mean()] * 2


@pytest.mark.parametrize("seed", range(5))
def test_the_drawn_pr_curve_has_the_area_of_its_legend(seed):
    # a step per tie group: the area under the line drawn is the AUPR-In (the average
    # precision), from rows and from a table, for scores worse than chance too
    from abstain.tables import ScoreTable

    g = np.random.default_rng(seed)
    n = int(g.integers(2, 60))
    ood = g.random(n) < 0.4
    ood[:2] = [False, True]
    s = g.integers(0, 6, n) * (1.0 if seed % 2 else -1.0) + ood
    for source in ((ood, s), (ScoreTable.from_arrays(s, np.zeros(n), is_ood=ood),)):
        d = OODPrecisionRecallDisplay.from_predictions(*source, ax=_ax()) if len(source) == 2 \
            else OODPrecisionRecallDisplay.from_table(source[0], ax=_ax())
        assert np.trapezoid(d.y, d.x) == pytest.approx(m.aupr_in(ood, s), abs=1e-12)
        assert d.x[0] == 0.0 and d.x[-1] == 1.0 and np.all(np.diff(d.x) >= 0)


def test_ood_rule_point_is_its_tpr_and_fpr():
    rule = BoundedTPRFPR(tpr=0.8, fpr=0.6, random_state=0).fit(SCORES, IS_OOD, LOSSES)
    roc = OODRocDisplay.from_predictions(IS_OOD, SCORES, rule=rule, ax=_ax())
    assert roc.point == pytest.approx((rule.fpr_, rule.tpr_))
    at = RiskAtFPRDisplay.from_predictions(LOSSES, IS_OOD, SCORES, fpr=0.6, rule=rule,
                                           ax=_ax())
    assert at.point == pytest.approx((rule.tpr_, rule.risk_))
    curve = m.risk_coverage_curve_at_fpr(LOSSES, IS_OOD, SCORES, 0.6)
    np.testing.assert_array_equal(at.y, curve.risk)
    assert at.line_.get_label() == "FPR <= 0.6"


def test_two_score_columns_draw_the_envelope():
    s2 = np.column_stack([SCORES, rng.normal(size=N)])
    roc = OODRocDisplay.from_predictions(IS_OOD, s2, ax=_ax())
    assert roc.area == m.auroc(IS_OOD, s2)


def test_two_score_columns_search_the_directions_as_evaluate_ood():
    pair = np.stack([SCORES, rng.normal(size=N).round(1)], axis=1)
    for search, how in (("grid", "grid"), ("exact", "exact"), ("auto", "exact")):
        roc = OODRocDisplay.from_predictions(IS_OOD, pair, name="p", ax=_ax(), search=search)
        assert roc.y.tolist() == m.ood_roc_curve(IS_OOD, pair, search=how).tpr.tolist()
        assert roc.area == m.auroc(IS_OOD, pair, search=how)
        pr = OODPrecisionRecallDisplay.from_predictions(IS_OOD, pair, name="p", ax=_ax(),
                                                        search=search)
        assert pr.y.tolist() == m.ood_pr_curve(IS_OOD, pair, search=how).precision.tolist()
        risk = RiskAtFPRDisplay.from_predictions(LOSSES, IS_OOD, pair, fpr=0.3, name="p",
                                                 ax=_ax(), search=search)
        np.testing.assert_array_equal(risk.y, m.risk_coverage_curve_at_fpr(
            LOSSES, IS_OOD, pair, 0.3, search=how).risk)
    # one column: search changes nothing; an unknown one is refused
    one = OODRocDisplay.from_predictions(IS_OOD, SCORES, name="p", ax=_ax(), search="exact")
    assert one.area == m.auroc(IS_OOD, SCORES)
    with pytest.raises(ValueError, match="search must be one of"):
        OODRocDisplay.from_predictions(IS_OOD, pair, name="p", ax=_ax(), search="dense")


def test_a_pairs_roc_curve_and_its_area_share_one_sort(monkeypatch):
    """The ROC display of a pair on the grid sorts the grid's directions once for its curve
    and its AUROC (they sorted them apart), with the values of the two functions; the
    sample is not shared past the display."""
    from abstain._ood_search import sample as sample_module

    pair = np.stack([SCORES, rng.normal(size=N).round(1)], axis=1)
    want = (m.ood_roc_curve(IS_OOD, pair, search="grid").tpr, m.auroc(IS_OOD, pair,
                                                                     search="grid"))
    sorts = []
    for name in ("grid_orders", "grid_orders_both"):
        real = getattr(sample_module, name)
        monkeypatch.setattr(sample_module, name,
                            lambda *a, _real=real, **k: sorts.append(1) or _real(*a, **k))
    roc = OODRocDisplay.from_predictions(IS_OOD, pair, name="p", ax=_ax(), search="grid")
    assert len(sorts) == 1
    assert roc.y.tolist() == want[0].tolist() and roc.area == want[1]
    m.auroc(IS_OOD, pair, search="grid")
    assert len(sorts) == 2


def test_from_estimator_selective_classifier_marks_its_reject_model():
    pytest.importorskip("sklearn")
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression

    from abstain import SelectiveClassifier
    from abstain.metrics import neg_aurc_scorer

    X, y = load_iris(return_X_y=True)
    clf = SelectiveClassifier(LogisticRegression(max_iter=500), random_state=0).fit(X, y)
    d = RiskCoverageDisplay.from_estimator(clf, X, y, ax=_ax())
    losses = (clf.predict(X) != y).astype(float)
    assert d.area == m.aurc(losses, clf.uncertainty(X))
    assert d.area == -neg_aurc_scorer(clf, X, y)  # the scorer of model selection
    c = clf.accept_proba(X)
    assert d.point == pytest.approx((c.mean(), c @ losses / c.sum()))
    assert d.line_.get_label().startswith("SelectiveClassifier (AuRC = ")


@pytest.mark.parametrize("order", [[1, 0, 2], [1, 0]])
def test_from_estimator_takes_classes_in_any_order(order):
    """A classifier whose classes_ are not sorted: the display looked labels up as if they
    were (AuRC 0.1701 where the losses of its predictions give 0.2473, an IndexError with
    two classes)."""
    pytest.importorskip("sklearn")
    from estimators import Reordered
    from sklearn.linear_model import LogisticRegression

    from abstain import SelectiveClassifier

    r = np.random.default_rng(0)
    X = r.normal(size=(600, 2))
    k = len(order)
    y = np.array(list("abc"))[np.digitize(X[:, 0] + r.normal(size=600), [-0.5, 0.5][: k - 1])]
    model = Reordered(LogisticRegression().fit(X, y), order)
    clf = SelectiveClassifier(model, prefit=True, random_state=0).fit(X, y)
    d = RiskCoverageDisplay.from_estimator(clf, X, y, ax=_ax())
    losses = (clf.predict(X) != y).astype(float)
    assert d.area == m.aurc(losses, clf.uncertainty(X))
    assert d.references["random"][1][0] == losses.mean()


def test_no_tpr_reachable_names_the_first_target():
    """One ID row of 500 can be kept at FPR 0 (TPR 0.002, below the curve's first target
    0.01): the legend said "no TPR reachable"."""
    s = np.r_[0.0, np.ones(499), 0.5, np.full(99, 2.0)]
    ood = np.r_[np.zeros(500, bool), np.ones(100, bool)]
    losses = np.zeros(600)
    assert m.selective_risk_at_tpr_fpr(losses, ood, s, tpr=0.002, fpr=0.0) == 0.0
    d = RiskAtFPRDisplay.from_predictions(losses, ood, s, fpr=0.0, ax=_ax())
    assert not d.reachable
    assert d.line_.get_label() == "FPR <= 0: no TPR >= 0.01 reachable"


def test_from_estimator_detector():
    logits = rng.normal(size=(N, 4)) + 3 * np.eye(4)[rng.integers(0, 4, N)] * ID[:, None]
    det = MSP().fit(logits)
    d = OODRocDisplay.from_estimator(det, logits, IS_OOD, ax=_ax())
    assert d.area == m.auroc(IS_OOD, det.score(logits)) and d.point is None
    assert d.line_.get_label().startswith("MSP (AUROC = ")


def test_bad_rule_and_references_are_refused():
    with pytest.raises(ValueError, match="rule must be a fitted reject rule"):
        RiskCoverageDisplay.from_predictions(LOSSES, SCORES, rule="chow", ax=_ax())
    with pytest.raises(ValueError, match="references must be one of 'random', 'oracle'"):
        RiskCoverageDisplay.from_predictions(LOSSES, SCORES, references=["best"], ax=_ax())
    bare = RiskCoverageDisplay([0.5, 1.0], [0.0, 0.5])
    with pytest.raises(ValueError, match="no 'oracle' curve"):
        bare.plot(_ax(), references=["oracle"])
    with pytest.raises(ValueError, match="estimator must be a fitted SelectiveClassifier"):
        RiskCoverageDisplay.from_estimator(CostBased(0.1).fit(SCORES, LOSSES), SCORES, LOSSES)


def test_display_renders_to_png(tmp_path):
    ax = _ax()
    for d in (RiskCoverageDisplay.from_predictions(LOSSES[ID], SCORES[ID], ax=ax, name="a"),
              RiskCoverageDisplay.from_predictions(LOSSES[ID], -SCORES[ID], ax=ax, name="b",
                                                   ls="--", references=["oracle"])):
        assert d.ax_ is ax
    ax.figure.savefig(tmp_path / "rc.png")
    assert (tmp_path / "rc.png").stat().st_size > 1000


def test_labels_and_predictions_as_scikit_learn_passes_them():
    """from_predictions(y_true, y_score, y_pred=y_pred): the loss is y_true != y_pred."""
    y_true = rng.choice(["cat", "dog", "cow"], N)
    y_pred = np.where(LOSSES > 0, np.roll(y_true, 1), y_true)
    errors = (y_true != y_pred).astype(float)
    for cls in (RiskCoverageDisplay, GeneralizedRiskCoverageDisplay):
        a = cls.from_predictions(y_true, SCORES, y_pred=y_pred, ax=_ax())
        b = cls.from_predictions(errors, SCORES, ax=_ax())
        np.testing.assert_array_equal(a.risk, b.risk)
    labels = np.where(IS_OOD, "-", y_true)  # OOD rows' labels are not read
    a = RiskAtFPRDisplay.from_predictions(labels, IS_OOD, SCORES, fpr=0.2, y_pred=y_pred,
                                          ax=_ax())
    b = RiskAtFPRDisplay.from_predictions(np.where(IS_OOD, 0.0, errors), IS_OOD, SCORES,
                                          fpr=0.2, ax=_ax())
    np.testing.assert_array_equal(a.y, b.y)
    with pytest.raises(ValueError, match="y_pred must have the shape of y_true"):
        RiskCoverageDisplay.from_predictions(y_true, SCORES, y_pred=y_pred[:-1], ax=_ax())
    with pytest.raises(ValueError, match="y_true"):
        RiskCoverageDisplay.from_predictions(np.arange(N) * 1.0, SCORES, y_pred=y_true,
                                             ax=_ax())


@pytest.mark.parametrize("display", [OODRocDisplay, OODPrecisionRecallDisplay,
                                     RiskAtFPRDisplay])
@pytest.mark.parametrize("marks", [[0, 2, 0, 2], [0, 0.5, 1, 1], [0, np.nan, 1, 1]])
def test_ood_displays_check_the_marks_as_the_metrics_do(display, marks):
    scores = np.array([0.1, 0.7, 0.4, 0.9])
    with pytest.raises(ValueError, match="^is_ood must (hold only 0/1 or False/True|be finite)"):
        if display is RiskAtFPRDisplay:
            display.from_predictions(np.zeros(4), marks, scores, ax=Figure().subplots())
        else:
            display.from_predictions(marks, scores, ax=Figure().subplots())


def test_a_one_column_score_matrix_is_drawn_as_its_column():
    # (n, 1) was taken as a pair: the envelope's interpolated PR curve, no AUPR-In
    pr = OODPrecisionRecallDisplay.from_predictions(IS_OOD, SCORES[:, None], ax=_ax())
    one = OODPrecisionRecallDisplay.from_predictions(IS_OOD, SCORES, ax=_ax())
    assert pr.area == one.area == m.aupr_in(IS_OOD, SCORES)
    assert pr.x.tolist() == one.x.tolist() and pr.y.tolist() == one.y.tolist()


def test_references_and_points_of_losses_near_the_float64_maximum_are_finite():
    # the mean loss and the rule's accepted sum overflowed to inf
    losses = np.array([1e308, 1e308, 0.0, 1e308])
    u = np.array([0.1, 0.2, 0.3, 0.4])
    rule = BoundedAbstention(target_coverage=1.0).fit(u, losses)
    d = RiskCoverageDisplay.from_predictions(losses, u, rule=rule, ax=_ax())
    assert d.references["random"][1].tolist() == [7.5e307, 7.5e307]
    assert d.point == (1.0, 7.5e307) and d.risk[-1] == 7.5e307
    g = GeneralizedRiskCoverageDisplay.from_predictions(losses, u, ax=_ax())
    assert g.references["random"][1].tolist() == [0.0, 7.5e307]


def test_from_estimator_checks_y_against_x():
    pytest.importorskip("sklearn")
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression

    from abstain import SelectiveClassifier

    X, y = load_iris(return_X_y=True)
    clf = SelectiveClassifier(LogisticRegression(max_iter=500), random_state=0).fit(X, y)
    # NumPy's IndexError about broadcast shapes; an (n, n) array of "losses"
    with pytest.raises(ValueError, match=r"^X and y must have the same length; got X has "
                                         r"150, y has 149\.$"):
        RiskCoverageDisplay.from_estimator(clf, X, y[:-1], ax=_ax())
    with pytest.raises(ValueError, match=r"^y must be one-dimensional, one label per row of "
                                         r"X; got shape \(150, 1\)\.$"):
        GeneralizedRiskCoverageDisplay.from_estimator(clf, X, y[:, None], ax=_ax())


def test_one_reference_may_be_named_alone():
    # "references must be one of 'random', 'oracle'; got 'r'": the name's letters
    d = RiskCoverageDisplay.from_predictions(LOSSES, SCORES, references="random", ax=_ax())
    assert list(d.reference_lines_) == ["random"]


def test_an_estimator_that_is_no_detector_is_named_and_unlabelled_lines_draw_no_legend():
    # a classifier's score(X, y) ended in "missing 1 required positional argument: 'y'";
    # a pair's PR envelope without a name warned "No artists with labels found"
    import warnings

    from sklearn.linear_model import LogisticRegression

    X = rng.normal(size=(60, 2))
    clf = LogisticRegression().fit(X, (X[:, 0] > 0).astype(int))
    for display in (OODRocDisplay, OODPrecisionRecallDisplay):
        with pytest.raises(ValueError, match=r"^estimator must be a fitted OOD detector whose "
                           r"score\(X\) gives one score per row .*; got LogisticRegression\.$"):
            display.from_estimator(clf, X, X[:, 0] > 0, ax=_ax())
    pair = np.column_stack([SCORES, rng.normal(size=N)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = OODPrecisionRecallDisplay.from_predictions(IS_OOD, pair, ax=_ax())
    assert d.ax_.get_legend() is None
