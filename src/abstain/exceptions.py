"""Exceptions and warnings raised by abstain."""

from __future__ import annotations

__all__ = ["NotFittedError", "InfeasibleTargetWarning", "ConvergenceWarning"]


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
    """Issued when an iterative solver stops at ``max_iter`` before reaching ``tol``."""
