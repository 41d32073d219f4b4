"""A misclassification score and an OOD score combined by an OOD reject model."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.base import ParamsMixin
from .._core.exact import exact_deviation
from .._core.serialize import Array, Field, Nested, check_fitted_copy, dumps, serializable
from .._core.validation import InstanceOf
from ..detectors._base import Detector, pick_output
from ..detectors._features import KNN
from ..detectors._logits import MSP


@serializable("double-score")
class DoubleScoreDetector(ParamsMixin):
    """A double-score selector: a misclassification score with an OOD score.

    Section 4 of Franc, Prusa and Paplham (2023): the selector thresholds
    ``s_r(x) + mu * s_g(x)`` (more precisely ``cos(a) s_r + sin(a) s_g``), where ``s_r``
    detects misclassified ID inputs (default :class:`MSP`) and ``s_g`` detects OOD
    inputs (default :class:`KNN`); the paper's KNN+MSP and ViM+MSP. The direction and
    threshold are tuned post hoc by a reject model of :mod:`abstain.models` on a
    validation sample of ID and OOD inputs.

    Each score is divided by its standard deviation on the ID data given to :meth:`fit`
    before the two are combined. This changes no ranking that a direction can express;
    it only makes the grid of directions (``search="grid"``) equally fine on both scores.
    The deviation comes from exact sums rounded once, so the fitting rows in any order give
    the same ``scale_`` to the last bit.

    Parameters
    ----------
    misclassification : Detector or None
        ``s_r``; None means ``MSP()``.
    ood : Detector or None
        ``s_g``; None means ``KNN()``.
    selector : an OOD reject model of abstain.models or None
        Fitted (a clone of it) by :meth:`tune`; None means ``BoundedTPRFPR()``.

    Attributes
    ----------
    misclassification_, ood_ : Detector
        The fitted detectors.
    scale_ : ndarray (2,)
        Standard deviations of the two scores on the fitting data.
    selector_ : the tuned reject model (after :meth:`tune`)

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.models import DoubleScoreDetector
    >>> from abstain.detectors import MSP, KNN
    >>> from abstain.models import BoundedTPRFPR
    >>> rng = np.random.default_rng(0)
    >>> W = np.eye(2)
    >>> def outputs(features):
    ...     return {"features": features, "logits": features @ W.T}
    >>> train = rng.normal(size=(300, 2)) + [2.0, 0.0]
    >>> det = DoubleScoreDetector(MSP(), KNN(k=5), BoundedTPRFPR(tpr=0.8, fpr=0.2))
    >>> det = det.fit(outputs(train))
    >>> val = np.vstack([rng.normal(size=(200, 2)) + [2.0, 0.0],
    ...                  rng.normal(size=(200, 2)) * 0.3 + [-3.0, 4.0]])
    >>> is_ood = np.repeat([False, True], 200)
    >>> losses = (val[:, 1] > val[:, 0]).astype(float)   # the ID classifier's 0/1 loss
    >>> det = det.tune(outputs(val), is_ood, losses)
    >>> det.selector_.feasible_, det.selector_.fpr_ <= 0.2, det.selector_.tpr_ >= 0.8
    (True, True, True)
    >>> det.accept(outputs(np.array([[2.0, 0.0], [-3.0, 4.0]]))).tolist()
    [True, False]
    """

    def __init__(self, misclassification: Detector | None = None, ood: Detector | None = None,
                 selector: Any = None) -> None:
        self.misclassification = misclassification
        self.ood = ood
        self.selector = selector

    #: selector: an OOD rule of abstain.models, checked in ``_validate_params``.
    _parameter_constraints = {
        "misclassification": [InstanceOf(Detector, "a detector of abstain.detectors or None"),
                              None],
        "ood": [InstanceOf(Detector, "a detector of abstain.detectors or None"), None]}

    def _validate_params(self) -> None:
        from ._ood import BoundedPrecisionRecall, BoundedTPRFPR, CostBasedOOD

        super()._validate_params()
        if self.selector is not None and not isinstance(
                self.selector, (BoundedTPRFPR, BoundedPrecisionRecall, CostBasedOOD)):
            raise ValueError("selector must be an OOD reject model of abstain.models or None; got "
                             f"{type(self.selector).__name__}.")

    def fit(self, outputs: Any, labels: ArrayLike | None = None, *,
            weight: ArrayLike | None = None, bias: ArrayLike | None = None
            ) -> DoubleScoreDetector:
        """Fit both detectors on the ID training outputs (``logits`` and/or ``features``).

        ``outputs`` is an object with ``logits`` / ``features`` attributes (such as
        :func:`abstain.torch.extract`'s result) or a dict with those keys; each detector
        reads the one it needs.
        """
        self._validate_params()
        self.__dict__.pop("selector_", None)  # tuned on the previous fit's scores: tune again
        r = MSP() if self.misclassification is None else self.misclassification
        g = KNN() if self.ood is None else self.ood
        self.misclassification_ = copy.deepcopy(r).fit(pick_output(outputs, r.inputs), labels,
                                                        weight=weight, bias=bias)
        self.ood_ = copy.deepcopy(g).fit(pick_output(outputs, g.inputs), labels,
                                         weight=weight, bias=bias)
        raw = self._raw(outputs)
        # from exact sums: the fitting rows in any order give the same scales to the last bit
        scale = np.array([exact_deviation(raw[:, j]) for j in range(2)])
        self.scale_ = np.where(scale > 0, scale, 1.0)
        return self

    def _raw(self, outputs: Any) -> NDArray[np.float64]:
        s_r = self.misclassification_.score_outputs(outputs)
        s_g = self.ood_.score_outputs(outputs)
        if s_r.shape != s_g.shape:
            raise ValueError(f"the two scores have {s_r.shape[0]} and {s_g.shape[0]} rows; "
                             "logits and features must describe the same inputs.")
        return np.stack([s_r, s_g], axis=1)

    def scores(self, outputs: Any) -> NDArray[np.float64]:
        """The two base scores before they are combined: columns ``(s_r, s_g)``, shape (n, 2).

        ``s_r`` of the misclassification detector and ``s_g`` of the OOD detector, each
        divided by ``scale_``; higher = reject first. This is what :meth:`tune` fits the
        selector on; the combined uncertainty is :meth:`score`.
        """
        self._check_fitted("scale_")
        return self._raw(outputs) / self.scale_

    def tune(self, outputs: Any, is_ood: ArrayLike, losses: ArrayLike, *,
             sample_weight: ArrayLike | None = None) -> DoubleScoreDetector:
        """Fit (a copy of) the selector on a validation sample of ID and OOD outputs.

        ``losses`` are the classifier's losses on the ID rows (OOD entries ignored).
        """
        from ._ood import BoundedTPRFPR

        sel = BoundedTPRFPR() if self.selector is None else copy.deepcopy(self.selector)
        self.selector_ = sel.fit(self.scores(outputs), is_ood, losses,
                                 sample_weight=sample_weight)
        return self

    def score(self, outputs: Any) -> NDArray[np.float64]:
        """The tuned combined score ``cos(a) s_r + sin(a) s_g`` (scaled), shape (n,)."""
        self._check_fitted("selector_")
        return np.asarray(self.selector_.score(self.scores(outputs)))

    def accept_proba(self, outputs: Any) -> NDArray[np.float64]:
        """Acceptance probability of the tuned selector, shape (n,)."""
        self._check_fitted("selector_")
        return np.asarray(self.selector_.accept_proba(self.scores(outputs)))

    def accept(self, outputs: Any) -> NDArray[np.bool_]:
        """Accept (True) or reject; ties drawn with the selector's ``random_state``."""
        self._check_fitted("selector_")
        return np.asarray(self.selector_.accept(self.scores(outputs)))

    def to_json(self) -> str:
        """Both fitted detectors, the scales and the tuned selector as plain JSON.

        Load with :func:`abstain.load_json`.
        """
        return dumps(self)

    _FIELDS: dict[str, Field] = {
        "misclassification_": Nested(family="detector"),
        "ood_": Nested(family="detector"),
        "scale_": Array((2,), positive=True),
        "selector_": Nested(family="ood"),
    }

    def _after_load(self) -> None:
        from ._ood import BoundedTPRFPR

        # each fitted part is its parameter (or the default) fitted, as fit and tune make it
        for where, fitted, given, what in (
                ("misclassification_", self.misclassification_, self.misclassification or MSP(),
                 "params.misclassification"),
                ("ood_", self.ood_, self.ood or KNN(), "params.ood"),
                ("selector_", self.selector_, self.selector or BoundedTPRFPR(),
                 "params.selector")):
            check_fitted_copy(fitted, given, f"fitted.{where}", what)
        if self.selector_.n_scores_ != 2:
            raise ValueError("fitted.selector_ must be tuned on the two scores (n_scores_ = 2); "
                             f"got n_scores_ = {self.selector_.n_scores_}.")
