"""Hyperparameters of a detector chosen on validation data: by AUROC against OOD validation
outputs, or, without OOD data, against in-distribution outputs with shuffled columns."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.validation import as_real_array, check_random_state, plain
from ..detectors import Detector
from ..detectors._base import pick_output
from ..metrics import auroc

__all__ = ["DetectorTuning", "tune_detector"]


class DetectorTuning(NamedTuple):
    """What :func:`tune_detector` returns.

    Attributes
    ----------
    detector : Detector
        A new detector with the best parameters, fitted on ``train_outputs`` (a logit
        detector needs no fitting).
    best_params : dict
    best_score : float
        The criterion of ``best_params`` (higher is better).
    params : list of dict
        Every candidate, in grid order.
    scores : ndarray of shape (n_candidates,)
        The criterion of each candidate.
    criterion : str
        ``"auroc"`` (ID against OOD validation outputs) or ``"shuffled"`` (ID against the
        same ID outputs with every column shuffled).
    """

    detector: Any
    best_params: dict[str, Any]
    best_score: float
    params: list[dict[str, Any]]
    scores: NDArray[np.float64]
    criterion: str


def _candidates(grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]],
                names: list[str]) -> list[dict[str, Any]]:
    if isinstance(grid, Mapping):
        for key, values in grid.items():
            if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
                raise ValueError(f"grid[{key!r}] must be a non-empty list of values; got "
                                 f"{plain(values)}.")
        out = [dict(zip(grid, combo, strict=True)) for combo in itertools.product(*grid.values())]
    elif isinstance(grid, Sequence) and grid and all(isinstance(g, Mapping) for g in grid):
        out = [dict(g) for g in grid]
    else:
        raise ValueError("grid must be a dict of parameter -> list of values or a non-empty list "
                         f"of parameter dicts; got {type(grid).__name__}.")
    for cand in out:
        for key in cand:
            if key not in names:
                raise ValueError(f"grid names {key!r}, which is not a parameter of the detector; "
                                 f"its parameters are {', '.join(names) or 'none'}.")
    return out


def _shuffle_columns(values: Any, rng: np.random.Generator, name: str) -> NDArray[np.float64]:
    """Each column (after flattening each row) permuted across rows, independently."""
    arr = as_real_array(np.asarray(values), name)
    if arr.ndim < 2 or arr.shape[0] < 2:
        raise ValueError(f"{name} must have at least 2 rows of at least one column to shuffle; "
                         f"got shape {arr.shape}.")
    flat = arr.reshape(arr.shape[0], -1)
    keys = rng.random(flat.shape)
    out = np.take_along_axis(flat, np.argsort(keys, axis=0), axis=0)
    return out.reshape(arr.shape)


def _shuffled_outputs(outputs: Any, rng: np.random.Generator, fields: tuple[str, ...]) -> Any:
    if fields == ("inputs",):
        return _shuffle_columns(outputs, rng, "id_outputs")
    return {f: _shuffle_columns(pick_output(outputs, f), rng, f"id_outputs.{f}")
            for f in fields}


def tune_detector(detector: Detector, grid: Mapping[str, Sequence[Any]] |
                  Sequence[Mapping[str, Any]], id_outputs: Any, ood_outputs: Any = None, *,
                  train_outputs: Any = None, y: ArrayLike | None = None,
                  weight: ArrayLike | None = None, bias: ArrayLike | None = None,
                  model: Any = None, random_state: Any = None) -> DetectorTuning:
    """Choose a detector's hyperparameters (ODIN's temperature and epsilon, KNN's k, ViM's
    dim, ...) on validation data.

    Every candidate of ``grid`` is a copy of ``detector`` with those parameters, fitted on
    ``train_outputs`` (with ``y``, ``weight``, ``bias`` where it needs them) and scored on
    the validation outputs. The criterion, higher is better, ties to the first candidate in
    grid order:

    - with ``ood_outputs`` (OOD validation data): ``"auroc"``, the AUROC of the scores of
      ``id_outputs`` (ID) against those of ``ood_outputs`` (OOD);
    - without: ``"shuffled"``, the AUROC of ``id_outputs`` against a synthetic outlier set
      made from them: every column (of the logits, of the features, of the flattened
      inputs) permuted across rows independently (seeded by ``random_state``). It keeps
      each column's ID distribution and destroys the dependence between columns, so it
      rewards a detector for the structure of the ID data; it is a proxy, and the choice
      it makes for OOD data unlike shuffled ID data is not guaranteed.

    ``id_outputs`` and ``ood_outputs`` are what the detector scores: a dict or object with
    ``logits`` / ``features`` (as :meth:`Detector.score_outputs` reads them), or, with
    ``model`` given, the model's inputs, scored by ``detector.score_inputs(model, X)``
    (ODIN's input perturbation, extra ``torch``; the validation data must not be the
    training data).

    Returns
    -------
    DetectorTuning

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.detectors import KNN
    >>> from abstain.models import tune_detector
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(600, 1))
    >>> F = np.hstack([z, z + 0.1 * rng.normal(size=(600, 1)), rng.normal(size=(600, 2))])
    >>> tuned = tune_detector(KNN(normalize=False), {"k": [1, 5, 50]}, {"features": F[400:]},
    ...                       train_outputs={"features": F[:400]}, random_state=0)
    >>> tuned.criterion, tuned.best_params, tuned.scores.round(3).tolist()
    ('shuffled', {'k': 1}, [0.845, 0.781, 0.635])
    >>> tuned.detector.k
    1
    """
    if not isinstance(detector, Detector):
        raise ValueError("detector must be a detector of abstain.detectors; got "
                         f"{type(detector).__name__}.")
    check_random_state("random_state", random_state)
    names = list(detector.get_params(deep=False))
    cands = _candidates(grid, names)
    if model is not None and not hasattr(detector, "score_inputs"):
        raise ValueError(f"model is used only by detectors that perturb inputs (ODIN); got "
                         f"{type(detector).__name__}.")
    fitted_kind = detector.inputs == "features"
    if fitted_kind and train_outputs is None:
        raise ValueError(f"{type(detector).__name__} is fitted on training data: pass "
                         "train_outputs= (ID outputs other than the validation outputs).")
    if ood_outputs is None:
        fields = ("inputs",) if model is not None else (detector.inputs,)
        rng = np.random.default_rng(random_state)
        other, criterion = _shuffled_outputs(id_outputs, rng, fields), "shuffled"
    else:
        other, criterion = ood_outputs, "auroc"

    def run(cand: dict[str, Any]) -> tuple[Detector, float]:
        det = type(detector)(**{**detector.get_params(deep=False), **cand})
        if fitted_kind:
            det.fit(pick_output(train_outputs, det.inputs), y, weight=weight, bias=bias)
        if model is not None:
            odin: Any = det  # a detector with score_inputs (checked above)
            s_id, s_out = odin.score_inputs(model, id_outputs), odin.score_inputs(model, other)
        else:
            s_id, s_out = det.score_outputs(id_outputs), det.score_outputs(other)
        is_out = np.r_[np.zeros(s_id.size, bool), np.ones(s_out.size, bool)]
        return det, float(auroc(is_out, np.r_[s_id, s_out]))

    results = [run(c) for c in cands]
    scores = np.array([r[1] for r in results])
    best = int(np.argmax(scores))
    return DetectorTuning(results[best][0], cands[best], float(scores[best]), cands, scores,
                          criterion)
