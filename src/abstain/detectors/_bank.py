"""A named list of detectors fitted together: one call from a network's outputs to a matrix
of base scores, one column per detector."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.base import ParamsMixin
from .._core.serialize import Nested, Seq, Text, check_fitted_copy, dumps, serializable
from .._core.validation import plain
from ._base import Detector, pick_output
from ._registry import DETECTORS


def _default_names(detectors: list[Detector]) -> list[str]:
    """The registry's short name of each detector, numbered from the second repeat on."""
    keys = {cls: key for key, cls in DETECTORS.items()}
    out: list[str] = []
    for det in detectors:
        base = keys.get(type(det), type(det).__name__.lower())
        name, i = base, 2
        while name in out:
            name, i = f"{base}_{i}", i + 1
        out.append(name)
    return out


@serializable("detector")
class DetectorBank(ParamsMixin):
    """Several detectors fitted on the same training outputs, scored into one matrix.

    ``fit(outputs, y, weight=, bias=)`` fits a copy of each detector on the input it takes
    (``outputs.logits`` or ``outputs.features``, or those keys of a dict, e.g. from
    :func:`abstain.torch.extract`); ``score(outputs)`` returns an (n, m) matrix with one
    column per detector, in the order given, each higher = more OOD. The matrix is what
    :class:`abstain.combine.ScoreCombiner` and :class:`abstain.combine.BankDetector` take.

    Parameters
    ----------
    detectors : list of Detector (required; None only as the unset default)
        Unfitted or fitted; ``fit`` fits copies (``type(d)(**d.get_params())``) and leaves
        these unchanged.
    names : list of str or None, default None
        One distinct name per detector; None: the short names of
        :data:`abstain.detectors.DETECTORS` (``"knn"``, ``"msp"``, ...), a repeat numbered
        ``"knn_2"``.

    Attributes
    ----------
    detectors_ : list of Detector
        The fitted copies.
    names_ : list of str
        The column names of :meth:`score`.

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.detectors import KNN, MSP, DetectorBank
    >>> rng = np.random.default_rng(0)
    >>> train = {"logits": rng.normal(size=(50, 3)), "features": rng.normal(size=(50, 4))}
    >>> bank = DetectorBank([MSP(), KNN(k=5)]).fit(train)
    >>> bank.names_, bank.score(train).shape
    (['msp', 'knn'], (50, 2))
    """

    _FIELDS = {
        "detectors_": Seq(Nested(family="detector"), length="m", min_length=1),
        "names_": Seq(Text(), length="m", min_length=1),
    }

    def __init__(self, detectors: list[Detector] | None = None,
                 names: list[str] | None = None) -> None:
        self.detectors = detectors
        self.names = names

    def _validate_params(self) -> None:
        dets: Any = self.detectors
        if not isinstance(dets, (list, tuple)) or not dets:
            raise ValueError(f"detectors must be a non-empty list of detectors; got "
                             f"{type(dets).__name__}.")
        for i, d in enumerate(dets):
            if not isinstance(d, Detector):
                raise ValueError(f"detectors[{i}] must be a detector of abstain.detectors; got "
                                 f"{type(d).__name__}.")
        if self.names is not None:
            names = self.names
            if (not isinstance(names, (list, tuple)) or len(names) != len(dets)
                    or not all(isinstance(n, str) and n for n in names)):
                raise ValueError(f"names must be a list of {len(dets)} non-empty strings, one "
                                 f"per detector; got {plain(names)}.")
            if len(set(names)) != len(names):
                raise ValueError(f"names must be distinct; got {plain(list(names))}.")

    def _after_load(self) -> None:
        n = len(self.detectors or [])
        if len(self.detectors_) != n:
            raise ValueError(f"fitted.detectors_ must hold one detector per params.detectors "
                             f"({n}); got {len(self.detectors_)}.")
        for i, (det, fitted) in enumerate(zip(self.detectors or [], self.detectors_,
                                              strict=True)):
            check_fitted_copy(fitted, det, f"fitted.detectors_[{i}]", f"params.detectors[{i}]")
        names = (list(self.names) if self.names is not None
                 else _default_names(list(self.detectors or [])))
        if list(self.names_) != names:
            raise ValueError(f"fitted.names_ must be {plain(names)} (params.names, or the "
                             f"detectors' names); got {plain(list(self.names_))}.")

    def fit(self, outputs: Any, y: ArrayLike | None = None, *, weight: ArrayLike | None = None,
            bias: ArrayLike | None = None) -> DetectorBank:
        """Fit a copy of every detector on in-distribution training ``outputs``.

        ``y`` (class labels) is passed to every detector (Mahalanobis needs it), ``weight``
        and ``bias`` (the last linear layer) too (ReAct and ViM need them).
        """
        self._validate_params()
        detectors = list(self.detectors or [])
        fitted = []
        for det in detectors:
            copy = type(det)(**det.get_params(deep=False))
            fitted.append(copy.fit(pick_output(outputs, copy.inputs), y, weight=weight,
                                   bias=bias))
        self.detectors_ = fitted
        self.names_ = (list(self.names) if self.names is not None
                       else _default_names(detectors))
        return self

    def score(self, outputs: Any) -> NDArray[np.float64]:
        """Scores of ``outputs``: shape (n, m), column ``j`` from ``detectors_[j]``."""
        self._check_fitted("detectors_")
        cols = [d.score_outputs(outputs) for d in self.detectors_]
        n = {c.shape[0] for c in cols}
        if len(n) != 1:
            raise ValueError(f"outputs.logits and outputs.features must have the same number "
                             f"of rows; got {sorted(n)}.")
        return np.column_stack(cols)

    def score_outputs(self, outputs: Any) -> NDArray[np.float64]:
        """The same as :meth:`score` (the name every detector uses for outputs)."""
        return self.score(outputs)

    def to_json(self) -> str:
        """Parameters and fitted detectors as plain JSON; load with :func:`abstain.load_json`."""
        return dumps(self)
