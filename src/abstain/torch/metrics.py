"""torchmetrics ``Metric`` objects of abstain's selective and OOD metrics, exact and
synchronised across processes (extra ``torchmetrics``: ``pip install 'abstain[torchmetrics]'``).

A Lightning or torchmetrics user logs AuRC, AUGRC or AUROC per epoch with objects that
accumulate over batches and synchronise across processes. Each metric here keeps the
**exact tie-group table** of what it has seen, an :class:`abstain.ScoreTable` (per distinct
score: rows, loss sum, squared-loss sum, OOD rows; and the distinct losses with their rows)
as tensor states that torchmetrics concatenates across processes (``dist_reduce_fx="cat"``);
``compute`` regroups them (:meth:`abstain.ScoreTable.from_totals`) and calls the NumPy
metric on the table, so the value equals abstain's metric on every row seen, ties
included (bit for bit with 0/1 and whole-number losses; to float64 rounding of the summed
losses otherwise, as :meth:`abstain.ScoreTable.merge`), however the rows are split into
batches and processes. The
state grows with the number of distinct scores, not of rows: round scores (to 1e-4, say)
to bound it, or give ``edges=`` (:class:`AURC`, :class:`AUGRC`, :class:`AUROC`): a fixed
binned state (:class:`abstain.tables.BinnedTable`, reduced by sum, min and max) whose
``compute`` is the metric on the bins and ``bounded()`` adds its certified error.

Conventions, in torchmetrics' order ``update(preds, target)``:

- **selective metrics** (:class:`AURC`, :class:`EAURC`, :class:`AUGRC`,
  :class:`SelectiveRiskAtCoverage`): ``preds`` of shape (N,) are uncertainty scores
  (higher = rejected first) and ``target`` the per-sample **losses** (>= 0; the 0/1 errors
  of a classifier); or ``preds`` of shape (N, C) are class probabilities and ``target``
  the class **labels**: the score is then ``1 - max_c preds`` (the MSP uncertainty) and
  the loss the 0/1 error of ``argmax_c preds``;
- **OOD metrics** (:class:`AUROC`, :class:`FPRAtTPR`, :class:`AUPRIn`, :class:`AUPROut`):
  ``preds`` of shape (N,) are OOD scores (higher = more OOD) and ``target`` the OOD marks
  (1 = OOD, 0 = in-distribution).

Every value is computed in float64 NumPy on the CPU and returned as a float64 tensor.

Examples
--------
>>> import torch
>>> from abstain.torch.metrics import AURC
>>> from abstain.metrics import aurc
>>> metric = AURC()
>>> u, losses = torch.tensor([0.1, 0.4, 0.4, 0.9]), torch.tensor([0.0, 1.0, 0.0, 1.0])
>>> metric.update(u[:2], losses[:2])
>>> metric.update(u[2:], losses[2:])
>>> float(metric.compute()) == aurc(losses.numpy(), u.numpy())
True
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._core.optional import require
from .._core.validation import Interval, as_real_array, check_params, empty_batch, plain
from ..metrics import (
    augrc,
    aupr_in,
    aupr_out,
    aurc,
    auroc,
    e_aurc,
    fpr_at_tpr,
    selective_risk_at_coverage,
)
from ..tables import BinnedTable, Bounded, ScoreTable

require("torchmetrics", "torchmetrics", "abstain.torch.metrics")

import torch  # noqa: E402  (after the check that torchmetrics is installed)
from torchmetrics import Metric  # noqa: E402

__all__ = ["AURC", "AUGRC", "AUPRIn", "AUPROut", "AUROC", "EAURC", "FPRAtTPR",
           "SelectiveRiskAtCoverage"]

#: The fields of a ScoreTable kept as states, one total per distinct score (or loss).
_GROUP_FIELDS = ("values", "counts", "loss_sums", "sq_loss_sums")
_LOSS_FIELDS = ("loss_values", "loss_counts")


def _raw(x: Any) -> NDArray[Any]:
    """An input as a NumPy array of its own dtype (integers and complex numbers kept, so
    that the library's checks see them: an int64 beyond 2**53 is refused, not rounded)."""
    if isinstance(x, torch.Tensor):
        t = x.detach().to("cpu")
        if t.dtype in (torch.bfloat16, torch.float16):  # no NumPy bfloat16: widen, exactly
            t = t.to(torch.float64)
        return np.asarray(t.numpy())
    return np.asarray(x)


def _numpy(x: Any) -> NDArray[Any]:
    """An input or a state as a float64 NumPy array; a list state (its tensors, gathered
    from processes) concatenated."""
    if isinstance(x, list) and all(isinstance(t, torch.Tensor) and t.ndim == 1 for t in x):
        return (np.concatenate([_numpy(t) for t in x]) if x
                else np.zeros(0, dtype=np.float64))
    if isinstance(x, list):  # an input given as a list of numbers (or of 0-d tensors)
        return np.asarray([float(v) for v in x], dtype=np.float64) if all(
            isinstance(v, (int, float, np.number, torch.Tensor)) and np.ndim(v) == 0
            for v in x) else np.asarray(x, dtype=np.float64)
    if isinstance(x, torch.Tensor):
        return np.asarray(x.detach().to("cpu", torch.float64).numpy())
    return np.asarray(x, dtype=np.float64)


#: The states of the binned option, with their reductions across processes.
_BIN_STATES = {"bin_counts": "sum", "bin_ood_counts": "sum", "bin_loss_sums": "sum",
               "bin_sq_loss_sums": "sum", "bin_lows": "min", "bin_highs": "max",
               "bin_max_loss": "max", "bin_binary": "min"}


class _TableMetric(Metric):
    """The states and the update of a metric on a score table; ``_value(table)`` is the
    metric."""

    is_differentiable = False
    full_state_update = False
    ood: bool = False
    binnable: bool = False
    _binned_name: str = ""

    def __init__(self, *, edges: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.edges: NDArray[np.float64] | None = None
        if edges is not None:
            if not self.binnable:
                raise ValueError(f"edges is taken by AURC, AUGRC and AUROC (the metrics with a "
                                 f"certified error on bins); got edges for "
                                 f"{type(self).__name__}.")
            # a list or tuple of numbers as the edges, not as a list state of tensors
            given = (np.asarray(edges, dtype=np.float64) if isinstance(edges, (list, tuple))
                     else _numpy(edges))
            self.edges = BinnedTable(given).edges  # checks the edges
            k = self.edges.size - 1
            for name, fx in _BIN_STATES.items():
                size = () if name in ("bin_max_loss", "bin_binary") else (k,)
                start = {"bin_lows": np.inf, "bin_highs": -np.inf, "bin_binary": 1.0}
                self.add_state(name, default=torch.full(size, start.get(name, 0.0),
                                                        dtype=torch.float64),
                               dist_reduce_fx=fx)
            return
        fields = (*_GROUP_FIELDS, *_LOSS_FIELDS) + (("ood_counts",) if self.ood else ())
        for name in fields:  # list states: processes may hold tables of different sizes
            self.add_state(name, default=[], dist_reduce_fx="cat")
        # a process without rows sends an empty state of the metric's dtype: float64, as
        # the others' (float32 made the gathered sizes disagree and aborted the sync)
        self.set_dtype(torch.float64)

    def _apply(self, fn: Any, exclude_state: Any = "") -> Any:
        # The states are exact float64 tables: a conversion to another dtype (Module.to(
        # dtype), as a parent module converted by a precision setting) would round them, and
        # a process without rows would then send an empty state of another dtype. Only the
        # device of such a conversion is applied (torchmetrics itself guards .half() and
        # .float(), not .to(dtype)).
        # torchmetrics takes the metric's dtype from a float32 probe after any move, so a
        # plain .to(device) made it float32 too: it is set back to the states' float64.
        probe = fn(torch.zeros(1, dtype=torch.float64, device=self.device))
        if probe.dtype != torch.float64:
            device = probe.device
            fn = lambda t: t.to(device)  # noqa: E731
        out = super()._apply(fn, exclude_state)
        out._dtype = torch.float64  # type: ignore[assignment]
        return out

    def merge_state(self, incoming_state: Any) -> None:
        """Add the states of another metric of this class (or a dict of them), as
        torchmetrics does; a value computed before is dropped, so ``compute`` is of the
        merged rows. Binned metrics merge only on the same edges."""
        if isinstance(incoming_state, _TableMetric) and (
                (incoming_state.edges is None) != (self.edges is None)
                or (self.edges is not None and incoming_state.edges is not None
                    and not np.array_equal(incoming_state.edges, self.edges))):
            raise ValueError(f"{type(self).__name__} merges only a metric on the same bin "
                             "edges (or none, for both); got other edges.")
        if isinstance(incoming_state, dict):
            self._check_bin_shapes(incoming_state)
        super().merge_state(incoming_state)
        self._computed = None

    def _check_bin_shapes(self, states: dict[str, Any]) -> None:
        """Refuse binned ``states`` of another number of bins than the edges have."""
        if self.edges is None:
            return
        k = self.edges.size - 1
        for name in _BIN_STATES:
            if name in states:
                want = () if name in ("bin_max_loss", "bin_binary") else (k,)
                if tuple(states[name].shape) != want:
                    raise ValueError(f"{type(self).__name__}'s state {name} must have shape "
                                     f"{want} for its {k} bins; got "
                                     f"{tuple(states[name].shape)} (a state of other edges).")

    def _binned_update(self, batch: ScoreTable) -> None:
        assert self.edges is not None
        self._check_bin_shapes({name: getattr(self, name) for name in _BIN_STATES})
        b = BinnedTable(self.edges).add(batch)
        sq = b.sq_loss_sums if b.sq_loss_sums is not None else np.full(b.counts.size, np.nan)
        new = {"bin_counts": b.counts, "bin_ood_counts": b.ood_counts,
               "bin_loss_sums": b.loss_sums, "bin_sq_loss_sums": sq, "bin_lows": b.lows,
               "bin_highs": b.highs, "bin_max_loss": b.max_loss,
               "bin_binary": float(b.binary)}
        join: dict[str, Any] = {"sum": torch.add, "min": torch.minimum, "max": torch.maximum}
        for name, fx in _BIN_STATES.items():
            value = torch.as_tensor(np.asarray(new[name], dtype=np.float64))
            setattr(self, name, join[fx](getattr(self, name), value))

    def _binned(self) -> BinnedTable:
        """The binned table of every row seen (after a sync: by every process)."""
        assert self.edges is not None
        self._check_bin_shapes({name: getattr(self, name) for name in _BIN_STATES})
        b = BinnedTable(self.edges)
        b.counts = np.rint(_numpy(self.bin_counts)).astype(np.int64)
        b.ood_counts = np.rint(_numpy(self.bin_ood_counts)).astype(np.int64)
        b.loss_sums = _numpy(self.bin_loss_sums)
        sq = _numpy(self.bin_sq_loss_sums)
        b.sq_loss_sums = None if np.isnan(sq).any() else sq
        b.lows, b.highs = _numpy(self.bin_lows), _numpy(self.bin_highs)
        b.max_loss = float(_numpy(self.bin_max_loss))
        b.binary = bool(float(_numpy(self.bin_binary)) == 1.0)
        b.ood_marked = self.ood if b.n else None
        self._check_bins(b)
        return b

    def _check_bins(self, b: BinnedTable) -> None:
        """Refuse a binned state that no rows on these edges give (loaded or merged from a
        metric on other edges, or corrupted): its certified error would not hold."""
        counts, ood = _numpy(self.bin_counts), _numpy(self.bin_ood_counts)
        full = b.counts > 0
        right = np.where(np.arange(full.size) == full.size - 1, b.highs <= b.edges[1:],
                         b.highs < b.edges[1:])
        fits = ((counts == b.counts) & (ood == b.ood_counts) & (b.counts >= 0)
                & (b.ood_counts >= 0) & (b.ood_counts <= b.counts) & (b.loss_sums >= 0)
                & np.where(full, (b.edges[:-1] <= b.lows) & (b.lows <= b.highs) & right,
                           (b.loss_sums == 0) & (b.lows == np.inf) & (b.highs == -np.inf)))
        if not np.all(fits) or not b.max_loss >= 0:
            j = int(np.argmin(fits)) if not np.all(fits) else 0
            raise ValueError(
                f"{type(self).__name__}'s binned state does not fit its edges (bin {j}: "
                f"{plain(float(counts[j]))} rows, {plain(float(ood[j]))} OOD, scores from "
                f"{plain(float(b.lows[j]))} to {plain(float(b.highs[j]))}, in the bin from "
                f"{plain(float(b.edges[j]))} to {plain(float(b.edges[j + 1]))}): a state of "
                "a metric on other edges, or a corrupted one.")

    def bounded(self) -> Bounded:
        """With ``edges``: the metric on the bins and its certified error (the exact value on
        the rows seen is within ``error`` of ``value``), as
        :class:`abstain.tables.BinnedTable` computes them."""
        if self.edges is None:
            raise ValueError(f"bounded() needs the binned state: build {type(self).__name__} "
                             "with edges=; without, compute() is exact.")
        b = self._binned()
        if b.n == 0:
            raise ValueError(f"{type(self).__name__} has seen no rows: call update first.")
        return getattr(b, self._binned_name)()  # type: ignore[no-any-return]

    def _rows(self, preds: Any, target: Any) -> ScoreTable:
        # the target as given (integer losses beyond 2**53, complex numbers: the library's
        # checks refuse them; float64 rounded or dropped them)
        p, t = _raw(preds), _raw(target)
        if self.ood:
            if p.ndim != 1:
                raise ValueError(f"preds must be OOD scores of shape (N,); got shape {p.shape}.")
            return ScoreTable.from_arrays(p, np.zeros(p.size), is_ood=t)
        if p.ndim == 2:  # class probabilities and labels: MSP uncertainty, 0/1 error
            p = as_real_array(p, "preds")
            outside = ~((p >= 0.0) & (p <= 1.0))  # NaN, -inf, logits, log-probabilities
            if outside.any():
                raise ValueError(f"preds of shape (N, C) must be class probabilities in "
                                 f"[0, 1]; got {plain(p[outside][0])}.")
            if t.shape != (p.shape[0],):
                raise ValueError(f"target must be class labels of shape ({p.shape[0]},) with "
                                 f"preds of class probabilities; got shape {t.shape}.")
            bad = (t != np.rint(t)) | (t < 0) | (t >= p.shape[1])  # never a silent error
            if bad.any():
                raise ValueError(f"target must hold class indices in 0..{p.shape[1] - 1} (one "
                                 f"per column of preds); got {plain(t[bad][0])}.")
            return ScoreTable.from_arrays(1.0 - p.max(axis=1),
                                          (p.argmax(axis=1) != t).astype(np.float64))
        if p.ndim != 1:
            raise ValueError(f"preds must be uncertainty scores of shape (N,) or class "
                             f"probabilities of shape (N, C); got shape {p.shape}.")
        return ScoreTable.from_arrays(p, t)

    def _table(self) -> ScoreTable:
        """The table of every row seen (after a sync: by every process)."""
        get = {name: _numpy(getattr(self, name)) for name in
               (*_GROUP_FIELDS, *_LOSS_FIELDS, *(("ood_counts",) if self.ood else ()))}
        if get["values"].size == 0:
            return ScoreTable()
        sq = get["sq_loss_sums"]
        return ScoreTable.from_totals(
            get["values"], get["counts"], get["loss_sums"], loss_values=get["loss_values"],
            loss_counts=get["loss_counts"], sq_loss_sums=None if np.isnan(sq).any() else sq,
            ood_counts=get.get("ood_counts"))

    def update(self, preds: Any, target: Any) -> None:
        """Add a batch (see the module docstring for ``preds`` and ``target``); a batch
        without rows adds nothing."""
        for name, x in (("preds", preds), ("target", target)):  # text, objects: one line
            arr = _raw(x)
            if arr.dtype.kind not in "biuf":
                as_real_array(arr, name)
        if empty_batch(_numpy(preds), _numpy(target)):
            return
        if self.edges is not None:
            self._binned_update(self._rows(preds, target))
            return
        merged = ScoreTable.merge(self._table(), self._rows(preds, target)) \
            if _numpy(self.values).size else self._rows(preds, target)
        sq = merged.sq_loss_sums if merged.sq_loss_sums is not None else \
            np.full(merged.values.size, np.nan)
        state = {"values": merged.values, "counts": merged.counts,
                 "loss_sums": merged.loss_sums, "sq_loss_sums": sq,
                 "loss_values": merged.loss_values, "loss_counts": merged.loss_counts}
        if self.ood:
            state["ood_counts"] = merged.ood_counts
        for name, value in state.items():
            setattr(self, name, [torch.as_tensor(np.asarray(value, dtype=np.float64))])

    def forward(self, preds: Any, target: Any) -> torch.Tensor:
        """Add the batch to the rows seen (as :meth:`update`) and return the metric of the
        batch alone: NaN for a batch without rows or one the metric cannot evaluate (OOD
        rows only, say), whose rows still count. (torchmetrics' own forward set the rows
        seen aside while it computed the batch, and lost them when that raised.)"""
        self.update(preds, target)
        value = math.nan
        if not empty_batch(_numpy(preds), _numpy(target)):
            batch = self._rows(preds, target)
            try:
                value = (getattr(BinnedTable(self.edges).add(batch), self._binned_name)().value
                         if self.edges is not None else self._value(batch))
            except ValueError:  # the batch alone: one class, say
                pass
        out = torch.tensor(value, dtype=torch.float64)
        self._forward_cache = out  # type: ignore[assignment]
        return out

    def compute(self) -> torch.Tensor:
        """The metric of every row seen, as a float64 scalar tensor (with ``edges``: its
        value on the bins; :meth:`bounded` adds the certified error)."""
        if self.edges is not None:
            return torch.tensor(self.bounded().value, dtype=torch.float64)
        table = self._table()
        if table.n == 0:
            raise ValueError(f"{type(self).__name__} has seen no rows: call update first.")
        return torch.tensor(self._value(table), dtype=torch.float64)

    def _value(self, table: ScoreTable) -> float:  # pragma: no cover - overridden
        raise NotImplementedError


class AURC(_TableMetric):
    """AuRC, :func:`abstain.metrics.aurc` (``ties="mean"``), lower is better."""

    binnable = True
    _binned_name = "aurc"

    higher_is_better = False

    def _value(self, table: ScoreTable) -> float:
        return aurc(table)


class EAURC(_TableMetric):
    """E-AuRC, :func:`abstain.metrics.e_aurc`: AuRC less the oracle's, lower is better."""

    higher_is_better = False

    def _value(self, table: ScoreTable) -> float:
        return e_aurc(table)


class AUGRC(_TableMetric):
    """AUGRC, :func:`abstain.metrics.augrc`, lower is better."""

    binnable = True
    _binned_name = "augrc"

    higher_is_better = False

    def _value(self, table: ScoreTable) -> float:
        return augrc(table)


class SelectiveRiskAtCoverage(_TableMetric):
    """Selective risk at ``coverage``, :func:`abstain.metrics.selective_risk_at_coverage`,
    lower is better."""

    higher_is_better = False

    def __init__(self, coverage: float = 0.9, **kwargs: Any) -> None:
        check_params({"coverage": coverage},
                     {"coverage": [Interval(float, 0, 1, closed="right")]})
        super().__init__(**kwargs)
        self.coverage = float(coverage)

    def _value(self, table: ScoreTable) -> float:
        return selective_risk_at_coverage(table, coverage=self.coverage)


class AUROC(_TableMetric):
    """AUROC of OOD scores against OOD marks, :func:`abstain.metrics.auroc` (a tie counts
    one half), higher is better."""

    binnable = True
    _binned_name = "auroc"

    ood = True
    higher_is_better = True

    def _value(self, table: ScoreTable) -> float:
        return auroc(table)


class FPRAtTPR(_TableMetric):
    """FPR at ``tpr`` (FPR@95), :func:`abstain.metrics.fpr_at_tpr`, lower is better."""

    ood = True
    higher_is_better = False

    def __init__(self, tpr: float = 0.95, **kwargs: Any) -> None:
        check_params({"tpr": tpr}, {"tpr": [Interval(float, 0, 1, closed="right")]})
        super().__init__(**kwargs)
        self.tpr = float(tpr)

    def _value(self, table: ScoreTable) -> float:
        return fpr_at_tpr(table, tpr=self.tpr)


class AUPRIn(_TableMetric):
    """AUPR with ID rows positive, :func:`abstain.metrics.aupr_in`, higher is better."""

    ood = True
    higher_is_better = True

    def _value(self, table: ScoreTable) -> float:
        return aupr_in(table)


class AUPROut(_TableMetric):
    """AUPR with OOD rows positive, :func:`abstain.metrics.aupr_out`, higher is better."""

    ood = True
    higher_is_better = True

    def _value(self, table: ScoreTable) -> float:
        return aupr_out(table)
