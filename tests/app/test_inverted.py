"""A score that ranks errors (or OOD rows) below correct rows far beyond chance is named as
inverted, with how to flip it, by evaluate, report and fit; a file whose first column is
pandas' unnamed index is read without scoring that column."""

from __future__ import annotations

import numpy as np
import pytest

from abstain import metrics as m
from abstain.app.cli import main
from abstain.app.evaluate import INVERTED_AUROC, evaluate, inverted_warnings
from abstain.app.io import write_table
from abstain.app.tables import prepare


def _rows(seed=0, n=600, flip=True):
    rng = np.random.default_rng(seed)
    ood = rng.random(n) < 0.3
    err = (~ood) & (rng.random(n) < 0.25)
    u = rng.normal(size=n) + 2.0 * err + 2.0 * ood
    conf = -u if flip else u
    return {"loss": np.where(ood, 0.0, err * 1.0), "is_ood": ood * 1.0, "conf": conf,
            "fine": u}


def test_an_inverted_score_is_named_with_the_auroc_and_how_to_flip_it():
    table = _rows()
    data = prepare(table)
    ev = evaluate(data)
    lines = inverted_warnings(data, ev)
    assert len(lines) == 2 and all("'conf'" in w for w in lines)
    id_rows = table["is_ood"] == 0
    err_auc = m.auroc(table["loss"][id_rows] > 0, table["conf"][id_rows])
    assert f"AUROC {err_auc:.2f}" in lines[0] and "misclassified" in lines[0]
    assert f"AUROC {ev.metrics['conf']['auroc']:.2f}" in lines[1] and "OOD rows" in lines[1]
    for w in lines:
        assert "inverted" in w and "flip" in w and "\n" not in w
    assert not any("'fine'" in w for w in lines)


def test_chance_and_small_samples_are_not_called_inverted():
    rng = np.random.default_rng(1)
    n = 400
    table = {"loss": (rng.random(n) < 0.2) * 1.0, "u": rng.normal(size=n)}
    data = prepare(table)
    assert inverted_warnings(data, evaluate(data)) == []
    # AUROC below the bar but on 3 errors: within what chance gives
    loss = np.zeros(12)
    loss[:3] = 1.0
    data = prepare({"loss": loss, "u": np.arange(12.0)})
    got = inverted_warnings(data, evaluate(data))
    assert m.auroc(loss > 0, np.arange(12.0)) < INVERTED_AUROC and got == []


def test_the_command_line_warns_and_the_report_shows_it(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    write_table(tmp_path / "p.csv", _rows())
    assert main(["evaluate", str(tmp_path / "p.csv")]) == 0
    err = capsys.readouterr().err
    assert "abstain evaluate: warning: score 'conf' looks inverted" in err
    assert main(["report", str(tmp_path / "p.csv"), "-o", str(tmp_path / "r.html"),
                 "--quiet"]) == 0
    assert "looks inverted" in (tmp_path / "r.html").read_text()
    assert main(["fit", str(tmp_path / "p.csv"), "--score", "conf", "--target-coverage",
                 "0.8", "-o", str(tmp_path / "rule.json")]) == 0
    assert "abstain fit: warning: score 'conf' looks inverted" in capsys.readouterr().err


def test_pandas_unnamed_index_column_is_skipped_with_a_note(tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"loss": [0.0, 1.0, 0.0, 1.0], "u": [0.1, 0.9, 0.2, 0.7]})
    frame.to_csv(tmp_path / "p.csv")  # pandas' default: an unnamed index column first
    assert (tmp_path / "p.csv").read_text().startswith(",loss,u")
    assert main(["evaluate", str(tmp_path / "p.csv")]) == 0
    out = capsys.readouterr()
    assert "skipped the first column" in out.err and "index" in out.err
    assert "''" not in out.out and " u" in out.out.splitlines()[1]
    frame.iloc[[1, 3]].to_csv(tmp_path / "q.csv")  # an index of a filtered frame: 1, 3
    assert main(["evaluate", str(tmp_path / "q.csv")]) == 0
    assert "skipped the first column" in capsys.readouterr().err


def test_an_unnamed_column_that_is_no_index_is_refused_in_one_line(tmp_path, capsys):
    (tmp_path / "p.csv").write_text("loss,,u\n0,0.5,0.1\n1,0.2,0.9\n0,0.9,0.3\n")
    assert main(["evaluate", str(tmp_path / "p.csv")]) != 0
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "column 2" in err and "has no name" in err
