"""The end-to-end demo runs and writes its plot."""

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
