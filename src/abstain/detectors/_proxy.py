"""Proxy outliers from in-distribution data: held-out classes of labelled inliers, the
restriction of a network's outputs to the classes kept, and inlier rows with their columns
shuffled apart."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.arrays import as_array, unmasked
from .._core.base import ParamsMixin
from .._core.validation import (
    Interval,
    RandomState,
    as_labels,
    as_real_array,
    check_random_state,
    nonfinite,
    plain,
)
from ._base import label_classes, pick_output

__all__ = ["LeaveClassesOut", "ProxyOutputs", "ProxySplit", "restrict_outputs",
           "shuffled_columns"]


class ProxySplit(NamedTuple):
    """One proxy OOD split of labelled inliers (row indices into the labels).

    Attributes
    ----------
    fit : ndarray of int
        Rows of the kept classes to fit the detectors on.
    inliers : ndarray of int
        The other rows of the kept classes: proxy inliers, scored but never fitted on.
    outliers : ndarray of int
        Every row of the held-out classes: proxy outliers.
    kept, held_out : ndarray
        The kept and the held-out class labels, sorted.
    """

    fit: NDArray[np.intp]
    inliers: NDArray[np.intp]
    outliers: NDArray[np.intp]
    kept: NDArray[Any]
    held_out: NDArray[Any]


class ProxyOutputs(NamedTuple):
    """One proxy OOD split of a network's outputs (:meth:`LeaveClassesOut.split_outputs`),
    restricted to the kept classes (:func:`restrict_outputs`).

    Attributes
    ----------
    fit : dict
        Outputs of the rows to fit the detectors on.
    y_fit : ndarray
        Their labels.
    weight, bias : ndarray or None
        The last layer's rows of the kept classes.
    inliers, outliers : dict
        Outputs of the proxy inliers and of the proxy outliers.
    split : ProxySplit
        The rows and classes of the split.
    """

    fit: dict[str, Any]
    y_fit: NDArray[Any]
    weight: Any
    bias: Any
    inliers: dict[str, Any]
    outliers: dict[str, Any]
    split: ProxySplit


class LeaveClassesOut(ParamsMixin):
    """Proxy OOD splits of labelled inliers: hold out ``n_held_out`` classes at a time.

    Real outliers are seldom at hand when a detector is built; inputs of a class the
    detectors never saw are the nearest thing the in-distribution data hold. ``split(y)``
    shuffles the classes (seeded by ``random_state``), cuts them into consecutive groups of
    ``n_held_out`` and, for each group (the first ``n_splits``; default all), yields a
    :class:`ProxySplit`: the rows of the held-out classes are the proxy outliers; the rows
    of the kept classes are shuffled and split, ``inlier_fraction`` of each kept class as
    proxy inliers and the rest to fit the detectors on (a detector's own training rows
    are not fair inliers: a KNN distance of a bank row to itself is 0). Every class is held
    out at most once. Use only rows that calibrate nothing: the training rows of
    :class:`abstain.combine.BankDetector` do this for its ``method="auto"``, and its
    calibration rows are never touched.

    The detectors of a split see only the kept classes: :func:`restrict_outputs` keeps a
    network's logit columns (and last-layer rows) of those classes, so a softmax detector
    scores a held-out class as a class it does not know. The network itself was trained on
    every class, so proxy outliers are easier to tell apart than outliers of a new kind:
    the proxy ranks detectors and combinations, it does not predict their AUROC on real
    outliers. For images, rotated copies (:func:`rotations`, ``shifts=(1, 2, 3)``) are the
    other proxy of the contrastive literature: pass their outputs as ``outlier_outputs``
    of :class:`~abstain.combine.BankDetector`.

    Parameters
    ----------
    n_held_out : int >= 1, default 1
        Classes held out per split; at least two classes are kept.
    n_splits : int >= 1 or None, default None
        At most this many splits (None: ``n_classes // n_held_out``).
    inlier_fraction : float in (0, 1), default 0.5
        Share of each kept class's rows that are proxy inliers (at least one row, and at
        least one row left to fit on).
    random_state : None, int or numpy Generator
        Seeds the order of the classes and the split of the kept rows.

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.detectors import LeaveClassesOut
    >>> y = np.repeat([0, 1, 2, 3], 5)
    >>> splits = list(LeaveClassesOut(n_held_out=2, random_state=0).split(y))
    >>> [(s.held_out.tolist(), s.kept.tolist()) for s in splits]
    [([0, 2], [1, 3]), ([1, 3], [0, 2])]
    >>> s = splits[0]
    >>> len(s.fit), len(s.inliers), len(s.outliers), sorted(set(y[s.outliers].tolist()))
    (6, 4, 10, [0, 2])
    """

    def __init__(self, n_held_out: int = 1, *, n_splits: int | None = None,
                 inlier_fraction: float = 0.5, random_state: Any = None) -> None:
        self.n_held_out = n_held_out
        self.n_splits = n_splits
        self.inlier_fraction = inlier_fraction
        self.random_state = random_state

    _parameter_constraints = {
        "n_held_out": [Interval(int, 1, None, closed="left")],
        "n_splits": [Interval(int, 1, None, closed="left"), None],
        "inlier_fraction": [Interval(float, 0, 1, closed="neither")],
        "random_state": [RandomState()]}

    def _groups(self, classes: NDArray[Any], rng: np.random.Generator) -> list[NDArray[Any]]:
        k = int(self.n_held_out)
        if classes.size - k < 2:
            raise ValueError(f"y must hold at least {k + 2} classes to hold out "
                             f"n_held_out={k} and keep two; got {classes.size}.")
        order = classes[rng.permutation(classes.size)]
        groups = [np.sort(order[i:i + k]) for i in range(0, classes.size - k + 1, k)]
        return groups if self.n_splits is None else groups[:int(self.n_splits)]

    def get_n_splits(self, y: ArrayLike) -> int:
        """The number of splits that :meth:`split` yields for labels ``y``."""
        self._validate_params()
        classes, _ = label_classes(as_labels(y))
        return len(self._groups(classes, np.random.default_rng(0)))

    def split(self, y: ArrayLike) -> Iterator[ProxySplit]:
        """Yield one :class:`ProxySplit` per group of held-out classes.

        Each kept class needs at least two rows (one proxy inlier, one to fit on). The
        draws index the rows by position (:meth:`split_outputs` puts them in an order of
        their outputs first).
        """
        self._validate_params()
        labels = as_labels(y)
        classes, inverse = label_classes(labels)
        counts = np.bincount(inverse)
        if counts.min() < 2:
            raise ValueError(f"y must hold at least 2 rows of every class (one proxy inlier, "
                             f"one to fit on); class {plain(classes[counts.argmin()])} has 1.")
        rng = np.random.default_rng(self.random_state)  # type: ignore[arg-type]
        groups = self._groups(classes, rng)
        shuffled = rng.permutation(labels.size)
        by_class = [shuffled[inverse[shuffled] == c] for c in range(classes.size)]
        frac = float(self.inlier_fraction)
        for held in groups:
            out = np.isin(classes, held)
            fit, inliers = [], []
            for c in np.flatnonzero(~out):
                rows = by_class[c]
                n_in = min(max(int(round(frac * rows.size)), 1), rows.size - 1)
                inliers.append(rows[:n_in])
                fit.append(rows[n_in:])
            yield ProxySplit(np.sort(np.concatenate(fit)), np.sort(np.concatenate(inliers)),
                             np.flatnonzero(np.isin(inverse, np.flatnonzero(out))),
                             classes[~out], classes[out])


    def split_outputs(self, outputs: Any, y: ArrayLike, *, weight: ArrayLike | None = None,
                      bias: ArrayLike | None = None) -> Iterator[ProxyOutputs]:
        """:meth:`split` applied to a network's ``outputs`` (labels ``y``, last layer
        ``weight`` and ``bias``): per split, the outputs of the fitting rows, proxy inliers
        and proxy outliers, restricted to the kept classes by :func:`restrict_outputs`.
        Integer labels (also Python integers in an object array) are the logit columns'
        indices, 0 to K - 1; other labels keep every column. The draws index the rows in
        an order of their outputs and labels, so the same rows in another order give the
        same splits."""
        labels = as_labels(y)
        if labels.dtype == object and all(isinstance(v, (int, np.integer))
                                          and not isinstance(v, bool) for v in labels):
            items = [int(v) for v in labels.tolist()]  # beyond int64 too: no OverflowError
            if -2**63 <= min(items) and max(items) < 2**63:
                labels = labels.astype(np.int64)
            elif has_output(outputs, "logits"):  # no logit column has such an index
                _refuse_indices(np.shape(pick_output(outputs, "logits"))[-1], items)
        arrays = []
        for f in ("logits", "features"):  # one label per row of every output
            arr = as_array(pick_output(outputs, f)) if has_output(outputs, f) else None
            if arr is not None and arr.ndim and arr.shape[0] != labels.size:
                raise ValueError(f"y must have one label per row of the outputs' {f} "
                                 f"({arr.shape[0]} rows); got {labels.size} labels.")
            if arr is not None and arr.ndim == 2:
                arrays.append(arr)
        if labels.dtype.kind in "iu" and has_output(outputs, "logits"):
            k = np.shape(pick_output(outputs, "logits"))[-1]
            if labels.min() < 0 or labels.max() >= k:
                _refuse_indices(k, [int(labels.min()), int(labels.max())])
        canon = canonical_order(label_classes(labels)[1], *arrays)
        for split in self.split(labels[canon]):
            split = split._replace(fit=np.sort(canon[split.fit]),
                                   inliers=np.sort(canon[split.inliers]),
                                   outliers=np.sort(canon[split.outliers]))
            kept = split.kept if labels.dtype.kind in "iu" else None
            fit, w, b = restrict_outputs(outputs, split.fit, kept, weight=weight, bias=bias)
            yield ProxyOutputs(fit, labels[split.fit], w, b,
                               restrict_outputs(outputs, split.inliers, kept)[0],
                               restrict_outputs(outputs, split.outliers, kept)[0], split)


def _refuse_indices(k: int, labels: list[int]) -> None:
    raise ValueError(f"y must hold the logit columns' indices 0..{k - 1} (integer labels name "
                     f"the columns); got values from {min(labels)} to {max(labels)}. Give "
                     f"0-based labels, or labels of another kind (such as strings) to keep "
                     f"every column.")


def has_output(outputs: Any, field: str) -> bool:
    """Whether ``outputs`` (a dict or an object) holds ``field`` (``"logits"``,
    ``"features"``)."""
    return field in outputs if isinstance(outputs, Mapping) else hasattr(outputs, field)


def canonical_order(codes: NDArray[np.intp], *arrays: NDArray[Any]) -> NDArray[np.intp]:
    """The rows in an order of their values: by the bytes of each row of ``arrays`` as
    float64 (the first array first), then by ``codes``. Seeded draws index this order, so the
    same rows in another order give the same draws; rows that are equal in every array and
    code are interchangeable. One sort per array (its rows as single byte strings). Equal
    values have equal bytes there: float32 values are widened to float64 and ``-0.0`` is
    written as ``0.0`` (adding ``0.0`` does), so a copy in another dtype, or with zeros of
    the other sign, gives the same order."""
    order = np.argsort(codes, kind="stable")
    for arr in arrays[::-1]:
        flat = np.asarray(arr.reshape(arr.shape[0], -1)[order], dtype=np.float64) + 0.0
        rows = flat.view(np.dtype((np.void, flat.dtype.itemsize * flat.shape[1]))).ravel()
        order = order[np.argsort(rows, kind="stable")]
    return order


def restrict_outputs(outputs: Any, rows: ArrayLike, kept: ArrayLike | None = None, *,
                     weight: ArrayLike | None = None, bias: ArrayLike | None = None
                     ) -> tuple[dict[str, Any], Any, Any]:
    """A network's outputs on ``rows``, as if it knew only the classes ``kept``.

    ``outputs`` is what detectors score (a dict or object with ``logits`` and/or
    ``features``). The features of ``rows`` are kept as they are; the logits keep the
    columns ``kept`` (class labels are the logit columns' indices, 0 to K - 1), and the last
    layer ``weight`` (K, d) and ``bias`` (K,) keep the same rows. With ``kept=None`` every
    column is kept.

    Returns
    -------
    outputs : dict
        ``{"logits": ..., "features": ...}``, whichever ``outputs`` holds.
    weight, bias : ndarray or None

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.detectors import restrict_outputs
    >>> out = {"logits": np.arange(12.0).reshape(4, 3)}
    >>> sub, w, b = restrict_outputs(out, [1, 3], kept=[0, 2])
    >>> sub["logits"].tolist(), w, b
    ([[3.0, 5.0], [9.0, 11.0]], None, None)
    """
    idx = np.asarray(unmasked(rows, "rows"))
    if idx.size == 0:
        idx = idx.astype(np.intp)  # no rows: [] is float64
    if idx.dtype.kind not in "iu":
        what = (nonfinite(idx) if idx.dtype.kind == "f" and not np.isfinite(idx).all()
                else f"dtype {idx.dtype}")
        raise ValueError(f"rows must hold integer row indices; got {what}.")
    if idx.ndim != 1:
        raise ValueError(f"rows must be a 1-d array of row indices; got shape {idx.shape}.")
    fields = [f for f in ("logits", "features")
              if has_output(outputs, f)]
    if not fields:
        raise ValueError("outputs must have 'logits' or 'features' (a dict key or an "
                         f"attribute); got {type(outputs).__name__}.")
    full = {f: as_array(pick_output(outputs, f)) for f in fields}
    for f, a in full.items():
        if a.ndim != 2:
            raise ValueError(f"outputs' {f} must be a 2-d array (rows, columns); got shape "
                             f"{a.shape}.")
    if len({a.shape[0] for a in full.values()}) > 1:
        raise ValueError(f"outputs' logits and features must have the same rows; got "
                         f"{full['logits'].shape[0]} and {full['features'].shape[0]}.")
    n = min(a.shape[0] for a in full.values())
    if idx.size and (idx.min() < 0 or idx.max() >= n):  # -1 is no last row here
        raise ValueError(f"rows must hold row indices in 0..{n - 1}; got values from "
                         f"{plain(idx.min())} to {plain(idx.max())}.")
    out = {f: a[idx] for f, a in full.items()}
    if kept is None:
        return out, weight, bias
    cols = np.asarray(unmasked(kept, "kept"))
    if cols.ndim != 1 or cols.size == 0 or cols.dtype.kind not in "iu":
        raise ValueError(f"kept must be a non-empty list of class indices (the logit "
                         f"columns); got {plain(kept)}.")
    if np.unique(cols).size != cols.size:  # a class twice would change every softmax
        raise ValueError(f"kept must name each class once; got {cols.tolist()}.")
    k = out["logits"].shape[1] if "logits" in out else (
        None if weight is None else np.asarray(weight).shape[0])
    if k is not None and (cols.min() < 0 or cols.max() >= k):
        raise ValueError(f"kept must hold class indices in 0..{k - 1} (the logit columns); "
                         f"got values from {plain(cols.min())} to {plain(cols.max())}.")
    for name, layer in (("weight", weight), ("bias", bias)):
        shape = None if layer is None else np.asarray(layer).shape
        if shape is not None and k is not None and shape[:1] != (k,):
            raise ValueError(f"{name} must have one row per logit column ({k}); got shape "
                             f"{shape}.")
    if "logits" in out:
        out["logits"] = out["logits"][:, cols]
    w = None if weight is None else np.asarray(weight)[cols]
    b = None if bias is None else np.asarray(bias)[cols]
    return out, w, b


def shuffled_columns(X: ArrayLike, *, n_rows: int | None = None,
                     random_state: Any = None) -> NDArray[np.float64]:
    """Proxy outliers from inlier rows: every column permuted across the rows, apart.

    Each column keeps its values (its marginal distribution) while the links between
    columns are broken, so a row is a draw from the product of the columns' marginals: an
    input unlike the inliers wherever the columns depend on each other, the tabular
    counterpart of the rotated images of :func:`rotations`. Pass the network's outputs of
    these rows as ``outlier_outputs`` of :class:`~abstain.combine.BankDetector`, beside its
    held-out classes, as a second kind of proxy. Use rows that calibrate nothing (training
    rows). Arrays of more than two dimensions are shuffled per entry of a row (each pixel
    of an image apart): for images, give these shuffled pixels beside the rotations, as a
    list of kinds (``outlier_outputs=[rotated, shuffled]``).

    Parameters
    ----------
    X : array-like of shape (n, ...), n >= 2, finite
        Inlier rows (raw inputs, features or any table of numbers).
    n_rows : int in [1, n] or None, default None
        Rows returned (None: n): the first ``n_rows`` of the shuffled table, so every
        column still holds distinct rows' values.
    random_state : None, int or numpy Generator
        Seeds the permutations (one per column: the argsort of uniform keys, stable).

    Returns
    -------
    ndarray of shape (n_rows, ...), float64
        A pandas DataFrame of the same columns where ``X`` is one.

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.detectors import shuffled_columns
    >>> X = np.array([[0.0, 0.0], [1.0, 10.0], [2.0, 20.0], [3.0, 30.0]])  # col 1 = 10 col 0
    >>> S = shuffled_columns(X, random_state=0)
    >>> sorted(S[:, 0].tolist()), sorted(S[:, 1].tolist())  # each column keeps its values
    ([0.0, 1.0, 2.0, 3.0], [0.0, 10.0, 20.0, 30.0])
    >>> bool(np.all(S[:, 1] == 10 * S[:, 0]))               # the link between them is gone
    False
    """
    arr = shuffle_table(X, "X")
    n = arr.shape[0]
    if n_rows is not None and (isinstance(n_rows, bool) or not isinstance(
            n_rows, (int, np.integer)) or not 1 <= n_rows <= n):
        raise ValueError(f"n_rows must be an integer in [1, {n}] (the rows of X) or None; "
                         f"got {plain(n_rows)}.")
    if not np.isfinite(arr).all():
        raise ValueError(f"X must be finite; got {nonfinite(arr)}.")
    check_random_state("random_state", random_state)
    out = shuffle_columns(arr, np.random.default_rng(random_state))
    return like_frame(X, out if n_rows is None else out[:int(n_rows)])


def like_frame(values: Any, arr: NDArray[np.float64]) -> Any:
    """``arr`` as a data frame of the columns of ``values`` where ``values`` is one: rows made
    from a frame keep its column names, which a detector fitted on the frame checks."""
    if (type(values).__name__ != "DataFrame" or arr.ndim != 2
            or not type(values).__module__.startswith("pandas")):
        return arr  # other tables (pyarrow, dask) give an array, as before
    return type(values)(arr, columns=values.columns)


def shuffle_table(values: Any, name: str) -> NDArray[np.float64]:
    """``values`` as a float64 array of at least 2 rows of at least one entry, or the one
    message (naming ``name``) for what is not."""
    arr = as_real_array(np.asarray(values), name)
    if arr.ndim < 2 or arr.shape[0] < 2 or arr[0].size == 0:
        raise ValueError(f"{name} must have at least 2 rows of at least one column to shuffle; "
                         f"got shape {arr.shape}.")
    return arr


def shuffle_columns(arr: NDArray[np.float64], rng: np.random.Generator) -> NDArray[np.float64]:
    """Each column of ``arr`` (after flattening each row) permuted across rows, apart: the
    stable argsort of uniform keys, so equal keys keep their order on every CPU. The keys
    index the rows in an order of their values (:func:`canonical_order`), so the same rows in
    another order give the same shuffled rows."""
    flat = arr.reshape(arr.shape[0], -1)
    flat = flat[canonical_order(np.zeros(flat.shape[0], dtype=np.intp), flat)]
    keys = rng.random(flat.shape)
    out = np.take_along_axis(flat, np.argsort(keys, axis=0, kind="stable"), axis=0)
    return out.reshape(arr.shape)
