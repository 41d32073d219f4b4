"""Score tables of Spark DataFrames, built by Spark's own group-by (extra ``spark``).

A :class:`~abstain.ScoreTable` is a group-by of (score) -> totals, which Spark does
natively: :func:`score_table` asks Spark for the rows, loss sum, squared-loss sum and OOD
rows of each distinct score (and for the ID rows of each distinct loss, the oracle of
E-AuRC), collects only those totals to the driver, and builds the table with
:meth:`abstain.ScoreTable.from_totals`. Every ``ties="mean"`` metric and every reject-model
fit then runs on the table and returns what it returns on the rows. :func:`pair_table` does
the same for two score columns (a :class:`~abstain.PairTable`). The driver's memory grows
with the number of distinct scores (or pairs), not with the number of rows.

The totals are those of the rows bit for bit with 0/1 and whole-number losses (Spark adds
a group's doubles in an order of its own: other losses agree to float64 rounding of the
group sums). Bad rows are refused before any total is taken, naming the column: a NULL,
NaN or infinite score; a NULL or NaN loss of an ID row; a negative loss; an OOD mark other
than 0/1 (or true/false).

Example (with Spark and Java; ``docs/scale.md`` has more)::

    from pyspark.sql import SparkSession
    from abstain.spark import score_table
    from abstain.metrics import aurc

    spark = SparkSession.builder.master("local[2]").getOrCreate()
    df = spark.read.parquet("predictions/")
    print(aurc(score_table(df, "msp", loss="loss")))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._core.optional import require
from .tables import PairTable, ScoreTable

__all__ = ["score_table", "pair_table"]


def _functions() -> Any:
    require("pyspark", "spark", "abstain.spark")
    from pyspark.sql import functions as F

    return F


def _columns(df: Any, names: list[str]) -> None:
    missing = [n for n in names if n not in df.columns]
    if missing:
        raise ValueError(f"the DataFrame has no column {missing[0]!r}; its columns are "
                         f"{', '.join(map(repr, df.columns))}.")


def _row_exprs(df: Any, F: Any, *, loss: str | None, label: str | None,
               prediction: str | None, is_ood: str | None) -> tuple[Any, Any]:
    """The loss of each row (0.0 on OOD rows) and its OOD mark (0.0 / 1.0, or None), as
    Spark expressions, after checking the rows in one pass."""
    if loss is not None:
        _columns(df, [loss])
        raw = F.col(loss).cast("double")
    elif label is not None and prediction is not None:
        _columns(df, [label, prediction])
        raw = (F.col(label) != F.col(prediction)).cast("double")
    else:
        raise ValueError("give the loss column (loss=), or the label and prediction columns "
                         "(label=, prediction=); got neither.")
    if is_ood is None:
        return raw, None
    _columns(df, [is_ood])
    ood = F.col(is_ood).cast("double")
    return F.when(ood == 1.0, F.lit(0.0)).otherwise(raw), ood


def _check(df: Any, F: Any, scores: list[str], loss: Any, ood: Any, what: str) -> None:
    """Refuse bad rows, naming the column: one aggregation over the DataFrame."""
    checks = {}
    for s in scores:
        v = F.col(s).cast("double")
        bad = v.isNull() | F.isnan(v) | (F.abs(v) == float("inf"))
        checks[f"score column {s!r}: NULL, NaN or infinite values"] = bad
    is_id = F.lit(True) if ood is None else (ood == 0.0)
    checks[f"{what}: NULL or NaN losses of ID rows"] = is_id & (loss.isNull() | F.isnan(loss))
    checks[f"{what}: negative losses"] = is_id & (loss < 0.0)
    if ood is not None:
        checks["the OOD column: values other than 0 and 1"] = ood.isNull() | ~ood.isin(0.0, 1.0)
    row = df.agg(*(F.sum(c.cast("long")).alias(f"c{i}")
                   for i, c in enumerate(checks.values()))).collect()[0]
    for i, message in enumerate(checks):
        if row[f"c{i}"]:
            raise ValueError(f"{message} in {int(row[f'c{i}'])} row(s); drop or fix them "
                             "before building the table.")


def score_table(df: Any, score: str, *, loss: str | None = None, label: str | None = None,
                prediction: str | None = None, is_ood: str | None = None) -> ScoreTable:
    """The :class:`~abstain.ScoreTable` of the column ``score`` of a Spark DataFrame.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
    score : str
        The score column (higher is rejected first, or more OOD).
    loss : str, optional
        The loss column; or ``label`` and ``prediction`` (the 0/1 loss ``label !=
        prediction``).
    is_ood : str, optional
        The OOD column (1 for OOD rows); their losses are ignored and may be NULL.

    Returns
    -------
    ScoreTable
        Equal to ``ScoreTable.from_arrays`` of the collected rows (see the module
        docstring for the loss sums).
    """
    F = _functions()
    _columns(df, [score])
    lexpr, ood = _row_exprs(df, F, loss=loss, label=label, prediction=prediction,
                            is_ood=is_ood)
    _check(df, F, [score], lexpr, ood, "the loss")
    aggs = [F.count(F.lit(1)).alias("n"), F.sum(lexpr).alias("ls"),
            F.sum(lexpr * lexpr).alias("sq")]
    if ood is not None:
        aggs.append(F.sum(ood).alias("no"))
    rows = df.groupBy(F.col(score).cast("double").alias("v")).agg(*aggs).collect()
    id_rows = df if ood is None else df.where(ood == 0.0)
    dist = id_rows.groupBy(lexpr.alias("l")).agg(F.count(F.lit(1)).alias("n")).collect()

    def col(key: str, rows: list[Any]) -> Any:
        return np.array([r[key] for r in rows], dtype=np.float64)

    sq = col("sq", rows)
    return ScoreTable.from_totals(
        col("v", rows), col("n", rows), col("ls", rows),
        sq_loss_sums=sq if np.all(np.isfinite(sq)) else None,
        ood_counts=col("no", rows) if ood is not None else None,
        loss_values=col("l", dist), loss_counts=col("n", dist))


def pair_table(df: Any, scores: tuple[str, str], *, loss: str | None = None,
               label: str | None = None, prediction: str | None = None,
               is_ood: str) -> PairTable:
    """The :class:`~abstain.PairTable` of two score columns ``(s_r, s_g)`` of a Spark
    DataFrame: the distinct pairs with their rows, OOD rows and ID loss sums. Parameters
    as :func:`score_table`; ``is_ood`` is required (the double-score rules are OOD rules)."""
    F = _functions()
    if len(scores) != 2:
        raise ValueError(f"scores must name two columns (s_r, s_g); got {len(scores)}.")
    _columns(df, list(scores))
    lexpr, ood = _row_exprs(df, F, loss=loss, label=label, prediction=prediction,
                            is_ood=is_ood)
    _check(df, F, list(scores), lexpr, ood, "the loss")
    rows = df.groupBy(*(F.col(s).cast("double").alias(f"v{j}") for j, s in enumerate(scores))
                      ).agg(F.count(F.lit(1)).alias("n"), F.sum(ood).alias("no"),
                            F.sum(lexpr).alias("ls")).collect()
    top = df.where(ood == 0.0).agg(F.max(lexpr).alias("m")).collect()[0]["m"]
    return PairTable.from_totals(
        np.array([[r["v0"], r["v1"]] for r in rows], dtype=np.float64).reshape(-1, 2),
        [r["n"] for r in rows], [r["no"] for r in rows], [r["ls"] for r in rows],
        max_loss=0.0 if top is None else float(top))
