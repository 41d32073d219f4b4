"""abstain.spark in Spark's local mode: the tables built by Spark's group-by equal the
tables of the same rows in memory, bit for bit on the tests' data; bad rows are refused
naming the column. Skipped where pyspark or Java is missing (``make test-spark`` installs
Debian's headless JRE and pyspark, then runs this file)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from abstain import PairTable, ScoreTable
from abstain.metrics import aurc, auroc

WHY = ("pyspark and Java are not installed: `make test-spark` installs Debian's headless JRE "
       "and pyspark and runs these tests")
if shutil.which("java") is None:
    pytest.skip(WHY, allow_module_level=True)
pytest.importorskip("pyspark", reason=WHY)

from abstain.spark import pair_table, score_table  # noqa: E402


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("abstain-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "4").getOrCreate())
    yield session
    session.stop()


def _rows(seed, n=2000):
    rng = np.random.default_rng(seed)
    u = rng.integers(0, 50, n) / 8.0
    u[rng.random(n) < 0.05] = -0.0
    losses = (rng.random(n) < 0.3) * 1.0 if seed % 2 else rng.integers(0, 4, n) * 1.0
    ood = rng.random(n) < 0.3
    g = rng.integers(0, 10, n) / 2.0
    return u, losses, ood, g


def _frame(spark, seed, nan_loss_on_ood=True):
    import pandas as pd

    u, losses, ood, g = _rows(seed)
    loss = np.where(ood & nan_loss_on_ood, np.nan, losses)
    pdf = pd.DataFrame({"u": u, "loss": loss, "is_ood": ood.astype(int), "g": g,
                        "label": (losses > 0).astype(int), "prediction": 0})
    return spark.createDataFrame(pdf).repartition(4), (u, losses, ood, g)


@pytest.mark.parametrize("seed", [0, 1])
def test_score_tables_equal_the_tables_in_memory(spark, seed):
    df, (u, losses, ood, _) = _frame(spark, seed)
    got = score_table(df, "u", loss="loss", is_ood="is_ood")
    assert got == ScoreTable.from_arrays(u, np.where(ood, np.nan, losses), is_ood=ood)
    assert auroc(got) == auroc(ood, u)
    ids = df.where("is_ood = 0")
    plain = score_table(ids, "u", loss="loss")
    assert plain == ScoreTable.from_arrays(u[~ood], losses[~ood])
    assert aurc(plain) == aurc(losses[~ood], u[~ood])
    if seed % 2:  # 0/1 losses: the label != prediction form gives the same table
        assert score_table(ids, "u", label="label", prediction="prediction") == plain


def test_pair_tables_equal_the_tables_in_memory(spark):
    df, (u, losses, ood, g) = _frame(spark, 1)
    got = pair_table(df, ("u", "g"), loss="loss", is_ood="is_ood")
    assert got == PairTable.from_arrays(np.column_stack([u, g]),
                                        np.where(ood, np.nan, losses), is_ood=ood)


def test_bad_rows_are_refused_naming_the_column(spark):
    import pandas as pd

    bad = spark.createDataFrame(pd.DataFrame({"u": [0.1, float("nan"), 0.3],
                                              "loss": [0.0, 1.0, -1.0]}))
    with pytest.raises(ValueError, match="score column 'u': NULL, NaN or infinite values in 1"):
        score_table(bad, "u", loss="loss")
    with pytest.raises(ValueError, match="the loss: negative losses in 1 row"):
        score_table(bad.where("loss < 0"), "u", loss="loss")
    with pytest.raises(ValueError, match="the DataFrame has no column 'v'"):
        score_table(bad, "v", loss="loss")
    with pytest.raises(ValueError, match="give the loss column"):
        score_table(bad, "u")
    df, _ = _frame(spark, 0, nan_loss_on_ood=True)
    with pytest.raises(ValueError, match="NULL or NaN losses of ID rows"):
        score_table(df, "u", loss="loss")  # the OOD rows' NaN losses count without is_ood


def test_the_command_line_on_parquet_parts_with_engine_spark(spark, tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    from abstain.app.cli import main

    u, losses, ood, g = _rows(3, n=1200)
    frame = pd.DataFrame({"loss": np.where(ood, np.nan, losses), "is_ood": ood.astype(int),
                          "u": u, "g": g})
    frame.to_parquet(tmp_path / "all.parquet", index=False)
    (tmp_path / "parts").mkdir()
    for k, part in enumerate(np.array_split(np.arange(len(frame)), 3)):
        frame.iloc[part].to_parquet(tmp_path / "parts" / f"p{k}.parquet", index=False)
    out = {}
    for key, argv in (("whole", [str(tmp_path / "all.parquet")]),
                      ("spark", [str(tmp_path / "parts"), "--engine", "spark"]),
                      ("numpy", [str(tmp_path / "parts")])):
        assert main(["evaluate", *argv, "--ood-score", "g", "--json",
                     str(tmp_path / f"{key}.json")]) == 0
        out[key] = json.loads((tmp_path / f"{key}.json").read_text())
    capsys.readouterr()
    assert out["spark"]["metrics"] == out["numpy"]["metrics"]
    for name in ("u", "g"):  # the metrics of one column equal those of the whole file
        assert out["spark"]["metrics"][name] == out["whole"]["metrics"][name]
    assert main(["fit", str(tmp_path / "parts"), "--engine", "spark", "--score", "u",
                 "--target-coverage", "0.8", "-o", str(tmp_path / "a.json")]) == 0
    assert main(["fit", str(tmp_path / "all.parquet"), "--score", "u", "--target-coverage",
                 "0.8", "-o", str(tmp_path / "b.json")]) == 0
    assert (tmp_path / "a.json").read_text() == (tmp_path / "b.json").read_text()
    pd.DataFrame({"loss": [0.0], "u": [0.1]}).to_csv(tmp_path / "parts" / "x.csv", index=False)
    assert main(["evaluate", str(tmp_path / "parts" / "*.csv"), "--engine", "spark"]) != 0
    assert "--engine spark reads Parquet parts" in capsys.readouterr().err
