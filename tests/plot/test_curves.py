"""abstain.plot draws the metric results; each plot is rendered to a PNG file."""

import numpy as np
import pytest

from abstain import metrics as m
from abstain.plot import (
    plot_pr,
    plot_risk_at_fpr,
    plot_risk_coverage,
    plot_roc,
    plot_score_histograms,
)

Figure = pytest.importorskip("matplotlib.figure").Figure

rng = np.random.default_rng(1)
IS_OOD = rng.random(200) < 0.3
SCORES = rng.normal(IS_OOD * 1.5, 1.0).round(1)  # many ties
LOSSES = (rng.random(200) < 0.2).astype(float)


@pytest.mark.parametrize("draw", [
    lambda ax: plot_risk_coverage(m.risk_coverage_curve(LOSSES, SCORES), label="u", ax=ax),
    lambda ax: plot_roc(m.ood_roc_curve(IS_OOD, SCORES), ax=ax),
    lambda ax: plot_pr(m.ood_pr_curve(IS_OOD, SCORES), ax=ax),
    lambda ax: plot_risk_at_fpr(m.risk_coverage_curve_at_fpr(LOSSES, IS_OOD, SCORES, 0.2),
                                ax=ax, fpr=0.2),
    lambda ax: plot_score_histograms(SCORES, IS_OOD, ax=ax),
])
def test_plot_renders_to_a_file(draw, tmp_path):
    fig = Figure()
    ax = draw(fig.add_subplot())
    assert ax.lines or ax.patches
    fig.savefig(tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 5_000


def test_risk_coverage_plot_draws_the_curve_points():
    curve = m.risk_coverage_curve(LOSSES, SCORES)
    ax = plot_risk_coverage(curve, ax=Figure().add_subplot())
    x, y = ax.lines[0].get_data()
    np.testing.assert_array_equal(x, curve.coverage)
    np.testing.assert_array_equal(y, curve.risk)


def test_histograms_check_shapes():
    with pytest.raises(ValueError, match="scores and groups must be 1-D of one length"):
        plot_score_histograms([0.1, 0.2], [True], ax=Figure().add_subplot())
    for kwargs, message in (({"bins": 0}, "bins must be an integer >= 1; got 0"),
                            ({"bins": 2.5}, "bins must be an integer >= 1; got 2.5"),
                            ({"labels": ("ID",)}, "labels must be a pair of names")):
        with pytest.raises(ValueError, match=message):
            plot_score_histograms([0.1, 0.2], [True, False], ax=Figure().add_subplot(),
                                  **kwargs)


@pytest.mark.parametrize("scores", [[-1.7e308, 1e300, 1.7e308, 0.0],
                                    [-1.7e308, 1e300, -1e300, 0.0],  # a finite range
                                    [1e308, 1.5e308, 1.2e308, 1.7e308]])
def test_histograms_of_scores_near_the_float64_maximum_are_drawn_in_a_smaller_unit(scores):
    # max - min overflowed: NumPy's message about bins; near it, matplotlib's ticks failed
    # when the figure was drawn ("arange: cannot compute length"), and no report
    import io

    ax = plot_score_histograms(scores, [False, True, False, True], ax=Figure().add_subplot())
    assert len(ax.patches) == 2 and ax.get_xlabel().startswith("score / 2**")
    ax.figure.savefig(io.BytesIO(), format="png")


def test_curves_take_line_properties_and_two_score_columns():
    both = np.stack([SCORES, rng.normal(IS_OOD * 1.0, 1.0)], axis=1)
    ax = Figure().add_subplot()
    plot_roc(m.ood_roc_curve(IS_OOD, both), label="pair", ax=ax, ls="--", color="k")
    plot_pr(m.ood_pr_curve(IS_OOD, both), ax=ax, lw=3)
    plot_risk_at_fpr(m.risk_coverage_curve_at_fpr(LOSSES, IS_OOD, both, 0.2), ax=ax, ls=":")
    plot_risk_coverage(m.risk_coverage_curve(LOSSES, SCORES), ax=ax, ls="-.")
    roc, _, pr, risk, rc = ax.lines  # the second line is the ROC's chance diagonal
    assert (roc.get_linestyle(), roc.get_color(), roc.get_label()) == ("--", "k", "pair")
    assert pr.get_linewidth() == 3
    assert (risk.get_linestyle(), rc.get_linestyle()) == (":", "-.")


@pytest.mark.parametrize("groups", [[0, 2, 1], [0.0, 0.5, 1.0], [0.0, np.nan, 1.0],
                                    ["a", "b", "a"]])
def test_histogram_groups_are_0_1_or_bool(groups):
    with pytest.raises(ValueError, match=r"^groups must hold 0/1 or False/True"):
        plot_score_histograms([0.1, 0.2, 0.9], groups, ax=Figure().subplots())


@pytest.mark.parametrize("scores", [[5.0, 5.0, 5.0], [1 - 2**-53, 1.0, 1.0],
                                    [1e17, 1e17, 1e17], [1e-310, 2e-310, 3e-310]])
def test_histograms_of_a_few_float_steps_draw_each_group_whole(scores):
    # edges repeated (a range of a few steps, lo + 1 == lo at 1e17) or densities beyond
    # float64 (subnormal widths): NaN or inf heights and an empty plot
    ax = plot_score_histograms(scores, [False, True, True], ax=Figure().add_subplot())
    for patch in ax.patches:
        heights, edges = patch.get_data().values, patch.get_data().edges
        assert np.all(np.isfinite(heights)) and np.all(np.diff(edges) > 0)
        assert float(np.sum(heights * np.diff(edges))) == pytest.approx(1.0, rel=1e-12)


def test_histograms_refuse_non_finite_scores_and_count_rows_beyond_int64():
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError, match=r"^scores must be finite numbers; got 1 NaN or "
                                             r"infinite value\(s\)\.$"):
            plot_score_histograms([0.0, bad, 1.0], [False, True, True],
                                  ax=Figure().add_subplot())
    ax = plot_score_histograms([0.1, 0.2, 0.3], [False, False, True], ax=Figure().add_subplot(),
                               weights=np.array([2**62, 2**62, 1], dtype=np.int64))
    labels = [p.get_label() for p in ax.patches]
    assert labels == ["ID (9223372036854775808)", "OOD (1)"]


def test_histograms_check_small_as_they_check_bins():
    # small="30" ended in "'<' not supported between instances of 'int' and 'str'"
    from matplotlib.figure import Figure

    from abstain.plot import plot_score_histograms

    for bad in ("30", None, 2.5, -5):
        with pytest.raises(ValueError, match=r"^small must be an integer >= 0; got "):
            plot_score_histograms([0.1, 0.2], [0, 1], small=bad, ax=Figure().subplots())
