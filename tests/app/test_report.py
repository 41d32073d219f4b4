"""abstain.app.report: the report's figures draw the library's curves; the HTML page is one
self-contained file that escapes the table's names."""

from __future__ import annotations

import base64
import os
import re

import numpy as np
import pytest

from abstain import metrics as m
from abstain.app.evaluate import evaluate
from abstain.app.io import read_table, write_table
from abstain.app.report import html_report, report_figures, write_report
from abstain.app.tables import prepare

pytest.importorskip("matplotlib")

LOSS = np.array([0, 1, 0, 0, 1, 0, 0, 0, 1, 0], dtype=float)
U = np.array([0.1, 0.9, 0.2, 0.2, 0.7, 0.3, 0.8, 0.4, 0.6, 0.9])
G = np.array([0.0, 0.1, 0.2, 0.9, 0.3, 0.8, 0.7, 0.1, 0.2, 0.95])
OOD = np.array([0, 0, 0, 1, 0, 1, 1, 0, 0, 1], dtype=bool)
EVIL = "<script>alert(1)</script>"


def _lines(fig):
    """The curves of a one-axes figure by score name (the legend label up to the area)."""
    (ax,) = fig.axes
    return {ln.get_label().split(" (")[0]: ln for ln in ax.lines
            if not ln.get_label().startswith("_")}


def test_figures_with_an_ood_column():
    import matplotlib.pyplot as plt

    open_before = plt.get_fignums()
    data = prepare({"loss": LOSS, "u": U, "g": G, "is_ood": OOD})
    calls = []
    figs = report_figures(data, fpr=0.25, progress=lambda d, t: calls.append((d, t)))
    assert list(figs) == ["risk_coverage", "generalized_risk_coverage", "roc", "pr",
                          "risk_at_fpr", "histograms_u", "histograms_g"]
    assert calls == [(i, 7) for i in range(1, 8)]
    assert plt.get_fignums() == open_before  # no pyplot state
    assert [len(figs[f"histograms_{s}"].axes) for s in "ug"] == [2, 2]  # correct/wrong, ID/OOD
    for name, s in (("u", U), ("g", G)):
        curve = m.risk_coverage_curve(LOSS[~OOD], s[~OOD])  # the ID rows only
        line = _lines(figs["risk_coverage"])[name]
        assert line.get_drawstyle() == "steps-post"
        np.testing.assert_array_equal(line.get_xydata(), np.stack([curve.coverage, curve.risk],
                                                                  axis=1))
        roc = m.ood_roc_curve(OOD, s)
        np.testing.assert_array_equal(_lines(figs["roc"])[name].get_xydata(),
                                      np.stack([roc.fpr, roc.tpr], axis=1))
        at_fpr = m.risk_coverage_curve_at_fpr(LOSS, OOD, s, 0.25)
        np.testing.assert_array_equal(_lines(figs["risk_at_fpr"])[name].get_xydata(),
                                      np.stack([at_fpr.tpr, at_fpr.risk], axis=1))


def test_figures_without_ood_rows():
    for table in ({"loss": LOSS, "u": U}, {"loss": LOSS, "u": U, "is_ood": np.zeros(10)}):
        figs = report_figures(prepare(table))
        assert list(figs) == ["risk_coverage", "generalized_risk_coverage", "histograms_u"]
        assert len(figs["histograms_u"].axes) == 1
        curve = m.risk_coverage_curve(LOSS, U)
        np.testing.assert_array_equal(_lines(figs["risk_coverage"])["u"].get_xydata(),
                                      np.stack([curve.coverage, curve.risk], axis=1))


def test_a_long_legend_goes_below_the_axes_and_nothing_collapses():
    """Thirty scores: each curve figure's legend (32 entries with the references) would
    squash its axes to nothing inside them; it goes below, in two columns, and the figure
    grows. A short legend stays inside the axes."""
    import io
    import warnings

    rng = np.random.default_rng(0)
    ood = rng.random(300) < 0.3
    loss = np.where(ood, 0.0, rng.random(300) < 0.2)
    table = {"loss": loss, "is_ood": ood} | {f"s{j}": rng.normal(size=300) + ood
                                             for j in range(30)}
    short = report_figures(prepare({"loss": LOSS, "u": U, "g": G, "is_ood": OOD}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns when a layout collapses
        figs = report_figures(prepare(table))
        for name in ("risk_coverage", "generalized_risk_coverage", "roc", "pr",
                     "risk_at_fpr"):
            fig = figs[name]
            fig.savefig(io.BytesIO(), format="png", dpi=50)
            ax = fig.axes[0]  # the curves' axes (an inset comes after it)
            assert ax.get_legend() is None
            (legend,) = fig.legends
            assert len(legend.get_texts()) >= 31  # every score, then the references
            assert fig.get_size_inches()[1] > 4 + 15 * 0.16
            assert ax.get_position().height > 0.3  # the axes keep their room
            assert short[name].axes[0].get_legend() is not None
            assert not short[name].legends


@pytest.fixture(scope="module")
def evil(tmp_path_factory):
    """A table whose score column is named like a script, with one row of missing values;
    its report (title with markup too) and the PNGs written beside it."""
    folder = tmp_path_factory.mktemp("report")
    write_table(folder / "t.csv", {"loss": [0, 1, 0, np.nan, 1], EVIL: [0.1, 0.7, 0.3, 0.5,
                                                                       0.2]})
    data = prepare(read_table(folder / "t.csv"), dropna=True)
    ev = evaluate(data, coverages=[0.5])
    page = html_report(data, ev, title="Q&A <b>", png_dir=folder / "png",
                       provenance={"date": "2026-01-01 00:00:00 UTC"})
    return folder, data, ev, page


def test_html_report_is_self_contained(evil):
    folder, _, _, page = evil
    links = re.findall(r'\b(?:src|href)\s*=\s*"([^"]*)"', page)
    assert len(links) == 3  # the two risk-coverage figures and histograms_<EVIL>
    assert all(link.startswith("data:image/png;base64,") for link in links)
    assert re.search(r"<link|<script|url\(|@import|https?:", page, re.IGNORECASE) is None
    pngs = sorted((folder / "png").iterdir())
    assert [p.name for p in pngs] == ["generalized_risk_coverage.png",
                                      "histograms__script_alert_1_script_-4254ccf7.png",
                                      "risk_coverage.png"]
    # each embedded image is the PNG written for it, byte for byte
    embedded = {alt: base64.b64decode(src[len("data:image/png;base64,"):]) for alt, src in
                re.findall(r'<img alt="([^"]*)" src="([^"]*)">', page)}
    assert embedded["risk_coverage"] == (folder / "png" / "risk_coverage.png").read_bytes()
    assert embedded["histograms_&lt;script&gt;alert(1)&lt;/script&gt;"] == pngs[1].read_bytes()
    assert all(png.startswith(b"\x89PNG\r\n\x1a\n") for png in embedded.values())


def test_html_report_escapes_names_and_holds_the_metrics(evil):
    _, _, ev, page = evil
    assert EVIL not in page and "<b>" not in page
    assert "<title>Q&amp;A &lt;b&gt;</title>" in page and "<h1>Q&amp;A &lt;b&gt;</h1>" in page
    assert "<th>&lt;script&gt;alert(1)&lt;/script&gt;</th>" in page
    assert "<li>4 rows: 4 ID, 0 OOD; 1 dropped for missing values</li>" in page
    rows = dict(re.findall(r"<tr><th>([^<]*)</th><td>([^<]*)</td></tr>", page))
    assert list(rows) == ["AuRC", "E-AuRC", "AUGRC", "risk at coverage 50%"]
    assert rows == {label: f"{ev.metrics[EVIL][key]:.4f}" for key, label in ev.labels.items()}


def test_write_report_writes_the_page_over_any_file_at_its_path(evil, tmp_path):
    _, data, ev, page = evil
    # write_report takes no input path, so nothing stops it from replacing the table the
    # data came from: it writes html_report's page there, atomically
    target = tmp_path / "t.csv"
    write_table(target, {"loss": [0, 1, 0, np.nan, 1], EVIL: [0.1, 0.7, 0.3, 0.5, 0.2]})
    write_report(target, data, ev, title="Q&A <b>",
                 provenance={"date": "2026-01-01 00:00:00 UTC"})
    assert target.read_text(encoding="utf-8") == page
    assert [p.name for p in tmp_path.iterdir()] == ["t.csv"]  # no temporary file left


def test_a_one_row_table_warns_and_draws_a_visible_point():
    data = prepare({"loss": [1.0], "u": [0.5]})
    ev = evaluate(data)
    from abstain.app.report import sample_warnings

    warnings = sample_warnings(data, ev)
    assert warnings[0].startswith("only 1 in-distribution row: the curves and metrics")
    assert warnings[1].startswith("only 1 misclassified ID row: ")
    figs = report_figures(data)
    line = _lines(figs["risk_coverage"])["u"]
    assert line.get_marker() == "o" and line.get_xydata().tolist() == [[1.0, 1.0]]
    page = html_report(data, ev)
    assert '<li class="warn">only 1 in-distribution row:' in page
    data = prepare({"loss": [0.5, 0.0, 0.0], "u": [0.5, 0.1, 0.2]})
    assert sample_warnings(data, evaluate(data))[1].startswith(
        "only 1 ID row with a loss above 0: ")


def test_small_groups_are_drawn_in_counts_with_a_rug():
    figs = report_figures(prepare({"loss": LOSS, "u": U, "g": G, "is_ood": OOD}))
    ax = figs["histograms_u"].axes[0]
    assert ax.get_ylabel() == "count"
    rugs = [ln for ln in ax.lines if ln.get_marker() == "|"]
    assert sum(len(r.get_xdata()) for r in rugs) == int((~OOD).sum())  # both groups are small


def test_png_names_are_unique_deterministic_and_safe():
    from abstain.app.report import png_names

    names = ["roc", "histograms_риск", "histograms_距离", "histograms_a b", "histograms_a_b",
             "histograms_A_B", "histograms_../x"]
    files = png_names(names)
    assert files == png_names(names)  # the same every run
    assert len({f.casefold() for f in files.values()}) == len(names)  # also ignoring case
    assert files["roc"] == "roc.png" and files["histograms_a_b"] == "histograms_a_b.png"
    assert files["histograms_a b"].startswith("histograms_a_b-")
    assert files["histograms_A_B"].startswith("histograms_A_B-")  # taken ignoring case
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+\.png", f) and "/" not in f
               for f in files.values())


@pytest.mark.filterwarnings("ignore:Glyph .* missing from font")
def test_score_names_that_sanitise_alike_get_one_png_each(tmp_path):
    from abstain.app.report import png_names

    scores = ["риск", "距离", "a b", "a_b"]
    data = prepare({"loss": LOSS, **{s: U + i for i, s in enumerate(scores)}})
    page = html_report(data, evaluate(data), png_dir=tmp_path)
    files = png_names(report_figures(data))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(files.values())
    embedded = {alt: base64.b64decode(src[len("data:image/png;base64,"):]) for alt, src in
                re.findall(r'<img alt="([^"]*)" src="([^"]*)">', page)}
    for s in scores:  # each file holds its own score's histograms
        assert (tmp_path / files[f"histograms_{s}"]).read_bytes() == embedded[f"histograms_{s}"]


def test_names_with_dollars_are_drawn_as_written(tmp_path):
    # matplotlib parsed "$...$" in legends and titles as a formula: "$\\frac{$" stopped the
    # report with a parse error
    scores = ["$\\frac{$", "cost $5 and $6"]
    data = prepare({"loss": LOSS, **{s: U + i for i, s in enumerate(scores)}})
    page = html_report(data, evaluate(data), png_dir=tmp_path)
    assert "cost $5 and $6" in page and len(list(tmp_path.iterdir())) >= 2


def test_reports_drawn_in_threads_leave_matplotlib_settings_alone(tmp_path):
    # rc_context is matplotlib's one set of settings: reports drawn at once in threads
    # restored each other's, and text.parse_math stayed False for the user's own figures
    from concurrent.futures import ThreadPoolExecutor

    import matplotlib

    data = prepare({"loss": LOSS, "u": U})
    with ThreadPoolExecutor(4) as ex:
        pages = list(ex.map(lambda _: html_report(data, evaluate(data)), range(8)))
    assert matplotlib.rcParams["text.parse_math"] is True
    assert len({re.sub(r"written [0-9: -]+ UTC", "", p) for p in pages}) == 1


def test_a_report_with_no_tpr_reachable_at_the_fpr_bound_says_so(tmp_path):
    from abstain.app.report import NO_TPR

    # every threshold that keeps an ID row keeps an OOD row (the OOD rows score lowest)
    data = prepare({"loss": [0, 1, np.nan, np.nan], "s": [0.9, 0.8, 0.1, 0.2],
                    "is_ood": [0, 0, 1, 1]})
    figs = report_figures(data, fpr=0.05)
    (ax,) = figs["risk_at_fpr"].axes
    assert [t.get_text() for t in ax.texts] == [NO_TPR.format(fpr=0.05)]
    assert "s (FPR <= 0.05: no TPR >= 0.01 reachable)" in [ln.get_label() for ln in ax.lines]
    write_report(tmp_path / "r.html", data, evaluate(data, fpr=0.05), fpr=0.05)
    assert (tmp_path / "r.html").read_text().count("<img") == len(figs)
    # where a TPR is reachable, the panel has no such text
    figs = report_figures(prepare({"loss": LOSS, "u": U, "is_ood": OOD}), fpr=0.5)
    assert len(figs["risk_at_fpr"].axes[0].texts) == 0


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    data = prepare({"loss": LOSS, "u": U, "g": G, "is_ood": OOD})
    return data, evaluate(data)


def _folder_state(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_a_failed_report_leaves_the_png_folder_as_it_was(small, tmp_path):
    data, ev = small
    png = tmp_path / "png"
    png.mkdir()
    (png / "notes.txt").write_text("mine")
    (png / "roc.png").write_bytes(b"an older roc")
    before = _folder_state(png)
    # the page's folder does not exist: nothing is written, the old roc.png is kept
    with pytest.raises(OSError, match=r"cannot write '.*no-such-folder/r\.html': No such "):
        write_report(tmp_path / "no-such-folder" / "r.html", data, ev, png_dir=png)
    assert _folder_state(png) == before
    # the page is one of the PNGs
    with pytest.raises(ValueError, match=r"path must not be a PNG of png_dir; got '.*roc\.png'"
                                         r", the PNG 'roc\.png'"):
        write_report(png / "roc.png", data, ev, png_dir=png)
    link = tmp_path / "r.html"
    link.symlink_to(png / "pr.png")
    with pytest.raises(ValueError, match="path must not be a PNG of png_dir"):
        write_report(link, data, ev, png_dir=png)
    assert _folder_state(png) == before and sorted(os.listdir(tmp_path)) == ["png", "r.html"]
    # a new PNG folder is removed again
    with pytest.raises(OSError, match="No such file or directory"):
        write_report(tmp_path / "no-such-folder" / "r.html", data, ev, png_dir=tmp_path / "new")
    assert sorted(os.listdir(tmp_path)) == ["png", "r.html"]
    # and a successful report replaces roc.png, keeps notes.txt
    link.unlink()
    write_report(tmp_path / "r.html", data, ev, png_dir=png)
    after = _folder_state(png)
    assert after["notes.txt"] == b"mine" and after["roc.png"].startswith(b"\x89PNG")
    assert sorted(after) == sorted(["notes.txt", *png_names_of(data)])


def png_names_of(data):
    from abstain.app.report import png_names

    return png_names(report_figures(data)).values()


def test_a_failure_while_the_pngs_move_in_puts_them_back(small, tmp_path, monkeypatch):
    data, ev = small
    png = tmp_path / "png"
    png.mkdir()
    (png / "roc.png").write_bytes(b"an older roc")
    real = os.replace
    calls = []

    def replace(src, dst):  # fails as the new roc.png moves in (after two others)
        calls.append(dst)
        if len(calls) == 4:
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OSError, match=r"cannot write '.*': No space left on device; free "):
        write_report(tmp_path / "r.html", data, ev, png_dir=png)
    monkeypatch.undo()
    assert _folder_state(png) == {"roc.png": b"an older roc"}
    assert sorted(os.listdir(tmp_path)) == ["png"]


def test_the_command_line_report_leaves_the_png_folder_as_it_was(tmp_path, capsys):
    from abstain.app.cli import main

    write_table(tmp_path / "t.csv", {"loss": LOSS, "u": U, "is_ood": OOD.astype(float)})
    png = tmp_path / "png"
    png.mkdir()
    (png / "roc.png").write_bytes(b"an older roc")
    (tmp_path / "folder.html").mkdir()  # the page's path is a folder, or in a missing one
    for html in (tmp_path / "missing" / "r.html", tmp_path / "folder.html"):
        code = main(["report", str(tmp_path / "t.csv"), "-o", str(html), "--png", str(png),
                     "--quiet"])
        err = capsys.readouterr().err
        assert code == 1 and err.count("\n") == 1 and err.startswith("abstain report: error: ")
        assert _folder_state(png) == {"roc.png": b"an older roc"}
    assert sorted(os.listdir(tmp_path)) == ["folder.html", "png", "t.csv"]
    assert os.listdir(tmp_path / "folder.html") == []


def minus_aurc(losses, uncertainty=None):
    return -m.aurc(losses, uncertainty)


def test_a_registered_headline_metric_gets_its_best_line_and_glossary():
    spec = m.register_metric(m.MetricSpec(minus_aurc, "selective", "minus AuRC",
                                          "minus AuRC: AuRC with its sign flipped",
                                          higher_is_better=True, headline=True))
    try:
        data = prepare({"loss": LOSS, "u": U, "g": G})
        ev = evaluate(data)
        page = html_report(data, ev)
    finally:
        m.METRICS.pop(spec.name)
    values = ev.metrics["u"]["minus_aurc"], ev.metrics["g"]["minus_aurc"]
    best = "u" if values[0] > values[1] else "g"  # higher is better: the least AuRC
    assert f"<li>best minus AuRC: <strong>{best}</strong> with {max(values):.4f}</li>" in page
    assert f"<li>best AuRC: <strong>{best}</strong> with {-max(values):.4f}</li>" in page
    assert "<li>minus AuRC: AuRC with its sign flipped</li>" in page


def _pair_rows(seed):
    """300 rows of a score u, an OOD score g, 0/1 losses and OOD marks (40 % OOD)."""
    rng = np.random.default_rng(seed)
    n = 300
    ood = rng.random(n) < 0.4
    table = {"loss": np.where(ood, 0.0, (rng.random(n) < 0.2) * 1.0),
             "u": rng.normal(size=n) + ood, "g": rng.normal(size=n) + ood,
             "is_ood": ood.astype(float)}
    return table, ood


def test_a_pairs_envelope_is_never_named_the_best_score():
    """A pair's envelope AUROC (an oracle over directions) is on a line of its own, and the
    best AUROC is that of a single score, even where the envelope is higher."""
    table, ood = _pair_rows(2)
    data = prepare(table, scores=["u"], ood_score="g")
    ev = evaluate(data)
    page = html_report(data, ev)
    singles = {s: ev.metrics[s]["auroc"] for s in ("u", "g")}
    assert ev.metrics["u+g"]["auroc"] > max(singles.values())
    best = max(singles, key=singles.get)
    assert f"<li>best AUROC: <strong>{best}</strong> with {singles[best]:.4f}</li>" in page
    envelope = ("<li>best AUROC of a pair&#x27;s envelope (an oracle: the best direction at each "
                "point, chosen on these rows, not one rule): <strong>u+g</strong> with "
                f"{ev.metrics['u+g']['auroc']:.4f}</li>")
    assert envelope in page
    # and in the metrics table, the pair's envelope cells carry the note that says so (the
    # notes were given to empty cells only)
    cell = ('<td class="note" title="a pair&#x27;s envelope: at each FPR (or TPR) the best '
            'direction for it')
    assert page.count(cell) == 3  # AUROC, FPR at TPR, OSCR
    assert f"{ev.metrics['u+g']['auroc']:.4f} <sup>[<a href=\"#note-" in page


def test_a_pair_rules_own_auroc_is_given_beside_the_envelope():
    """With a rule fitted on a pair, the summary gives the AUROC of the rule's own score
    (one direction, one detector) beside the pair's envelope AUROC (an oracle)."""
    from abstain.models import BoundedTPRFPR

    table, ood = _pair_rows(3)
    data = prepare(table, scores=["u"], ood_score="g")
    ev = evaluate(data)
    S = np.column_stack([table["u"], table["g"]])
    rule = BoundedTPRFPR(tpr=0.8, fpr=0.5).fit(S, ood, table["loss"])
    page = html_report(data, ev, rule=rule, rule_columns=["u", "g"])
    own = m.auroc(ood, rule.score(S))
    weights = ", ".join(f"{w:.4g}" for w in rule.weights_)
    assert (f"; its own score (weights {weights}) as one detector: AUROC {own:.4f} (the "
            f"pair's envelope AUROC, the best direction at each point, is "
            f"{ev.metrics['u+g']['auroc']:.4f})</li>") in page


def test_the_summary_states_what_the_rule_was_asked_for_and_certified():
    from abstain import BoundedImprovement

    rng = np.random.default_rng(4)
    n = 2000
    u = rng.random(n)
    loss = (rng.random(n) < u / 2).astype(float)
    data = prepare({"loss": loss, "u": u})
    rule = BoundedImprovement(target_risk=0.2, delta=0.1).fit(u, loss)
    page = html_report(data, evaluate(data), rule=rule, rule_columns=["u"])
    line = re.findall(r"<li>rule BoundedImprovement.*?</li>", page)[0]
    assert "(asked for: target_risk 0.2, delta 0.1" in line
    assert (f"certified risk bound {rule.risk_bound_:.4f} with probability &gt;= 0.9 "
            f"(procedure {rule.bound_})") in line
    assert f"as fitted: threshold {rule.threshold_:.6g}" in line
    assert "; on these rows (expected over its random acceptance of tied scores, which " \
        "apply draws): coverage of ID rows" in line


def test_a_confident_models_curves_get_a_zoom_and_histograms_are_stacked():
    rng = np.random.default_rng(5)
    n = 1000
    u = rng.random(n)
    ood = rng.random(n) < 0.2
    loss = np.where(ood, 0.0, (u > 0.95) * (rng.random(n) < 0.8) * 1.0)  # errors at the top
    data = prepare({"loss": loss, "u": u, "is_ood": ood * 1.0})
    figs = report_figures(data)
    for key in ("risk_coverage", "generalized_risk_coverage"):
        (ax,) = figs[key].axes[:1]
        (inset,) = ax.child_axes
        assert inset.get_xlim() == (0.9, 1.0) and "zoomed" in inset.get_title()
    hist = figs["histograms_u"].axes
    assert len(hist) == 2 and hist[0].get_position().y0 > hist[1].get_position().y1
    plain = prepare({"loss": (rng.random(n) < 0.3) * 1.0, "u": u})
    assert report_figures(plain)["risk_coverage"].axes[0].child_axes == []


def test_figures_drawn_on_workers_are_the_same_bytes(tmp_path):
    """``n_jobs`` draws the figures on forked workers: the same page and PNGs, byte for
    byte, and the progress counts each figure here."""
    data = prepare({"loss": LOSS, "u": U, "g": G, "is_ood": OOD})
    ev = evaluate(data)
    when = {"date": "2026-01-01T00:00:00Z"}
    calls = []
    pages = [html_report(data, ev, provenance=when, png_dir=tmp_path / str(jobs), n_jobs=jobs,
                         progress=lambda d, t: calls.append((d, t)))
             for jobs in (None, 2)]
    assert pages[0] == pages[1]
    assert calls == 2 * [(k, 7) for k in range(1, 8)]
    files = sorted(p.name for p in (tmp_path / "None").iterdir())
    assert files == sorted(p.name for p in (tmp_path / "2").iterdir()) and len(files) == 7
    for name in files:
        assert (tmp_path / "None" / name).read_bytes() == (tmp_path / "2" / name).read_bytes()
    with pytest.raises(ValueError, match="n_jobs must be None, -1"):
        html_report(data, ev, n_jobs=0)


def test_a_bootstrapped_pair_is_drawn_as_the_table_computed_it():
    """With a bootstrap, "auto" puts a pair on the grid of its standardised columns at any
    size (the statistic every resample repeats): the figures draw that curve, so the AUROC
    in the legend is the table's, and a rule fitted on the raw columns is marked at its
    operating point on the rows."""
    from abstain.models import BoundedTPRFPR
    from abstain.plot import OODRocDisplay

    table, ood = _pair_rows(5)
    table["g"] = table["g"] * 1000.0  # units that move the unscaled grid
    data = prepare(table, scores=["u"], ood_score="g")
    S = np.column_stack([table["u"], table["g"]])
    rule = BoundedTPRFPR(tpr=0.8, fpr=0.5).fit(S, ood, table["loss"])
    for n_bootstrap in (0, 20):
        ev = evaluate(data, n_bootstrap=n_bootstrap, random_state=0)
        figs = report_figures(data, rule=rule, rule_columns=["u", "g"],
                              resampled=bool(ev.intervals))
        label = next(ln.get_label() for ln in figs["roc"].axes[0].lines
                     if ln.get_label().startswith("u+g ("))
        assert label == f"u+g (AUROC = {ev.metrics['u+g']['auroc']:.4f})"
        expected = OODRocDisplay.from_predictions(ood, S, name="u+g", rule=rule)
        point = next(ln for ln in figs["roc"].axes[0].lines
                     if ln.get_label().startswith("rule: "))
        np.testing.assert_array_equal(point.get_xydata(), [expected.point])
    assert ev.metrics["u+g"]["auroc"] != m.auroc(ood, S, search="exact")  # they differ here


def test_small_sample_warnings_put_the_plural_on_the_row():
    # "only 2 ID row with a loss above 0s": the s went on the end of the phrase
    data = prepare({"loss": [2.5, 0.0, 7.0] + [0.0] * 40, "u": np.linspace(0, 1, 43)})
    from abstain.app.report import sample_warnings

    assert sample_warnings(data, evaluate(data))[0].startswith(
        "only 2 ID rows with a loss above 0: the curves and metrics that use them are noisy;")


@pytest.mark.parametrize(("level", "text"), [(0.999, "99.9%"), (0.975, "97.5%"), (0.95, "95%")])
def test_the_page_states_the_bootstrap_level_in_the_digits_it_needs(level, text):
    # {level:.0%} wrote 0.999 as 100% and 0.975 as 98%
    rng = np.random.default_rng(0)
    data = prepare({"loss": (rng.random(60) < 0.3) * 1.0, "u": rng.random(60)})
    page = html_report(data, evaluate(data, n_bootstrap=20, level=level, random_state=0))
    assert f"Under each value: its {text} bootstrap percentile interval" in page


def test_values_a_few_ulps_apart_tie_and_rules_without_a_pair_or_a_direction_say_why():
    # a pair whose best rule is one column's (the other column constant) was named the best
    # risk at TPR/FPR alone, one ulp ahead; a pair rule of a report without pairs read "no
    # such score column"; an infeasible pair rule got the AUROC of its placeholder direction
    import warnings

    from abstain.models import BoundedTPRFPR

    rng = np.random.default_rng(2)
    n = 60
    ood = rng.random(n) < 0.3
    table = {"loss": np.where(ood, np.nan, rng.random(n) * 0.9), "r": np.zeros(n),
             "d": rng.normal(size=n) + ood, "is_ood": ood.astype(float)}
    data = prepare(table, scores=["r", "d"], ood_score="d")
    ev = evaluate(data, tpr=0.8, fpr=0.4)
    page = html_report(data, ev)
    assert re.search(r"<li>best risk at TPR&gt;=80%, FPR&lt;=40%: <strong>d</strong>, "
                     r"<strong>r\+d</strong> with [0-9.]+ \(tied\)", page), page
    S = np.column_stack([table["r"], table["d"]])
    plain = prepare({k: v for k, v in table.items()}, scores=["r", "d"])
    rule = BoundedTPRFPR(tpr=0.8, fpr=0.5).fit(S, ood, np.nan_to_num(table["loss"]))
    page = html_report(plain, evaluate(plain), rule=rule, rule_columns=["r", "d"])
    assert ("BoundedTPRFPR on r, d: the report pairs no columns (a pair needs --ood-score and "
            "rows marked OOD); it is not marked.") in page
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lost = BoundedTPRFPR(tpr=0.99, fpr=0.01).fit(S, ood, np.nan_to_num(table["loss"]))
    assert not lost.feasible_
    page = html_report(data, ev, rule=lost, rule_columns=["r", "d"])
    assert "it rejects everything" in page and "as one detector" not in page


def test_a_pair_may_not_hold_the_ood_or_loss_column():
    # --pair-with is_ood scored the OOD marks themselves (AUROC 1) and paired them
    table, _ = _pair_rows(4)
    for column, role in (("is_ood", "OOD"), ("loss", "loss")):
        with pytest.raises(ValueError, match=rf"^the score column '{column}' is also the {role} "
                           r"column; a score must be another column\.$"):
            prepare(table, scores=["u"], ood_score="g", pair_with=[column])
