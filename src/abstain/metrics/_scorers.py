"""Scorers for scikit-learn's model selection of estimators that abstain.

A scorer is a plain callable ``scorer(estimator, X, y) -> float``, what scikit-learn's
``cross_val_score``, ``GridSearchCV`` and ``cross_validate`` take as ``scoring=``; greater
is better, so the AuRC and the selective risk are negated. It calls only the fitted
estimator's ``uncertainty(X)`` (higher = rejected first) and ``predict(X)``: any object with
both works (:class:`~abstain.SelectiveClassifier`, :class:`~abstain.ordinal.SVOR`), and
scikit-learn is not imported here. The losses are the 0/1 errors ``predict(X) != y``; each
scorer returns the metric of :mod:`abstain.metrics` on those losses and that
uncertainty, with that metric's tie rule.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._core.validation import (
    Interval,
    as_labels,
    as_scores,
    check_label_type,
    check_same_length,
    validate_params,
)
from ._selective import aurc, coverage_at_risk, selective_risk_at_coverage

__all__ = ["neg_aurc_scorer", "neg_selective_risk_scorer", "coverage_at_risk_scorer"]

#: What a scorer is: ``scorer(estimator, X, y) -> float``, greater is better.
Scorer = Callable[[Any, Any, Any], float]


def _errors_and_uncertainty(
    estimator: Any, X: Any, y: Any
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The 0/1 errors of ``estimator.predict(X)`` against ``y`` and ``estimator.uncertainty(X)``.

    Raises ``TypeError`` when the estimator has no ``uncertainty`` method (a plain
    classifier, which has no uncertainty to select by) and ``ValueError`` for ``y`` that
    is not one label per row of ``X``.
    """
    method = getattr(estimator, "uncertainty", None)
    if not callable(method):
        raise TypeError(
            f"estimator must have an uncertainty(X) method (higher = rejected first), such "
            f"as SelectiveClassifier or SVOR; got {type(estimator).__name__}. Wrap a plain "
            f"classifier in abstain.SelectiveClassifier."
        )
    labels = as_labels(y, "y")
    prediction = np.asarray(estimator.predict(X))
    if prediction.ndim != 1:  # a column of labels compared with y broadcasts to (n, n)
        raise ValueError(f"predict(X) must return one label per row (one-dimensional); got "
                         f"shape {prediction.shape}.")
    uncertainty = as_scores(method(X), "uncertainty(X)")
    check_same_length(X=prediction, y=labels)
    check_label_type(labels, prediction)
    check_same_length(**{"predict(X)": prediction, "uncertainty(X)": uncertainty})
    errors = np.asarray(prediction != labels, dtype=np.float64)
    return errors, uncertainty


def neg_aurc_scorer(estimator: Any, X: Any, y: Any) -> float:
    """Minus the AuRC of the estimator's 0/1 errors on ``(X, y)``: greater is better.

    ``-aurc(predict(X) != y, uncertainty(X))`` (eq. 27 of Franc et al. 2023), for
    ``scoring=`` of scikit-learn's model selection, which maximises its score.

    Tie rule: that of :func:`~abstain.metrics.aurc` with ``ties="mean"``: stable sort, one
    curve point per distinct uncertainty, float64 cumulative sums, and the exact
    expectation over a random order of tied samples (independent of the row order).

    Parameters
    ----------
    estimator : fitted estimator
        With ``predict(X)`` and ``uncertainty(X)``.
    X : array-like of shape (n, d)
    y : array-like of shape (n,)
        True labels.

    Returns
    -------
    float
        In ``[-1, 0]``; 0 when no prediction is wrong.

    Raises
    ------
    TypeError
        When ``estimator`` has no ``uncertainty`` method.

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.metrics import aurc, neg_aurc_scorer
    >>> from abstain.ordinal import SVOR
    >>> X, y = np.arange(8.0)[:, None], [0, 0, 0, 1, 0, 1, 1, 1]
    >>> model = SVOR(C=10.0).fit(X, y)
    >>> errors = (model.predict(X) != y).astype(float)
    >>> round(neg_aurc_scorer(model, X, y), 4)   # two errors, at the least certain rows
    -0.0491
    >>> neg_aurc_scorer(model, X, y) == -aurc(errors, model.uncertainty(X))
    True
    """
    errors, uncertainty = _errors_and_uncertainty(estimator, X, y)
    return 0.0 - aurc(errors, uncertainty)


def _neg_selective_risk(estimator: Any, X: Any, y: Any, *, coverage: float) -> float:
    errors, uncertainty = _errors_and_uncertainty(estimator, X, y)
    return 0.0 - selective_risk_at_coverage(errors, uncertainty, coverage)


def _coverage_at_risk(estimator: Any, X: Any, y: Any, *, target_risk: float) -> float:
    errors, uncertainty = _errors_and_uncertainty(estimator, X, y)
    return coverage_at_risk(errors, uncertainty, target_risk)


@validate_params({"coverage": [Interval(float, 0, 1, closed="right")]})
def neg_selective_risk_scorer(coverage: float) -> Scorer:
    """A scorer of minus the selective error rate at ``coverage``: greater is better.

    The returned ``scorer(estimator, X, y)`` is
    ``-selective_risk_at_coverage(predict(X) != y, uncertainty(X), coverage)``: the error
    rate of the predictions kept when the ``coverage * n`` samples with the lowest
    uncertainty are accepted.

    Tie rule: that of :func:`~abstain.metrics.selective_risk_at_coverage`: the samples
    are accepted by increasing uncertainty, and the group of ties at the boundary (or a
    single sample when ``coverage * n`` is fractional) is accepted with the probability
    that makes the expected coverage exact; the result does not depend on the row order.

    Parameters
    ----------
    coverage : float in (0, 1]
        Fraction of the samples accepted.

    Returns
    -------
    callable
        ``scorer(estimator, X, y) -> float`` in ``[-1, 0]``; it raises ``TypeError`` for
        an estimator without an ``uncertainty`` method.

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.metrics import neg_selective_risk_scorer, selective_risk_at_coverage
    >>> from abstain.ordinal import SVOR
    >>> X, y = np.arange(8.0)[:, None], [0, 0, 0, 1, 0, 1, 1, 1]
    >>> model = SVOR(C=10.0).fit(X, y)
    >>> errors = (model.predict(X) != y).astype(float)
    >>> scorer = neg_selective_risk_scorer(coverage=0.5)
    >>> scorer(model, X, y)                      # no error among the half kept
    0.0
    >>> scorer(model, X, y) == -selective_risk_at_coverage(errors, model.uncertainty(X), 0.5)
    True
    """
    return functools.partial(_neg_selective_risk, coverage=float(coverage))


@validate_params({"target_risk": [Interval(float, 0, None, closed="neither")]})
def coverage_at_risk_scorer(target_risk: float) -> Scorer:
    """A scorer of the highest coverage whose selective error rate is at most ``target_risk``.

    The returned ``scorer(estimator, X, y)`` is
    ``coverage_at_risk(predict(X) != y, uncertainty(X), target_risk)``, greater is
    better; 0.0 when no threshold on the uncertainty meets the target.

    Tie rule: that of :func:`~abstain.metrics.coverage_at_risk`: the maximum expected
    coverage over randomised threshold rules (the boundary group of tied samples accepted
    with a probability), so the result does not depend on the row order.

    Parameters
    ----------
    target_risk : float > 0
        Bound on the selective error rate.

    Returns
    -------
    callable
        ``scorer(estimator, X, y) -> float`` in ``[0, 1]``; it raises ``TypeError`` for
        an estimator without an ``uncertainty`` method.

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.metrics import coverage_at_risk, coverage_at_risk_scorer
    >>> from abstain.ordinal import SVOR
    >>> X, y = np.arange(8.0)[:, None], [0, 0, 0, 1, 0, 1, 1, 1]
    >>> model = SVOR(C=10.0).fit(X, y)
    >>> errors = (model.predict(X) != y).astype(float)
    >>> scorer = coverage_at_risk_scorer(target_risk=0.1)
    >>> round(scorer(model, X, y), 4)
    0.8333
    >>> scorer(model, X, y) == coverage_at_risk(errors, model.uncertainty(X), 0.1)
    True
    """
    return functools.partial(_coverage_at_risk,
                             target_risk=float(target_risk))
