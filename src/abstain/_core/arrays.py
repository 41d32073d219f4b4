"""Array-likes as NumPy arrays, with what ``np.asarray`` would get wrong refused or
converted: masked arrays (their mask dropped), pandas data frames of nullable columns (all
read as objects), integer columns beside float ones (beyond 2**53 rounded), PyTorch tensors
NumPy cannot take."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["as_array", "check_exact_in_float64", "class_positions", "exact_frame",
           "unmasked"]


def unmasked(values: Any, name: str) -> Any:
    """``values``, unless it is a masked array with masked entries (NumPy drops the mask)."""
    if isinstance(values, np.ma.MaskedArray) and np.ma.is_masked(values):
        raise ValueError(f"{name} must not be a masked array with masked entries (NumPy would "
                         "read their values); pass the entries kept, e.g. values.compressed().")
    return values


def class_positions(classes: Any, labels: Any) -> NDArray[np.intp]:
    """The position of each of ``labels`` in ``classes``, sorted or not (a classifier may
    keep its ``classes_`` in another order than scikit-learn's sorted one); a label not in
    ``classes`` gets the position of a neighbour (check ``classes[pos] == labels``).

    Examples
    --------
    >>> from abstain._core.arrays import class_positions
    >>> class_positions(np.array(["b", "a", "c"]), np.array(["a", "c", "b"])).tolist()
    [1, 2, 0]
    """
    classes = np.asarray(classes)
    order = np.argsort(classes, kind="stable")
    pos = np.minimum(np.searchsorted(classes[order], labels), max(order.size - 1, 0))
    return order[pos]  # type: ignore[no-any-return]


def as_array(values: Any, name: str = "values") -> NDArray[Any]:
    """``np.asarray(values)``; a PyTorch tensor NumPy cannot take (bfloat16, widened exactly
    to float32; requiring grad; on another device) detached and moved to the CPU first; a
    pandas DataFrame of nullable columns, or of bool columns beside numbers, column by
    column, as each Series converts (pandas reads either frame as objects)."""
    unmasked(values, name)
    try:
        # the kinds of a frame's columns ("": a pandas extension type, such as nullable)
        kinds = ({t.kind if isinstance(t, np.dtype) else "" for t in values.dtypes}
                 if type(values).__name__ == "DataFrame" else set())
        if "" in kinds or ("b" in kinds and len(kinds) > 1 and kinds <= set("biuf")):
            return np.column_stack([np.asarray(values.iloc[:, j]) for j in range(values.shape[1])])
        return np.asarray(values)
    except (TypeError, ValueError, RuntimeError):
        if type(values).__module__.split(".")[0] != "torch" or not hasattr(values, "detach"):
            raise
    t = values.detach().cpu()
    return np.asarray(t.float() if str(t.dtype).endswith(".bfloat16") else t)


def check_exact_in_float64(arr: NDArray[Any], name: str) -> None:
    """Refuse 64-bit integers beyond 2**53, or long doubles, that float64 does not hold
    exactly (as floats two of them would tie, or swap their order)."""
    if arr.dtype.kind == "f":
        with np.errstate(over="ignore", invalid="ignore"):  # inf: the finite check's
            wide = arr[(arr.astype(np.float64).astype(arr.dtype) != arr) & np.isfinite(arr)]
        if wide.size:
            raise ValueError(f"{name} holds {arr.dtype} values that float64 cannot hold "
                             f"exactly (e.g. {str(wide[0])}), so "
                             "distinct values could tie; "
                             "subtract an offset first, or pass float64 on purpose.")
        return
    big = arr[(arr > 2**53) | (arr < -(2**53))] if arr.dtype.kind == "i" else arr[arr > 2**53]
    f = big.astype(np.float64)
    fits = f < 2.0**63 if arr.dtype.kind == "i" else f < 2.0**64  # else it rounded past
    same = np.zeros(big.shape, dtype=bool)
    same[fits] = f[fits].astype(arr.dtype) == big[fits]
    if not same.all():
        raise ValueError(f"{name} holds integers that float64 cannot hold exactly (beyond "
                         f"2**53, e.g. {int(big[~same][0])}), so distinct values would "
                         "tie; subtract an offset first, or pass floats on purpose.")


def exact_frame(values: Any, arr: NDArray[Any], name: str) -> None:
    """Refuse a data frame ``values`` read as the float array ``arr`` where one of its integer
    columns holds values float64 cannot hold exactly (beside float columns, 2**53 + 1 was
    read as 2**53, and two distinct rows tied)."""
    if type(values).__name__ != "DataFrame" or arr.dtype.kind != "f" or all(
            isinstance(t, np.dtype) and t.kind == "f" for t in values.dtypes):
        return  # a frame of floats only: no pass over its (many) columns
    for j in range(values.shape[1]):
        col = np.asarray(values.iloc[:, j])
        if col.dtype.kind in "iu":
            check_exact_in_float64(col, f"{name}[:, {j}]")
