"""The command line loses nothing and prints no silent wrong number: it never writes over an
input, never replaces a column unasked, and refuses a bad file in one line that names it."""

from __future__ import annotations

import os

import numpy as np
import pytest

from abstain.cli import main
from abstain.io import write_table


def _columns(n: int = 200, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    is_ood = rng.random(n) < 0.2
    risk = rng.beta(1, 5, n)
    loss = (rng.random(n) < risk).astype(float)
    loss[is_ood] = np.nan
    return {"loss": loss, "risk": risk.round(3), "distance": rng.normal(is_ood * 2.0, 1.0),
            "is_ood": is_ood.astype(float)}


@pytest.fixture
def csv_file(tmp_path):
    path = tmp_path / "pred.csv"
    write_table(path, _columns())
    return path


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line(code, err):
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("abstain "), err
    return lines[0]


# -- no command writes over its input ------------------------------------------------------


def _link(kind, target, tmp_path):
    """The path under which the output names ``target``: itself, a symlink or a hard link."""
    if kind == "same":
        return target
    link = tmp_path / f"{kind}{target.suffix}"
    if kind == "symlink":
        link.symlink_to(target)
    else:
        os.link(target, link)
    return link


@pytest.fixture
def rule_file(csv_file, tmp_path, capsys):
    path = tmp_path / "rule.json"
    assert run(capsys, "fit", csv_file, "--score", "risk", "--target-coverage", "0.8",
               "-o", path)[0] == 0
    return path


@pytest.mark.parametrize("kind", ["same", "symlink", "hardlink"])
@pytest.mark.parametrize("command", ["evaluate", "fit", "report", "report-png", "apply",
                                     "apply-rule"])
def test_no_command_writes_over_its_input(command, kind, csv_file, rule_file, tmp_path, capsys):
    if command.startswith("report"):
        pytest.importorskip("matplotlib")
    victim = rule_file if command == "apply-rule" else csv_file
    out = _link(kind, victim, tmp_path)
    before = victim.read_bytes()
    argv = {
        "evaluate": ["evaluate", csv_file, "--json", out],
        "fit": ["fit", csv_file, "--score", "risk", "--target-coverage", "0.8", "-o", out],
        "report": ["report", csv_file, "--quiet", "-o", out],
        "report-png": ["report", csv_file, "--quiet", "-o", tmp_path / "r.html", "--png", out],
        "apply": ["apply", rule_file, csv_file, "-o", out],
        "apply-rule": ["apply", rule_file, csv_file, "-o", out],
    }[command]
    if command == "report" and kind == "same":
        out = victim = csv_file
    line = one_line(*run(capsys, *argv)[::2])
    assert f"output {str(out)!r} is the input file" in line
    assert "write the output to another path" in line
    assert victim.read_bytes() == before
    assert not (tmp_path / "r.html").exists()


def test_report_png_never_overwrites_an_input_inside_the_folder(csv_file, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    figs = tmp_path / "figs"
    figs.mkdir()
    other = figs / "roc.png"
    other.write_bytes(b"not a figure")
    link = figs / "risk_coverage.png"
    os.link(csv_file, link)
    before = csv_file.read_bytes()
    line = one_line(*run(capsys, "report", csv_file, "--quiet", "-o", tmp_path / "r.html",
                         "--png", figs)[::2])
    assert "risk_coverage.png" in line and "is the input file" in line
    assert csv_file.read_bytes() == before and os.path.samefile(link, csv_file)
    assert other.read_bytes() == b"not a figure"
    assert not (tmp_path / "r.html").exists()


# -- apply never replaces a column unasked ---------------------------------------------------


def test_apply_refuses_to_replace_a_column_unless_asked(csv_file, rule_file, tmp_path, capsys):
    from abstain.io import read_table

    out = tmp_path / "out.csv"
    line = one_line(*run(capsys, "apply", rule_file, csv_file, "-o", out, "--column",
                         "risk")[::2])
    assert f"{csv_file} already has a column 'risk'" in line and "--overwrite-column" in line
    assert not out.exists()
    code, _, _ = run(capsys, "apply", rule_file, csv_file, "-o", out, "--column", "risk",
                     "--overwrite-column")
    assert code == 0
    table = read_table(out)
    assert list(table) == ["loss", "risk", "distance", "is_ood"]
    assert set(np.unique(table["risk"])) <= {0.0, 1.0}
