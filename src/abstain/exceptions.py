"""Exceptions and warnings raised by abstain."""

from __future__ import annotations

__all__ = [
    "NotFittedError",
    "InfeasibleTargetWarning",
    "ConvergenceWarning",
    "MissingDataSourceError",
    "DataNotCachedError",
]


class NotFittedError(ValueError, AttributeError):
    """Raised when an estimator is used before ``fit``.

    Subclasses both ``ValueError`` and ``AttributeError``, like scikit-learn's
    exception of the same name, so either can be caught.
    """


class InfeasibleTargetWarning(UserWarning):
    """Issued when a fitted reject rule cannot meet its target on the data.

    The fitted object then has ``feasible_ = False`` and rejects every input.
    """


class ConvergenceWarning(UserWarning):
    """Issued when an iterative solver stops before its tolerance is reached.

    The fitted object is usable but not at the optimum; ``SELE`` also sets
    ``converged_ = False``.
    """


class MissingDataSourceError(ImportError):
    """Raised by a dataset loader when the package that ships the data is not installed.

    The message names the command that installs that source and ``make data`` (``make
    data-ood`` for the image sets), which installs every source at once.
    """


class DataNotCachedError(FileNotFoundError):
    """Raised by a dataset loader whose data must first be fetched into the local cache.

    The message names the command that fetches it (``make data``) and the cache folder.
    """
