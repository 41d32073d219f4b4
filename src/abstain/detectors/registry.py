"""Every detector by name, and the loader of detector files."""

from __future__ import annotations

import json
from typing import Any

from .._core.serialize import DETECTOR_FORMAT as _FORMAT
from .._core.serialize import decode_array
from .base import Detector
from .features import KNN, Mahalanobis, ReAct, ViM
from .logits import GEN, MSP, ODIN, Energy, MaxLogit

DETECTORS: dict[str, type[Detector]] = {
    "msp": MSP,
    "mls": MaxLogit,
    "energy": Energy,
    "odin": ODIN,
    "gen": GEN,
    "react": ReAct,
    "knn": KNN,
    "vim": ViM,
    "mahalanobis": Mahalanobis,
}


def make_detector(name: str, **params: Any) -> Detector:
    """A detector by its short name (a key of :data:`DETECTORS`), e.g. ``"knn"``.

    >>> from abstain.detectors import make_detector
    >>> make_detector("knn", k=10)
    KNN(k=10, normalize=True, block=1024)
    """
    key = str(name).lower()
    if key not in DETECTORS:
        raise ValueError(f"unknown detector {name!r}; known: {', '.join(DETECTORS)}.")
    return DETECTORS[key](**params)


def detector_from_json(text: str) -> Detector:
    """Load a detector written by ``to_json``; only plain JSON is parsed, no code runs.

    >>> from abstain.detectors import KNN, detector_from_json
    >>> det = KNN(k=1).fit([[1.0, 0.0], [0.0, 1.0]])
    >>> detector_from_json(det.to_json()).score([[1.0, 0.1]]).round(4)
    array([0.0996])
    """
    doc = json.loads(text)
    if not isinstance(doc, dict) or doc.get("format") != _FORMAT:
        raise ValueError(f"text must be a JSON detector written by to_json (format {_FORMAT!r}).")
    classes = {cls.__name__: cls for cls in DETECTORS.values()}
    name = doc.get("detector")
    if name not in classes:
        raise ValueError(f"detector must be one of {sorted(classes)}; got {name!r}.")
    det = classes[name](**doc.get("params", {}))
    for key, value in doc.get("fitted", {}).items():
        if key in det._ARRAYS:
            setattr(det, key, decode_array(value, key))
        elif key in det._VALUES:
            setattr(det, key, value)
        else:
            raise ValueError(f"unknown fitted attribute {key!r} for {name}.")
    return det
