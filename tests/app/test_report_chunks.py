"""`abstain report` on a source read in chunks: the page of the whole file, drawn from the
score tables (metrics table, curves, histograms, rule point), and one line for what needs
the rows."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("pyarrow")

from abstain.app.chunks import summarise  # noqa: E402
from abstain.app.cli import main
from abstain.app.evaluate import evaluate  # noqa: E402
from abstain.app.io import write_table
from abstain.app.report import CHUNKED_NOTE, html_report, report_figures  # noqa: E402
from abstain.app.tables import prepare  # noqa: E402


def _columns(n: int = 1500, seed: int = 0, continuous: bool = False,
             ood: bool = True) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    u = np.round(rng.random(n), 2)
    label = rng.integers(0, 3, n)
    pred = np.where(rng.random(n) < u, (label + 1) % 3, label)
    cols = {"msp": u, "energy": np.round(rng.random(n), 3)}
    if ood:
        cols["is_ood"] = (rng.random(n) < 0.4 * u).astype(float)
    if continuous:
        cols["loss"] = np.where(rng.random(n) < 0.5, 0.0, rng.random(n) * u)
    else:
        cols["label"], cols["prediction"] = label.astype(float), pred.astype(float)
    return cols


def _section(page: str, start: str, end: str) -> str:
    return page[page.index(start):page.index(end)]


def _drawn(fig) -> list:
    """What a figure shows: each axes' line data and histogram heights."""
    out = []
    for ax in fig.axes:
        out += [(ln.get_label(), np.asarray(ln.get_xdata(), float).tolist(),
                 np.asarray(ln.get_ydata(), float).tolist()) for ln in ax.lines]
        out += [round(float(h), 9) for p in ax.patches for h in p.get_data().values]
    return out


def _same(a: list, b: list, rel: float) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        if isinstance(x, tuple):
            assert x[0] == y[0]
            np.testing.assert_allclose(x[1], y[1], rtol=rel)
            np.testing.assert_allclose(x[2], y[2], rtol=rel)
        else:
            assert x == pytest.approx(y, rel=1e-9)


@pytest.mark.parametrize("continuous", [False, True])
def test_figures_from_the_tables_are_those_of_the_rows(write_parts, tmp_path, continuous):
    cols = _columns(continuous=continuous)
    options = {"scores": None, "loss": None, "label": None, "prediction": None,
               "is_ood": None, "ood_score": None, "dropna": False}
    summary = summarise(str(write_parts(cols, tmp_path / "p")), rows=200, options=options,
                        wrong=True)
    rows = report_figures(prepare(cols), fpr=0.1)
    tables = report_figures(summary, fpr=0.1)
    assert list(tables) == list(rows)
    for name in rows:
        _same(_drawn(tables[name]), _drawn(rows[name]), 0 if not continuous else 1e-12)


def test_a_directory_of_parquet_parts_gives_the_report_of_the_whole_file(write_parts, tmp_path):
    cols = _columns()
    write_table(tmp_path / "all.parquet", cols)
    parts = write_parts(cols, tmp_path / "parts")
    assert main(["fit", str(tmp_path / "all.parquet"), "--score", "msp", "--tpr", "0.6",
                 "--fpr", "0.4", "-o", str(tmp_path / "rule.json"), "--quiet"]) == 0
    pages = {}
    for key, source, extra in (("whole", tmp_path / "all.parquet", []),
                               ("parts", parts, ["--chunk-rows", "256"]),
                               ("glob", f"{parts}/*.parquet", [])):
        out = tmp_path / f"{key}.html"
        assert main(["report", str(source), "-o", str(out), "--png", str(tmp_path / f"png-{key}"),
                     "--rule", str(tmp_path / "rule.json"), "--quiet", *extra]) == 0
        pages[key] = out.read_text()
    whole = pages["whole"]
    for key in ("parts", "glob"):
        page = pages[key]
        assert _section(page, "<h2>Metrics", "<h2>Curves") == \
            _section(whole, "<h2>Metrics", "<h2>Curves")
        assert re.findall(r"<li>rule .*?</li>", page) == re.findall(r"<li>rule .*?</li>", whole)
        assert CHUNKED_NOTE in page and CHUNKED_NOTE not in whole
        assert sorted(p.name for p in (tmp_path / f"png-{key}").iterdir()) == \
            sorted(p.name for p in (tmp_path / "png-whole").iterdir())
        assert page.count("<img") == whole.count("<img") == 7
    assert "3 parts, SHA-256 of their SHA-256 list" in pages["parts"]


def test_a_report_in_chunks_without_an_ood_column(write_parts, tmp_path):
    cols = _columns(ood=False, continuous=True)
    parts = write_parts(cols, tmp_path / "parts", k=2)
    assert main(["report", str(parts), "-o", str(tmp_path / "r.html"), "--quiet"]) == 0
    page = (tmp_path / "r.html").read_text()
    assert page.count("<img") == 4  # two curves, two histograms


def test_what_needs_the_rows_is_refused_in_one_line(write_parts, tmp_path, capsys):
    cols = _columns()
    parts = write_parts(cols, tmp_path / "parts")
    out = str(tmp_path / "r.html")
    assert main(["report", str(parts), "-o", out, "--bootstrap", "50", "--quiet"]) == 1
    assert "--bootstrap resamples the rows of one file" in capsys.readouterr().err
    assert main(["report", str(parts), "-o", str(parts / "part-0.parquet"), "--quiet"]) == 1
    assert not (tmp_path / "r.html").exists()


def test_histograms_of_continuous_losses_need_the_wrong_counts(write_parts, tmp_path):
    cols = _columns(continuous=True)
    options = {"scores": ["msp"], "loss": None, "label": None, "prediction": None,
               "is_ood": None, "ood_score": None, "dropna": False}
    summary = summarise(str(write_parts(cols, tmp_path / "p")), rows=500, options=options)
    with pytest.raises(ValueError, match=r"wrong=True"):
        report_figures(summary)
    ev = evaluate(summary)
    binary = summarise(str(write_parts(_columns(), tmp_path / "q")), rows=500, options=options)
    page = html_report(binary, evaluate(binary))  # 0/1 losses: the sums count
    assert page.count("<img") == 5 + 1 and ev.n_id == summary.n_id


def test_a_report_on_dask_equals_the_one_on_this_process(write_parts, tmp_path):
    pytest.importorskip("distributed")
    parts = write_parts(_columns(), tmp_path / "parts")
    pages = []
    for extra in ([], ["--engine", "dask"]):
        out = tmp_path / f"r{len(pages)}.html"
        assert main(["report", str(parts), "-o", str(out), "--quiet", *extra]) == 0
        pages.append(out.read_text())
    assert _section(pages[1], "<h2>Metrics", "<h2>Curves") == \
        _section(pages[0], "<h2>Metrics", "<h2>Curves")
    assert pages[1].count("<img") == pages[0].count("<img") == 7
