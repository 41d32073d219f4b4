"""Detectors on a network's logits (no fitting): MSP, MaxLogit, Energy, ODIN, GEN."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from .._core.optional import require
from .._core.serialize import serializable
from .._core.validation import Interval
from ._base import Detector

#: Up to this many columns the row reductions run on a transposed copy (K rows of n), where
#: NumPy reduces across rows with whole-vector operations; a reduction along short rows
#: costs more than ``np.exp`` itself (0.46 ms for a sum over 10,000 rows of 10, 0.02 ms
#: transposed).
_TRANSPOSE_UP_TO = 32
#: The least normal float64 and its logarithm.
_TINY = float(np.finfo(np.float64).tiny)
_LOG_TINY = math.log(_TINY)


def _peak_and_rest(z: NDArray[np.float64], temperature: float = 1.0,
                   ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each row's largest entry ``peak`` and ``rest = sum_k exp((z[i, k] - peak[i]) / T) - 1``
    (``T`` the ``temperature``).

    The ``- 1`` is exact: one entry equal to the peak (its term is exactly 1) is left out of
    the sum, and any other entry equal to the peak is counted as an exact 1, so a row with
    one dominant entry keeps its small terms to full precision. The differences are divided
    by ``T``, not the logits: ``1e306 / 1e-3`` would overflow (``inf - inf`` is NaN).
    """
    with np.errstate(over="ignore"):  # a difference beyond float64 is -inf: a term of 0
        if z.shape[1] <= _TRANSPOSE_UP_TO:
            axis = 0
            d = z.T.copy()  # C order: K rows of n (a copy, as the input is not to be written)
            peak = d.max(axis=0)
            np.subtract(d, peak, out=d)
        else:
            axis = 1
            peak = z.max(axis=1)
            d = z - peak[:, None]
    top = d == 0.0
    if temperature != 1.0:
        wide = np.isinf(d) if temperature > 2.0 else None  # a difference beyond float64
        with np.errstate(over="ignore"):  # below float64 (T < 1): -inf, a term of 0
            np.divide(d, temperature, out=d)
        if wide is not None and wide.any():  # halved first, it may come back within range
            zz = z.T if axis == 0 else z
            pk = peak[None, :] if axis == 0 else peak[:, None]
            d[wide] = ((zz / 2.0 - pk / 2.0) / temperature * 2.0)[wide]
    with np.errstate(under="ignore"):  # a term below float64's range is 0, as it should be
        np.exp(d, out=d)
    np.subtract(d, top, out=d)  # the peak entries' terms, exactly 1, become exactly 0
    if axis == 0:
        # row after row, for any number of columns: NumPy sums a (K, 1) array pairwise
        # (contiguous along the axis), so a row scored alone got other last bits than in a
        # batch, where the K rows are added one after another
        rest = d[0].copy()
        for row in d[1:]:
            rest += row
    else:
        rest = d.sum(axis=1)
    if np.count_nonzero(top) != z.shape[0]:  # a row with a tied peak: count its ties back
        rest += np.count_nonzero(top, axis=axis) - 1
    return peak, rest


def _log1p(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """``log(1 + x)`` of ``x >= 0`` to about one unit in the last place, from NumPy's
    vectorised ``log`` (``np.log1p`` is not vectorised and took twice as long): with
    ``u = 1 + x`` rounded, ``log(u) - ((u - 1) - x) / u`` corrects the rounding of ``u`` to
    first order, and gives ``x`` itself where ``u`` rounds to 1."""
    u = 1.0 + x
    out = np.log(u)
    err = u - 1.0  # exact for 1 <= u < 2**53
    err -= x  # the rounding error of u, exact
    err /= u
    out -= err
    return out


def logsumexp_rows(z: NDArray[np.float64]) -> NDArray[np.float64]:
    """``log sum_k exp(z[i, k])`` of each row of a finite matrix with at least one column.

    Shifted by the row's largest entry, whose own term (exactly 1) is left out of the sum
    and added back by ``log1p``, so a row with one dominant entry keeps the small terms
    to full precision (as SciPy's ``logsumexp``, whose argument handling made ``Energy``
    and ``MSP`` take 6.2 ms a call on 10,000 x 10 logits here).

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.detectors._logits import logsumexp_rows
    >>> [round(float(v), 6) for v in logsumexp_rows(np.array([[0.0, 0.0], [1000.0, 0.0]]))]
    [0.693147, 1000.0]
    """
    peak, rest = _peak_and_rest(z)
    out = _log1p(rest)
    out += peak
    return out


def neg_max_softmax(logits: NDArray[np.float64], temperature: float) -> NDArray[np.float64]:
    """``-max_k softmax(logits / T)_k``, computed as ``-1 / sum_k exp(z_k - max z)``."""
    rest = _peak_and_rest(logits, temperature)[1]
    rest += 1.0
    return -1.0 / rest


def neg_energy(logits: NDArray[np.float64], temperature: float) -> NDArray[np.float64]:
    """The free energy ``-T logsumexp(logits / T)`` (higher = more OOD), as
    ``-(max + T log sum exp((logits - max) / T))``: finite wherever the energy is within
    float64 (beyond, with logits near the float maximum and a temperature near it too, it
    is refused in one line)."""
    with np.errstate(over="ignore"):
        if temperature == 1.0:
            out = logsumexp_rows(logits)
        else:
            peak, rest = _peak_and_rest(logits, temperature)
            out = _log1p(rest)
            out *= temperature
            out += peak
    if not np.all(np.isfinite(out)):
        raise ValueError(f"the free energy of these logits at temperature {temperature!r} is "
                         "beyond float64; scale the logits down or lower the temperature.")
    return np.negative(out, out=out)


def neg_max_logit(logits: NDArray[np.float64]) -> NDArray[np.float64]:
    """``-max_k logits_k`` of each row (the short rows reduced on a transposed copy)."""
    if logits.shape[1] <= _TRANSPOSE_UP_TO:
        return -np.ascontiguousarray(logits.T).max(axis=0)
    return -logits.max(axis=1)


@serializable("detector")
class MSP(Detector):
    """Maximum softmax probability (Hendrycks and Gimpel, 2017), negated.

    ``score = -max_k softmax(logits / T)_k``. Also the asymptotically best
    misclassification score of a calibrated classifier, hence the ``s_r`` of the
    double-score methods.

    Parameters
    ----------
    temperature : float > 0, default 1 (the paper's plain softmax)

    Examples
    --------
    >>> from abstain.detectors import MSP
    >>> MSP().score([[4.0, 0.0, 0.0], [1.0, 1.0, 1.0]]).round(4)
    array([-0.9647, -0.3333])
    """

    def __init__(self, temperature: float = 1.0) -> None:
        self.temperature = temperature

    _parameter_constraints = {"temperature": [Interval(float, 0, None, closed="neither")]}

    def score(self, X: ArrayLike) -> NDArray[np.float64]:
        """Scores of logits ``X``, shape (n, K) -> (n,)."""
        self._validate_params()
        return neg_max_softmax(self._inputs(X), float(self.temperature))


@serializable("detector")
class MaxLogit(Detector):
    """Maximum logit score, MLS (Hendrycks et al., 2022), negated: ``-max_k logits_k``.

    No parameters.

    Examples
    --------
    >>> from abstain.detectors import MaxLogit
    >>> MaxLogit().score([[4.0, 0.0], [1.0, 2.0]])
    array([-4., -2.])
    """

    def score(self, X: ArrayLike) -> NDArray[np.float64]:
        """Scores of logits ``X``, shape (n, K) -> (n,)."""
        return neg_max_logit(self._inputs(X))


@serializable("detector")
class Energy(Detector):
    """Free energy (Liu et al., 2020): ``score = -T logsumexp(logits / T)``.

    Parameters
    ----------
    temperature : float > 0, default 1 (the paper's choice)

    Examples
    --------
    >>> from abstain.detectors import Energy
    >>> Energy().score([[0.0, 0.0]]).round(6)
    array([-0.693147])
    """

    def __init__(self, temperature: float = 1.0) -> None:
        self.temperature = temperature

    _parameter_constraints = {"temperature": [Interval(float, 0, None, closed="neither")]}

    def score(self, X: ArrayLike) -> NDArray[np.float64]:
        """Scores of logits ``X``, shape (n, K) -> (n,)."""
        self._validate_params()
        return neg_energy(self._inputs(X), float(self.temperature))


@serializable("detector")
class ODIN(Detector):
    """ODIN (Liang et al., 2018): temperature-scaled MSP of a perturbed input, negated.

    ``score = -max_k softmax(f(x') / T)_k`` where ``x' = x - epsilon *
    sign(-grad_x log softmax(f(x) / T)_yhat)``. The perturbation needs the network's
    gradient: :meth:`score_inputs` takes the model and its inputs and applies this
    detector's ``temperature`` and ``epsilon`` (through :func:`abstain.torch.odin_logits`,
    extra ``torch``). :meth:`score` takes logits: given the logits of the perturbed inputs it
    is ODIN, given plain logits it is the temperature-scaled MSP (``epsilon`` is then not
    used).

    Parameters
    ----------
    temperature : float > 0, default 1000 (the paper's choice)
    epsilon : float >= 0, default 0.0014
        Perturbation size in the network's input units; the paper tunes it on
        validation data, 0.0014 is its most frequent value. Used by
        :meth:`score_inputs`.

    Examples
    --------
    >>> from abstain.detectors import ODIN
    >>> ODIN(temperature=1000.0).score([[4.0, 0.0], [1.0, 1.0]]).round(6)
    array([-0.501, -0.5  ])
    """

    def __init__(self, temperature: float = 1000.0, epsilon: float = 0.0014) -> None:
        self.temperature = temperature
        self.epsilon = epsilon

    _parameter_constraints = {"temperature": [Interval(float, 0, None, closed="neither")],
                              "epsilon": [Interval(float, 0, None, closed="left")]}

    def score(self, X: ArrayLike) -> NDArray[np.float64]:
        """Scores of (perturbed) logits ``X``, shape (n, K) -> (n,)."""
        self._validate_params()
        return neg_max_softmax(self._inputs(X), float(self.temperature))

    def score_inputs(self, model: Any, X: Any, *, batch_size: int = 256,
                     progress: bool | str = False) -> NDArray[np.float64]:
        """ODIN's score of the inputs ``X`` of a PyTorch ``model``: the input perturbation of
        size ``epsilon`` at temperature ``temperature``, then :meth:`score` of the logits.

        Needs the extra ``torch``; ``model``, ``X``, ``batch_size`` and ``progress`` are
        those of :func:`abstain.torch.odin_logits`. Returns shape (n,).
        """
        self._validate_params()
        require("torch", "torch", "ODIN.score_inputs")
        from ..torch import odin_logits  # the adapter, imported only when asked for

        logits = odin_logits(model, X, temperature=float(self.temperature),
                             epsilon=float(self.epsilon), batch_size=batch_size,
                             progress=progress)
        return self.score(logits)


@serializable("detector")
class GEN(Detector):
    """Generalised entropy, GEN (Liu, Lochman and Zach, 2023).

    ``score = sum over the top_m largest p_k of p_k^gamma (1 - p_k)^gamma`` with
    ``p = softmax(logits)``: larger for flatter predictions, so higher = more OOD.

    Parameters
    ----------
    gamma : float in (0, 1], default 0.1 (the paper's choice)
    top_m : int >= 1, default 100 (the paper's choice for 1000 classes); at most K is used

    Examples
    --------
    >>> from abstain.detectors import GEN
    >>> GEN(top_m=2).score([[5.0, 0.0, 0.0], [1.0, 1.0, 1.0]]).round(4)
    array([1.2536, 1.7207])
    """

    def __init__(self, gamma: float = 0.1, top_m: int = 100) -> None:
        self.gamma = gamma
        self.top_m = top_m

    _parameter_constraints = {"gamma": [Interval(float, 0, 1, closed="right")],
                              "top_m": [Interval(int, 1, None, closed="left")]}

    def score(self, X: ArrayLike) -> NDArray[np.float64]:
        """Scores of logits ``X``, shape (n, K) -> (n,).

        Each term is ``exp(gamma (log p_k + log(1 - p_k)))`` with the logarithms taken from
        the logits, not from the rounded ``p``: a row whose top probability rounds to 1
        keeps its ``1 - p`` (``rest / (1 + rest)``, ``rest`` the sum of the other terms),
        and a probability below the float range keeps its term."""
        self._validate_params()
        z = self._inputs(X)
        # terms below float64's range are 0 by design (whatever np.seterr says)
        with np.errstate(under="ignore"):
            return _gen(z, float(self.gamma), int(self.top_m))


def _gen(z: NDArray[np.float64], gamma: float, m: int) -> NDArray[np.float64]:
    """GEN's scores of logits ``z`` (see :meth:`GEN.score`)."""
    n, n_classes = z.shape
    rows = np.arange(n)
    top = z.argmax(axis=1)
    peak, rest = _peak_and_rest(z)  # rest: the sum of every term but one peak's
    with np.errstate(over="ignore"):  # a difference beyond float64 is -inf: a term of 0
        d = z - peak[:, None]
    # where rest is below the normal range its float sum lost digits: take its log from
    # the logits (the log-sum-exp of every entry but one peak)
    log_rest = np.log(rest, out=np.full(n, -np.inf), where=rest > 0)
    low = np.flatnonzero(rest < _TINY)
    if low.size:
        others = d[low]
        others[np.arange(low.size), top[low]] = -np.inf
        with np.errstate(divide="ignore"):
            log_rest[low] = special.logsumexp(others, axis=1)
    log_total = np.logaddexp(0.0, log_rest)  # log(1 + rest)
    if m < n_classes:  # the top_m largest of each row (the peak among them)
        keep = np.argpartition(-d, m - 1, axis=1)[:, :m]
        d = np.take_along_axis(d, keep, axis=1)
        at_top = keep == top[:, None]
    else:
        at_top = np.zeros(d.shape, dtype=bool)
        at_top[rows, top] = True
    d -= log_total[:, None]  # log p
    p = np.exp(d)
    term = 1.0 - p  # at most 1/2 but at the peak, whose 1 - p is rest / (1 + rest)
    r, c = np.nonzero(at_top)
    log_q = log_rest[r] - log_total[r]
    term[r, c] = np.exp(log_q)
    term *= p
    # a p (or the peak's 1 - p) below the normal range: the term from the logarithms
    small = d < _LOG_TINY
    log_pq = np.log1p(-p[small])
    log_pq += d[small]
    term[small] = np.exp(log_pq * gamma)
    tiny = log_q < _LOG_TINY
    r, c = r[tiny], c[tiny]
    small[r, c] = True
    term[r, c] = np.exp((d[r, c] + log_q[tiny]) * gamma)
    np.power(term, gamma, out=term, where=~small)
    return term.sum(axis=1)


def neg_log_share(own: NDArray[np.float64],
                  others: NDArray[np.float64]) -> NDArray[np.float64]:
    """``-log(sum exp(own) / (sum exp(own) + sum exp(others)))`` of each row, from the
    difference of the two log-sum-exps taken apart from their maxima: the difference of
    the two whole log-sum-exps cancelled to 0 for a confident head (``[50, 0]``: 1.9e-22)
    and for logits of 1e17 and more (log 2 for two equal ones)."""
    if others.shape[1] == 0:  # one shift: its share is 1
        return np.zeros(own.shape[0])
    m_own, m_oth = own.max(axis=1), others.max(axis=1)
    with np.errstate(under="ignore"):  # terms below float64's range are 0
        s_own = np.exp(own - m_own[:, None]).sum(axis=1)
        s_oth = np.exp(others - m_oth[:, None]).sum(axis=1)
    with np.errstate(over="ignore"):
        d = (m_oth - m_own) + (np.log(s_oth) - np.log(s_own))
    return np.logaddexp(0.0, d)  # type: ignore[no-any-return]
