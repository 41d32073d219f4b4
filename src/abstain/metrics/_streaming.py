"""A metric accumulated over batches: ``update``, ``merge``, ``compute`` (re-exported by
:mod:`abstain.metrics`).

The state is one :class:`~abstain.ScoreTable`, so the value is that of the metric on all
rows at once however the rows were split into batches or processes (bit for bit for counts
and whole-number losses; with other losses a tie group's sum adds the batches' sums, so its
last bits may differ), and the state stays as small as the number of distinct scores.
"""

from __future__ import annotations

from typing import Any

from numpy.typing import ArrayLike

from .._core.validation import plain
from ..tables._score import ScoreTable
from ._registry import METRICS, check_options

__all__ = ["StreamingMetric"]

class StreamingMetric:
    """A metric of :mod:`abstain.metrics` accumulated batch by batch (the torchmetrics habit).

    ``update`` adds a batch, ``merge`` adds the state of other instances (other workers,
    other processes after sending ``table.to_json()``), ``compute`` returns the metric on
    every row seen, as the metric on the concatenated arrays (bit for bit for counts and
    whole-number losses, else up to the last bits of a tie group's loss sum), and
    ``reset`` starts over. Nothing is transformed: scores and losses are taken as given.

    Parameters
    ----------
    metric : str
        Name of a metric of :data:`METRICS` (each takes a :class:`~abstain.ScoreTable`):
        ``"aurc"``,
        ``"e_aurc"``, ``"augrc"``, ``"risk_coverage_curve"``,
        ``"selective_risk_at_coverage"``, ``"coverage_at_risk"``, ``"sele_loss"``, or an
        OOD metric of one score (``"auroc"``, ``"aupr_in"``, ``"aupr_out"``,
        ``"fpr_at_tpr"``, ``"tnr_at_tpr"``, ``"detection_rate_at_false_alarm"``,
        ``"oscr"``, ``"ccr_at_fpr"``, ``"selective_risk_at_tpr_fpr"``,
        ``"selective_risk_at_precision_recall"``), which need ``is_ood`` in every update,
        or one added with :func:`register_metric`.
    **options
        Keyword arguments of the metric (``coverage=0.8``, ``tpr=0.95``, ...), passed to it
        by ``compute``. ``ties`` may only be ``"mean"``: the order of rows is not kept.
        Checked here, with the metric's own messages: an unknown name raises ``TypeError``,
        a value the metric refuses (or a required target left out) ``ValueError``; for a
        metric added with ``register_metric``, the names here and the values at ``compute``
        (the library runs only its own metrics on a probe table).

    Attributes
    ----------
    table : ScoreTable
        The state: every row seen, summarised.
    n : int
        Number of rows seen.

    Examples
    --------
    >>> from abstain.metrics import StreamingMetric, aurc
    >>> tracker = StreamingMetric("aurc")
    >>> tracker.update([0, 1], [0.1, 0.9]).update([1, 0], [0.5, 0.2])
    StreamingMetric('aurc', n=4)
    >>> tracker.compute() == aurc([0, 1, 1, 0], [0.1, 0.9, 0.5, 0.2])
    True
    >>> other = StreamingMetric("aurc").update([0], [0.3])
    >>> round(tracker.merge(other).compute(), 4)
    0.13
    """

    def __init__(self, metric: str, **options: Any) -> None:
        if not isinstance(metric, str) or metric not in METRICS:
            raise ValueError(f"metric must be one of {', '.join(sorted(METRICS))}; "
                             f"got {plain(metric)}.")
        self.metric = metric
        self.options = options
        spec = METRICS[metric]
        self._function, self._needs_ood = spec.function, spec.kind == "ood"
        self._oracle = spec.oracle
        # the rows seen: ScoreTable.update keeps the batches as pending parts, merged as a
        # binary counter (O(n log n) in all) and into one table when the state is read
        self._table = self._empty()
        check_options(metric, self._function, self._needs_ood, options)

    @property
    def table(self) -> ScoreTable:
        """The state: every row seen, summarised (the pending batches merged on access)."""
        return self._table

    def _empty(self) -> ScoreTable:
        """A table without rows that keeps the oracle part only for an oracle metric."""
        table = ScoreTable()
        if not self._oracle:  # only E-AuRC needs the distinct losses; the others skip them
            table.loss_values = table.loss_counts = None
        return table

    def update(self, losses: ArrayLike, uncertainty: ArrayLike, *,
               is_ood: ArrayLike | None = None) -> StreamingMetric:
        """Add a batch of rows (truth first, as the metrics); return ``self``.

        ``is_ood`` marks OOD rows and is required by the OOD metrics (a batch may hold one
        class only); the OOD rows' losses are ignored.
        """
        if self._needs_ood and is_ood is None:
            raise ValueError(f"is_ood must be given to every update of {self.metric}; got None.")
        if not self._needs_ood and is_ood is not None:
            raise ValueError(f"is_ood must be omitted for {self.metric}, a selective metric; "
                             "got OOD marks.")
        self._table.update(uncertainty, losses, is_ood=is_ood)  # no rows: adds nothing
        return self

    def merge(self, *others: StreamingMetric | ScoreTable) -> StreamingMetric:
        """Add the rows of other trackers of the same metric, or of tables; return ``self``."""
        tables = [self.table]
        for i, other in enumerate(others):
            if isinstance(other, StreamingMetric):
                if other.metric != self.metric:
                    raise ValueError(f"others[{i}] tracks {other.metric}, not {self.metric}; "
                                     "merge trackers of one metric.")
                tables.append(other.table)
            elif isinstance(other, ScoreTable):
                self._check_table(other, f"others[{i}]")
                if other.n:  # an empty table adds no row (nor takes away the oracle part)
                    tables.append(other)
            else:
                raise TypeError(f"others[{i}] must be a StreamingMetric or a ScoreTable; got "
                                f"{type(other).__name__}.")
        self._table = ScoreTable.merge(*tables)
        return self

    def _check_table(self, table: ScoreTable, name: str) -> None:
        """Refuse a table this metric cannot take: OOD marks where it has none (or none
        where it needs them), and no distinct losses for the oracle of E-AuRC."""
        if table.n == 0:
            return
        if self._needs_ood != (table.ood_counts is not None):
            raise ValueError(
                f"{name} must be a table {'with' if self._needs_ood else 'without'} OOD marks "
                f"for {self.metric} ({'an OOD' if self._needs_ood else 'a selective'} metric: "
                f"build it {'with' if self._needs_ood else 'without'} is_ood); got one "
                f"{'without' if self._needs_ood else 'with'}.")
        if self._oracle and table.loss_values is None:
            raise ValueError(f"{name} must keep its distinct losses for {self.metric} (the "
                             "oracle score): build it with oracle=True; got oracle=False.")

    def compute(self) -> Any:
        """The metric on every row seen so far (what it returns on the concatenated rows)."""
        if self.n == 0:
            raise ValueError(f"{self.metric} has no rows yet; call update first.")
        return self._function(self.table, **self.options)

    def reset(self) -> StreamingMetric:
        """Forget every row; return ``self``."""
        self._table = self._empty()
        return self

    @property
    def n(self) -> int:
        """Number of rows seen."""
        return self._table.n

    def __repr__(self) -> str:
        return f"StreamingMetric({self.metric!r}, n={self.n})"
