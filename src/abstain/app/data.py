"""One view of the two data paths of the command line: the rows of a file in memory
(:class:`~abstain.app.tables.TableData`) and the score tables of a source read in chunks
(:class:`~abstain.app.chunks.Summary`).

:func:`as_data` wraps either in an object with the same operations, so that ``evaluate``
and ``report`` are written once: the names of the score columns and double-score pairs,
the arguments of the selective metrics of one score (ID losses and scores, or the ID
:class:`~abstain.ScoreTable`), the OOD sample of one score or pair (losses, OOD marks and
scores, or the marked :class:`~abstain.ScoreTable` / :class:`~abstain.PairTable`) and its
OOD metrics, the base error, the rows with a loss, the input of the histograms and the
operating point of a fitted rule. A fit of a reject rule takes the same samples.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import metrics as m
from ..tables import ScoreTable
from .chunks import Summary
from .tables import TableData

#: The input of one histogram: the score of each row (or distinct score), its group
#: (False, True) and its weight (None: one per row).
Histogram = tuple[NDArray[Any], NDArray[np.bool_], NDArray[Any] | None]


class Rows:
    """The rows of one file, in memory.

    Attributes
    ----------
    data : TableData
    names : list of str
        The score columns.
    has_ood : bool
        Whether the OOD column holds both classes.
    pairs : dict of str to (str, str)
        The double-score pairs (empty without OOD rows).
    chunked : bool
        False: every row is here (bootstrap intervals and envelope curves can be drawn).
    """

    chunked = False

    def __init__(self, data: TableData) -> None:
        self.data = data
        ood = data.is_ood
        self.ood = ood
        self.has_ood = ood is not None and 0 < int(ood.sum()) < ood.size
        self.id_rows = ~ood if ood is not None else np.ones(data.losses.size, dtype=bool)
        self.names = list(data.scores)
        self.pairs = data.pairs if self.has_ood else {}

    @property
    def n_id(self) -> int:
        return int(self.id_rows.sum())

    @property
    def n_ood(self) -> int:
        return int(self.ood.sum()) if self.ood is not None else 0

    @property
    def n_dropped(self) -> int:
        return self.data.n_dropped

    @property
    def bounded(self) -> bool:
        """Whether every loss is at most 1 (OSCR is defined)."""
        return bool(np.all(self.data.losses <= 1.0))

    def take(self, rows: NDArray[np.intp]) -> Rows:
        """These rows (a bootstrap resample), as the same view."""
        d = self.data
        return Rows(d._replace(losses=d.losses[rows],
                               scores={k: s[rows] for k, s in d.scores.items()},
                               is_ood=None if d.is_ood is None else d.is_ood[rows],
                               keep=np.ones(rows.size, dtype=bool)))

    def columns(self, name: str) -> NDArray[np.float64]:
        """One score column, or a pair's two stacked (n, 2)."""
        if name in self.pairs:
            return self.data.stacked(self.pairs[name])
        return self.data.scores[name]

    def selective_args(self, name: str) -> tuple[Any, ...]:
        """The arguments of a selective metric of one score: the ID rows' losses and
        scores."""
        return self.data.losses[self.id_rows], self.data.scores[name][self.id_rows]

    def ood_sample(self, name: str) -> tuple[Any, ...]:
        """The arguments of an OOD metric (or fit) of one score or pair: losses, OOD marks,
        scores."""
        assert self.ood is not None
        return self.data.losses, self.ood, self.columns(name)

    def ood_metrics(self, name: str, *, tpr: float, fpr: float,
                    search: str) -> tuple[dict[str, float], str | None]:
        """The OOD metrics of a score or pair, by :func:`abstain.metrics.evaluate_ood` column,
        and how a pair's directions were searched."""
        losses, ood, s = self.ood_sample(name)
        table = m.evaluate_ood(losses, ood, {"s": s}, tpr=tpr, fpr=fpr, search=search)
        return table.row("s"), table.search[0]

    # what a fit of a reject rule takes
    @property
    def has_ood_column(self) -> bool:
        """Whether the table has an OOD column (whatever its rows hold)."""
        return self.ood is not None

    @property
    def ood_pairs(self) -> list[tuple[str, str]]:
        """The ``(s_r, OOD score)`` pairs of the columns, with or without OOD rows."""
        return list(self.data.pairs.values())

    @property
    def ood_score(self) -> str | None:
        """The column named as the OOD score of every pair, or None."""
        return self.data.ood_score

    def fit_args(self, names: list[str], *, ood: bool) -> tuple[Any, ...]:
        """The arguments of a reject rule's fit on the score columns ``names``: with
        ``ood``, the scores (one column, or a pair stacked), the OOD marks and the losses
        of every row; else the scores and losses of the ID rows of the one column."""
        if ood:
            return self.data.stacked(names), self.ood, self.data.losses
        return self.data.scores[names[0]][self.id_rows], self.data.losses[self.id_rows]

    # what the report draws
    def selective(self, display: Any, name: str, **kw: Any) -> None:
        display.from_predictions(*self.selective_args(name), name=name, **kw)

    def ood_sources(self) -> list[tuple[str, Any, bool]]:
        """(name, what to draw, whether it is a double-score pair) of each OOD curve."""
        return ([(n, self.data.scores[n], False) for n in self.names]
                + [(name, self.columns(name), True) for name in self.pairs])

    def ood_curve(self, display: Any, source: Any, **kw: Any) -> None:
        display.from_predictions(self.ood, source, **kw)

    def at_fpr(self, display: Any, source: Any, fpr: float, **kw: Any) -> Any:
        assert self.ood is not None
        return display.from_predictions(self.data.losses, self.ood, source, fpr=fpr, **kw)

    def ood_accepted(self, rule: Any, source: Any) -> float:
        """The fraction of OOD rows a rule accepts."""
        return float(np.mean(rule.accept_proba(source)[self.ood]))

    def binary_losses(self) -> bool:
        """Whether every ID row's loss is 0 or 1 (a classifier's errors)."""
        ls = self.data.losses[self.id_rows]
        return bool(np.all((ls == 0.0) | (ls == 1.0)))

    def rank_counts(self, name: str) -> list[tuple[str, Any, Any]]:
        """Per distinct value of score ``name``, ascending: the counts of the rows that a
        good score ranks high and of the others, ``("errors", ID rows with a loss, ID rows
        without)`` and, with OOD rows, ``("ood", OOD rows, ID rows)``."""
        s = self.data.scores[name]
        err = self.data.losses[self.id_rows] > 0
        _, inv = np.unique(s[self.id_rows], return_inverse=True)
        out = [("errors", np.bincount(inv, weights=err), np.bincount(inv, weights=~err))]
        if self.ood is not None and self.has_ood:
            _, inv = np.unique(s, return_inverse=True)
            out.append(("ood", np.bincount(inv, weights=self.ood),
                        np.bincount(inv, weights=~self.ood)))
        return out

    def rule_auroc(self, rule: Any, target: str, columns: list[str]) -> float | None:
        """The AUROC of a fitted rule's own score (its ``score``: for a pair, the combined
        ``s_r + mu s_g`` of the direction it chose) as one detector; None without OOD
        rows."""
        if self.ood is None or not self.has_ood:
            return None
        data = self.data
        scores = data.stacked(columns) if len(columns) > 1 else data.scores[columns[0]]
        return float(m.auroc(self.ood, rule.score(scores)))

    def histograms(self, name: str) -> list[Histogram]:
        """The correct/wrong histogram of the ID rows and, with OOD rows, the ID/OOD one."""
        s = self.data.scores[name]
        out: list[Histogram] = [(s[self.id_rows], self.data.losses[self.id_rows] > 0, None)]
        if self.ood is not None and self.has_ood:
            out.append((s, self.ood, None))
        return out

    def base_error(self) -> float:
        return float(self.data.losses[self.id_rows].mean())

    def n_wrong(self) -> int:
        return int((self.data.losses[self.id_rows] > 0).sum())

    def operating_point(self, rule: Any, target: str,
                        columns: list[str]) -> tuple[float, float, float | None]:
        """Coverage of ID rows, selective risk, and OOD rows accepted (None without)."""
        data = self.data
        scores = data.stacked(columns) if len(columns) > 1 else data.scores[target]
        c = np.asarray(rule.accept_proba(scores), dtype=np.float64)
        kept = float(c[self.id_rows].sum())
        risk = float(c[self.id_rows] @ data.losses[self.id_rows]) / kept if kept > 0 \
            else math.nan
        ood = self.ood
        return (float(c[self.id_rows].mean()), risk,
                float(c[ood].mean()) if ood is not None and ood.any() else None)


class Resampled:
    """One bootstrap resample of the pairs of :class:`Rows` searched on a grid: each pair's
    grid directions in the orders sorted once (``PairResampler``), weighted by how often
    each row is drawn, so a resample costs passes over the rows instead of sorts. The
    metrics are those of the resampled rows (bit for bit with 0/1 and whole-number
    losses). The single score columns are resampled in blocks
    (:func:`abstain.metrics.metric_replicates` on :meth:`resamplers`); a pair searched
    exactly is not here (its resample is the drawn rows).
    """

    def __init__(self, counts: NDArray[np.int64], has_ood: bool,
                 pairs: dict[str, Any]) -> None:
        self._pair_resamplers = pairs
        self._counts = counts
        self.has_ood = has_ood
        self.pairs = dict.fromkeys(pairs)

    @staticmethod
    def pair_resamplers(rows: Rows, *, tpr: float, fpr: float, search: str,
                        bounded: bool) -> dict[str, Any]:
        """The resampler of each pair of ``rows`` searched on a grid as for a bootstrap (its
        directions' orders sorted once, :class:`abstain.metrics.PairResampler`); a pair
        searched exactly has none."""
        out = {}
        for name in rows.pairs if rows.has_ood else ():
            losses, ood, s = rows.ood_sample(name)
            r = m.PairResampler(losses, ood, s, tpr=tpr, fpr=fpr, search=search,
                                bounded=bounded)
            if r.usable:
                out[name] = r
        return out

    @staticmethod
    def resamplers(rows: Rows) -> dict[str, Any]:
        """The resampler of each single score column of ``rows`` (built once)."""
        from ..tables import TableResampler

        d = rows.data
        ood = rows.ood if rows.has_ood else None
        losses = d.losses if ood is None else np.where(ood, np.nan, d.losses)
        # {} for losses whose resampled sums could overflow: the rows (scaled sums) instead
        return TableResampler.of_columns({name: d.scores[name] for name in rows.names},
                                         losses, ood)

    def ood_metrics(self, name: str, *, tpr: float, fpr: float,
                    search: str) -> tuple[dict[str, float], str | None]:
        r = self._pair_resamplers[name]
        return r.row(self._counts), r.how


class Tables:
    """The score tables of a source read in chunks: the same operations as :class:`Rows`,
    each computed exactly from the tables. A double-score pair is its
    :class:`~abstain.PairTable` (its metrics and a rule's operating point, no curve).

    Attributes
    ----------
    summary : Summary
    names, has_ood, pairs, chunked
        As :class:`Rows` (``chunked`` is True).
    """

    chunked = True

    def __init__(self, summary: Summary) -> None:
        self.summary = summary
        self.has_ood = summary.marked is not None and summary.n_ood > 0
        self.names = list(summary.tables)
        self.pairs = summary.columns if self.has_ood and summary.pairs is not None else {}

    @property
    def n_id(self) -> int:
        return self.summary.n_id

    @property
    def n_ood(self) -> int:
        return self.summary.n_ood

    @property
    def n_dropped(self) -> int:
        return self.summary.n_dropped

    @property
    def bounded(self) -> bool:
        """Whether every ID loss is at most 1 (OSCR is defined)."""
        return all(t.max_loss <= 1.0 for t in self.summary.tables.values())

    def selective_args(self, name: str) -> tuple[Any, ...]:
        """The argument of a selective metric of one score: its ID table."""
        return (self.summary.tables[name],)

    def ood_sample(self, name: str) -> tuple[Any, ...]:
        """The argument of an OOD metric (or fit) of one score or pair: its marked
        :class:`~abstain.ScoreTable` or its :class:`~abstain.PairTable`."""
        if name in self.pairs:
            assert self.summary.pairs is not None
            return (self.summary.pairs[name],)
        assert self.summary.marked is not None
        return (self.summary.marked[name],)

    def ood_metrics(self, name: str, *, tpr: float, fpr: float,
                    search: str) -> tuple[dict[str, float], str | None]:
        """As :meth:`Rows.ood_metrics`, by :func:`abstain.metrics.evaluate_ood_tables`."""
        table = m.evaluate_ood_tables({"s": self.ood_sample(name)[0]}, tpr=tpr, fpr=fpr,
                                      search=search)
        return table.row("s"), table.search[0]

    # what a fit of a reject rule takes
    @property
    def has_ood_column(self) -> bool:
        """Whether the source has an OOD column (whatever its rows hold)."""
        return self.summary.marked is not None

    @property
    def ood_pairs(self) -> list[tuple[str, str]]:
        """The ``(s_r, OOD score)`` pairs of the columns, with or without OOD rows."""
        return list(self.summary.columns.values())

    @property
    def ood_score(self) -> str | None:
        """The column named as the OOD score of every pair, or None."""
        pairs = self.ood_pairs
        return pairs[0][1] if pairs else None

    def fit_args(self, names: list[str], *, ood: bool) -> tuple[Any, ...]:
        """As :meth:`Rows.fit_args`: the marked table of the one column or the
        :class:`~abstain.PairTable` of the pair with ``ood``, else the ID table."""
        if not ood:
            return (self.summary.tables[names[0]],)
        if len(names) == 2:
            assert self.summary.pairs is not None
            return (self.summary.pairs[f"{names[0]}+{names[1]}"],)
        assert self.summary.marked is not None
        return (self.summary.marked[names[0]],)

    # what the report draws
    def selective(self, display: Any, name: str, **kw: Any) -> None:
        display.from_table(self.summary.tables[name], name=name, **kw)

    def ood_sources(self) -> list[tuple[str, Any, bool]]:
        assert self.summary.marked is not None
        return [(n, self.summary.marked[n], False) for n in self.names]

    def ood_curve(self, display: Any, source: Any, **kw: Any) -> None:
        display.from_table(source, **kw)

    def at_fpr(self, display: Any, source: Any, fpr: float, **kw: Any) -> Any:
        return display.from_table(source, fpr=fpr, **kw)

    def ood_accepted(self, rule: Any, source: Any) -> float:
        c = np.asarray(rule.accept_proba(source.values), dtype=np.float64)
        return float(c @ source.ood_counts) / float(source.ood_counts.sum())

    def binary_losses(self) -> bool:
        """Whether every ID row's loss is 0 or 1 (a classifier's errors)."""
        return all(t.binary for t in self.summary.tables.values())

    def rank_counts(self, name: str) -> list[tuple[str, Any, Any]]:
        """As :meth:`Rows.rank_counts`, from the score tables (no error counts for losses
        other than 0/1 read without the rows with a loss per score)."""
        t = self.summary.tables[name]
        out = []
        try:
            wrong = self.wrong_counts(name)
            out.append(("errors", wrong, t.counts - wrong))
        except ValueError:
            pass
        if self.has_ood:
            assert self.summary.marked is not None
            mk = self.summary.marked[name]
            assert mk.ood_counts is not None
            out.append(("ood", mk.ood_counts, mk.counts - mk.ood_counts))
        return out

    def rule_auroc(self, rule: Any, target: str, columns: list[str]) -> float | None:
        """As :meth:`Rows.rule_auroc`, from the pair's table: the rule's score of each
        distinct pair, weighted by its ID and OOD rows (equal pairs tie, as on the rows)."""
        if not self.has_ood or self.summary.pairs is None or target not in self.summary.pairs:
            return None
        p = self.summary.pairs[target]
        n_id = int(p.counts.sum() - p.ood_counts.sum())
        try:
            table = ScoreTable.from_totals(
                rule.score(p.values), p.counts, np.zeros(p.counts.size), loss_values=[0.0],
                loss_counts=[n_id], ood_counts=p.ood_counts)
        except ValueError as exc:  # 2**53 rows or more at one score of the rule
            raise ValueError(f"the rule's AUROC on the pairs of {target!r} cannot be counted "
                             f"exactly: {exc}") from None
        return float(m.auroc(table))

    def wrong_counts(self, name: str) -> Any:
        """Per distinct score of the ID table, the rows with a loss."""
        table = self.summary.tables[name]
        if self.summary.wrong is not None:
            return np.rint(self.summary.wrong[name].loss_sums).astype(np.int64)
        if table.binary:
            return np.rint(table.loss_sums).astype(np.int64)
        raise ValueError("the correct/wrong histograms of losses other than 0/1 need the rows "
                         "with a loss per score: read the source with summarise(..., "
                         "wrong=True).")

    def histograms(self, name: str) -> list[Histogram]:
        t = self.summary.tables[name]
        wrong = self.wrong_counts(name)
        out: list[Histogram] = [(np.concatenate([t.values, t.values]),
                                 np.repeat([False, True], t.values.size),
                                 np.concatenate([t.counts - wrong, wrong]))]
        if self.has_ood:
            assert self.summary.marked is not None
            mk = self.summary.marked[name]
            assert mk.ood_counts is not None
            out.append((np.concatenate([mk.values, mk.values]),
                        np.repeat([False, True], mk.values.size),
                        np.concatenate([mk.id_counts, mk.ood_counts])))
        return out

    def base_error(self) -> float:
        t = next(iter(self.summary.tables.values()))
        return float(t.loss_sums.sum()) / t.n

    def n_wrong(self) -> int:
        return int(self.wrong_counts(self.names[0]).sum())

    def operating_point(self, rule: Any, target: str,
                        columns: list[str]) -> tuple[float, float, float | None]:
        if target in self.pairs:
            assert self.summary.pairs is not None
            p = self.summary.pairs[target]
            c = np.asarray(rule.accept_proba(p.values), dtype=np.float64)
            kept = float(c @ p.id_counts)
            n_id, n_ood = float(p.id_counts.sum()), float(p.ood_counts.sum())
            return (kept / n_id, float(c @ p.loss_sums) / kept if kept > 0 else math.nan,
                    float(c @ p.ood_counts) / n_ood)
        t = self.summary.tables[target]
        c = np.asarray(rule.accept_proba(t.values), dtype=np.float64)
        kept = float(c @ t.counts)
        risk = float(c @ t.loss_sums) / kept if kept > 0 else math.nan
        ood = None
        if self.has_ood:
            assert self.summary.marked is not None
            ood = self.ood_accepted(rule, self.summary.marked[target])
        return kept / t.n, risk, ood


def as_data(data: TableData | Summary | Rows | Tables) -> Rows | Tables:
    """The view of the rows of a file or of the score tables of a chunked source.

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.app.data import as_data
    >>> from abstain.app.tables import prepare
    >>> rows = prepare({"loss": np.array([0.0, 1.0, 0.0]), "s": np.array([0.1, 0.9, 0.3])})
    >>> view = as_data(rows)
    >>> view.names, view.has_ood, view.base_error()
    (['s'], False, 0.3333333333333333)
    """
    if isinstance(data, Rows | Tables):
        return data
    return Tables(data) if isinstance(data, Summary) else Rows(data)
