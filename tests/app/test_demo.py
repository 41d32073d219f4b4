"""The end-to-end demo runs and writes its plot."""

import os

import pytest

from abstain.app.demo import run


def test_demo_runs(tmp_path, capsys):
    rows = run(tmp_path)
    assert (tmp_path / "risk_coverage.png").stat().st_size > 10_000
    assert {r["model"].split("(")[0] for r in rows} == {
        "CostBased",
        "BoundedAbstention",
        "BoundedImprovement",
    }
    assert all(0.0 < r["test_coverage"] <= 1.0 for r in rows)
    assert "reject model" in capsys.readouterr().out


def test_the_demo_png_is_replaced_whole_or_not_at_all(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from abstain.app.demo import _plot
    from abstain.metrics import risk_coverage_curve

    png = tmp_path / "risk_coverage.png"
    png.write_bytes(b"old")

    def broken(self, fname, **kw):
        with open(fname, "wb") as fh:
            fh.write(b"half a PNG")
        raise OSError("disk full")

    curve = risk_coverage_curve([0.0, 1.0, 0.0], [0.1, 0.9, 0.2])
    with monkeypatch.context() as m:
        m.setattr(Figure, "savefig", broken)
        with pytest.raises(OSError, match="disk full"):
            _plot(curve, [], png)
    assert png.read_bytes() == b"old" and sorted(os.listdir(tmp_path)) == ["risk_coverage.png"]
    _plot(curve, [], png)
    assert png.read_bytes().startswith(b"\x89PNG")
