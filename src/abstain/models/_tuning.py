"""Hyperparameters of a detector chosen on validation data: by AUROC against OOD validation
outputs, or, without OOD data, against proxy outliers (classes of the training outputs held
out in turn) or against in-distribution outputs with shuffled columns."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._core.base import derived_seeds
from .._core.validation import Options, check_random_state, plain, validate_params
from ..detectors import Detector, LeaveClassesOut
from ..detectors._base import pick_output
from ..detectors._proxy import like_frame, shuffle_columns, shuffle_table
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
        The criterion of each candidate: a flat row of values is a criterion that cannot
        tell the candidates apart (``tune_detector`` warns then).
    criterion : str
        ``"auroc"`` (ID against OOD validation outputs), ``"held_out_classes"`` (proxy
        inliers against classes held out of the training outputs) or ``"shuffled"`` (ID
        against the same ID outputs with every column shuffled).
    flat : bool
        Every candidate's criterion within ``FLAT_TOLERANCE`` of the best: the choice is
        then the detector's own parameters where they are a candidate.
    """

    detector: Any
    best_params: dict[str, Any]
    best_score: float
    params: list[dict[str, Any]]
    scores: NDArray[np.float64]
    criterion: str
    flat: bool = False


#: Criterion values this close to the best count as a tie: a criterion that spans less
#: over every candidate cannot tell them apart (an AUROC difference of 0.001).
FLAT_TOLERANCE = 1e-3

#: The criteria of :func:`tune_detector`; ``"auto"`` picks one from the data given.
CRITERIA = ("auto", "auroc", "held_out_classes", "shuffled")


def _candidates(grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]],
                names: list[str]) -> list[dict[str, Any]]:
    if isinstance(grid, Mapping):
        # a 1-d NumPy array of values is a list of them (as scikit-learn's grids take it)
        grid = {key: values.tolist() if isinstance(values, np.ndarray) and values.ndim == 1
                else values for key, values in grid.items()}
        for key, values in grid.items():
            if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
                raise ValueError(f"grid[{key!r}] must be a non-empty list (or 1-d array) of "
                                 f"values; got {type(values).__name__} {plain(values)}.")
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
    """Each column (after flattening each row) permuted across rows, apart
    (:func:`abstain.detectors.shuffled_columns`)."""
    return shuffle_columns(shuffle_table(values, name), rng)


def _shuffled_outputs(outputs: Any, rng: np.random.Generator, fields: tuple[str, ...]) -> Any:
    """The shuffled rows of each field (a frame's as a frame of its columns)."""
    if fields == ("inputs",):
        return _shuffle_columns(outputs, rng, "id_outputs")
    return {f: like_frame(x, _shuffle_columns(x, rng, f"id_outputs.{f}"))
            for f in fields for x in (pick_output(outputs, f),)}


@validate_params({"criterion": [Options(CRITERIA)]})
def tune_detector(detector: Detector, grid: Mapping[str, Sequence[Any]] |
                  Sequence[Mapping[str, Any]], id_outputs: Any, ood_outputs: Any = None, *,
                  train_outputs: Any = None, y: ArrayLike | None = None,
                  weight: ArrayLike | None = None, bias: ArrayLike | None = None,
                  model: Any = None, criterion: str = "auto",
                  random_state: Any = None) -> DetectorTuning:
    """Choose a detector's hyperparameters (ODIN's temperature and epsilon, KNN's k, ViM's
    dim, ...) on validation data.

    Every candidate of ``grid`` is a copy of ``detector`` with those parameters and is
    scored by a criterion, higher is better:

    - ``"auroc"`` (with ``ood_outputs``, OOD validation data): each candidate fitted on
      ``train_outputs`` (with ``y``, ``weight``, ``bias`` where it needs them); the AUROC of
      its scores of ``id_outputs`` (ID) against those of ``ood_outputs`` (OOD);
    - ``"held_out_classes"`` (proxy outliers; needs ``train_outputs`` and their labels ``y``,
      at least 3 classes): the training rows are split by
      :class:`~abstain.detectors.LeaveClassesOut` (one class held out at a time, at most 5
      splits, seeded by ``random_state``); per split, the candidate is fitted on part of
      the kept classes' rows, with the outputs restricted to those classes
      (:func:`~abstain.detectors.restrict_outputs`: logit columns, last-layer rows; labels
      are the logit columns' indices), and scored on the other kept rows (proxy inliers)
      against the held-out class's rows (proxy outliers); the criterion is the mean AUROC
      over the splits. ``id_outputs`` are not used. The network saw every class, so the
      proxy ranks candidates; it does not predict their AUROC on new outliers;
    - ``"shuffled"`` (no labels): the AUROC of ``id_outputs`` against a synthetic outlier
      set made from them, every column (of the logits, of the features, of the flattened
      inputs) permuted across rows independently (seeded by ``random_state``). It keeps
      each column's ID distribution and destroys the dependence between columns, so it
      rewards a detector for the structure of the ID data, whatever the outliers are:
      the weakest of the three.

    ``criterion="auto"`` (the default) takes ``"auroc"`` when ``ood_outputs`` are given,
    else ``"held_out_classes"`` when ``train_outputs`` and ``y`` are (and no ``model``), else
    ``"shuffled"``.

    **Tie rule.** Candidates whose criterion is within ``FLAT_TOLERANCE`` (0.001) of the
    best tie; among them the detector's own parameters win (the candidate equal to
    ``detector.get_params()`` on the grid's names), else the first in grid order. When
    every candidate ties the criterion cannot tell them apart: ``flat`` is True and a
    ``UserWarning`` says so (for example KNN's ``k`` on features where every proxy
    outlier is far from every inlier).

    ``random_state`` seeds the splits and the shuffles, and a detector that draws (a
    ``KNN`` with ``bank_size``) and has no seed of its own: every candidate gets the same
    seed from it, so one ``random_state`` gives one result.

    ``id_outputs`` and ``ood_outputs`` are what the detector scores: a dict or object with
    ``logits`` / ``features`` (as :meth:`Detector.score_outputs` reads them), or, with
    ``model`` given, the model's inputs, scored by ``detector.score_inputs(model, X)``
    (ODIN's input perturbation, extra ``torch``; the validation data must not be the
    training data). The detector returned is fitted on every row of ``train_outputs``.

    Returns
    -------
    DetectorTuning

    Examples
    --------
    >>> import numpy as np
    >>> from abstain.detectors import KNN
    >>> from abstain.models import tune_detector
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 4, 600)
    >>> F = np.eye(4)[y] * 3 + rng.normal(size=(600, 4))        # four classes
    >>> tuned = tune_detector(KNN(normalize=False), {"k": [1, 5, 50]}, {"features": F[400:]},
    ...                       train_outputs={"features": F[:400]}, y=y[:400], random_state=0)
    >>> tuned.criterion, tuned.best_params, tuned.scores.round(3).tolist()
    ('held_out_classes', {'k': 5}, [0.952, 0.974, 0.842])
    >>> tuned.detector.k
    5

    Without labels, the shuffled columns:

    >>> tune_detector(KNN(normalize=False), {"k": [1, 5, 50]}, {"features": F[400:]},
    ...               train_outputs={"features": F[:400]}, random_state=0).criterion
    'shuffled'
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
    crit = _criterion(str(criterion), ood_outputs, train_outputs, y, model)
    rng = np.random.default_rng(random_state)

    # a detector that draws (a KNN bank) and has no seed of its own: every candidate gets
    # one seed from random_state, so the candidates differ in their parameters only
    own_seed = (derived_seeds(random_state, 1) if detector.get_params(deep=False).get(
        "random_state", 0) is None else None)

    def make(cand: dict[str, Any]) -> Detector:
        seeded = {"random_state": own_seed[0]} if own_seed is not None else {}
        return type(detector)(**{**detector.get_params(deep=False), **seeded, **cand})

    def fit(det: Detector, outputs: Any, labels: Any, w: Any, b: Any) -> Detector:
        if fitted_kind:
            det.fit(pick_output(outputs, det.inputs), labels, weight=w, bias=b)
        return det

    def pair_auroc(s_id: NDArray[np.float64], s_out: NDArray[np.float64]) -> float:
        is_out = np.r_[np.zeros(s_id.size, bool), np.ones(s_out.size, bool)]
        return float(auroc(is_out, np.r_[s_id, s_out]))

    def split_auroc(c: dict[str, Any], t: int, task: tuple[Any, ...]) -> float:
        f, lab, w, b, i, out = task
        try:
            det = fit(make(c), f, lab, w, b)
        except ValueError as exc:  # the split's fitting rows: fewer than train_outputs'
            raise ValueError(f"candidate {c} cannot be fitted on held-out-class split {t} "
                             f"({len(lab)} fitting rows of its kept classes): {exc}") from None
        return pair_auroc(det.score_outputs(i), det.score_outputs(out))

    if crit == "held_out_classes":
        tasks = _class_tasks(train_outputs, y, weight, bias, rng)
        scores = np.array([np.mean([split_auroc(c, t, task) for t, task in enumerate(tasks)])
                           for c in cands])
    else:
        other = (ood_outputs if crit == "auroc" else _shuffled_outputs(
            id_outputs, rng, ("inputs",) if model is not None else (detector.inputs,)))
        values = []
        for c in cands:
            det: Any = fit(make(c), train_outputs, y, weight, bias)
            if model is not None:  # a detector with score_inputs (checked above)
                values.append(pair_auroc(det.score_inputs(model, id_outputs),
                                         det.score_inputs(model, other)))
            else:
                values.append(pair_auroc(det.score_outputs(id_outputs),
                                         det.score_outputs(other)))
        scores = np.array(values)
    tied = np.flatnonzero(scores >= scores.max() - FLAT_TOLERANCE)
    own = detector.get_params(deep=False)
    default = [i for i in tied if all(own[k] == v for k, v in cands[i].items())]
    best = int(default[0] if default else tied[0])
    flat = bool(tied.size == len(cands) and len(cands) > 1)
    if flat:
        warnings.warn(
            f"tune_detector: the {crit!r} criterion cannot tell the candidates apart (every "
            f"value within {FLAT_TOLERANCE:g} of {scores.max():.4f}); kept "
            f"{'the detector' + chr(39) + 's own parameters' if default else 'the first'}: "
            f"{cands[best]}.", UserWarning, stacklevel=3)  # past validate_params
    chosen = fit(make(cands[best]), train_outputs, y, weight, bias)
    return DetectorTuning(chosen, cands[best], float(scores[best]), cands, scores, crit, flat)


def _criterion(criterion: str, ood_outputs: Any, train_outputs: Any, y: Any,
               model: Any) -> str:
    """The criterion that ``"auto"`` stands for, or the one named, checked against the data."""
    has_labels = train_outputs is not None and y is not None
    if criterion == "auto":
        if ood_outputs is not None:
            return "auroc"
        return "held_out_classes" if has_labels and model is None else "shuffled"
    if criterion == "auroc" and ood_outputs is None:
        raise ValueError("criterion 'auroc' needs ood_outputs (OOD validation data); got None.")
    if criterion == "held_out_classes" and (not has_labels or model is not None):
        raise ValueError("criterion 'held_out_classes' needs train_outputs and their labels y, "
                         "and no model (the held-out classes restrict the network's outputs, "
                         "not a model's inputs).")
    if criterion != "auroc" and ood_outputs is not None:
        raise ValueError(f"ood_outputs are used only by criterion 'auroc'; got criterion "
                         f"{criterion!r}.")
    return criterion


def _class_tasks(outputs: Any, y: Any, weight: Any, bias: Any,
                 rng: np.random.Generator) -> list[tuple[Any, ...]]:
    """Per split of held-out classes: (fit outputs, fit labels, weight, bias, proxy inlier
    outputs, proxy outlier outputs), restricted to the kept classes."""
    return [tuple(p)[:6] for p in LeaveClassesOut(n_splits=5, random_state=rng).split_outputs(
        outputs, y, weight=weight, bias=bias)]
