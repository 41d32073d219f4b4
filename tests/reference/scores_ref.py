"""Brute-force references for ``abstain.scores`` (section 3.2).

Loss matrices are indexed ``loss[y_true, y_pred]``. The plug-in Bayes prediction is
``argmin_yhat sum_y p(y|x) loss[y, yhat]`` (lowest index among equal risks) and its
conditional risk is that minimum, eq. (9) with ``p`` replaced by the estimate.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np


def zero_one_loss_ref(n_classes: int) -> np.ndarray:
    return np.array(
        [[0.0 if y == yhat else 1.0 for yhat in range(n_classes)] for y in range(n_classes)]
    )


def absolute_error_loss_ref(n_classes: int) -> np.ndarray:
    return np.array(
        [[float(abs(y - yhat)) for yhat in range(n_classes)] for y in range(n_classes)]
    )


def expected_losses_ref(proba_row, loss, *, exact=False) -> list:
    """``[sum_y p(y) loss[y, yhat] for yhat]`` as an explicit double loop."""
    conv = Fraction if exact else float
    p = [conv(float(v)) for v in proba_row]
    k = len(p)
    out = []
    for yhat in range(k):
        total = conv(0)
        for y in range(k):
            total += p[y] * conv(float(loss[y][yhat]))
        out.append(total)
    return out


def conditional_risk_ref(proba, loss=None, prediction=None, *, exact=False):
    """Return ``(prediction, risk)`` arrays computed row by row with explicit loops.

    ``exact=True`` decides the argmin with exact rational arithmetic (so mathematically
    equal risks tie and the lowest index wins); use it only on inputs where the float
    implementation's ties are exact too (e.g. dyadic probabilities).
    """
    proba = np.asarray(proba, dtype=float)
    n, k = proba.shape
    if loss is None:
        loss = zero_one_loss_ref(k)
    preds, risks = [], []
    for i in range(n):
        expected = expected_losses_ref(proba[i], loss, exact=exact)
        if prediction is None:
            best = 0
            for yhat in range(1, k):
                if expected[yhat] < expected[best]:
                    best = yhat
        else:
            best = int(prediction[i])
        preds.append(best)
        risks.append(float(expected[best]))
    return np.array(preds, dtype=int), np.array(risks)


def mcp_ref(proba) -> np.ndarray:
    """Maximum class probability score as an uncertainty: ``1 - max_y p(y)``."""
    proba = np.asarray(proba, dtype=float)
    out = []
    for row in proba:
        best = row[0]
        for v in row[1:]:
            if v > best:
                best = v
        out.append(1.0 - float(best))
    return np.array(out)


def sele_proxy_ref(scores, losses, groups=None) -> float:
    """Eq. (30) averaged over chunks, as an explicit double loop over ordered pairs."""
    import math

    n = len(losses)
    groups = [0] * n if groups is None else list(groups)
    total = 0.0
    labels = sorted(set(groups))
    for label in labels:
        members = [i for i in range(n) if groups[i] == label]
        m = len(members)
        chunk = 0.0
        for i in members:
            for j in members:
                z = float(scores[j]) - float(scores[i])
                chunk += float(losses[i]) * (max(z, 0.0) + math.log1p(math.exp(-abs(z))))
        total += chunk / (m * m)
    return total / len(labels)


def predicted_class_design_ref(X, y_pred, classes) -> np.ndarray:
    """The feature map of eq. (37) as a dense matrix: ``[x, 1]`` in the block of ``h(x)``."""
    n, d = np.shape(X)
    phi = np.zeros((n, len(classes) * (d + 1)))
    for i in range(n):
        k = list(classes).index(y_pred[i])
        phi[i, k * (d + 1) : k * (d + 1) + d] = X[i]
        phi[i, k * (d + 1) + d] = 1.0
    return phi


def ridge_ref(phi, target, C, free=0) -> np.ndarray:
    """``argmin C/2 ||theta||^2 + (1/n) ||target - phi theta||^2`` (minimum norm for C = 0).

    The last ``free`` coefficients are not in the penalty (the baseline's coefficient).
    """
    n, dim = phi.shape
    if C == 0:
        return np.linalg.pinv(phi) @ target
    penalty = np.eye(dim)
    for j in range(dim - free, dim):
        penalty[j, j] = 0.0
    return np.linalg.solve(phi.T @ phi + n * C / 2.0 * penalty, phi.T @ target)


def top2_margin_ref(decision) -> np.ndarray:
    """``-(f_(1) - f_(2))`` per row by two explicit passes: the winner, then the best other.

    A tie for the top (the winner's index taken once, the other equal value is the
    runner-up) gives a gap of 0.
    """
    out = []
    for row in np.asarray(decision, dtype=float):
        best = 0
        for j in range(1, len(row)):
            if row[j] > row[best]:
                best = j
        runner = None
        for j in range(len(row)):
            if j != best and (runner is None or row[j] > row[runner]):
                runner = j
        out.append(-(float(row[best]) - float(row[runner])))
    return np.array(out)
