"""The randomised threshold rule of eq. (25), shared by every reject rule.

``c(x) = 1`` below the threshold, ``accept_prob`` at it, ``0`` above; a decision accepts the
inputs with ``c = 1`` and draws the tied ones with probability ``c``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["draw_accept", "threshold_proba"]


def threshold_proba(s: NDArray[np.float64], threshold: float,
                    accept_prob: float) -> NDArray[np.float64]:
    """Acceptance probability of each score: 1.0 below ``threshold``, ``accept_prob`` at it,
    0.0 above.

    >>> import numpy as np
    >>> from abstain._core.decision import threshold_proba
    >>> threshold_proba(np.array([0.1, 0.5, 0.9]), 0.5, 0.25).tolist()
    [1.0, 0.25, 0.0]
    """
    c = (s < threshold).astype(np.float64)
    c[s == threshold] = accept_prob
    return c


def draw_accept(c: NDArray[np.float64], random_state: Any) -> NDArray[np.bool_]:
    """Accept where ``c`` is 1; draw the entries strictly between 0 and 1 from
    ``numpy.random.default_rng(random_state)``, so an int seed repeats its decisions."""
    out = c >= 1.0
    tied = (c > 0.0) & (c < 1.0)
    if np.any(tied):
        rng = np.random.default_rng(random_state)
        out[tied] = rng.random(int(tied.sum())) < c[tied]
    return out


def check_infeasible_rule(feasible: bool, threshold: float) -> None:
    """Refuse a loaded rule marked infeasible that accepts anything: a fit that finds no
    feasible rule rejects everything (threshold ``-inf``), so another threshold is an edit.
    """
    if not feasible and threshold != -np.inf:
        raise ValueError("fitted.threshold_ must be -inf for fitted.feasible_ = false (an "
                         f"infeasible rule rejects everything); got {threshold!r}.")
