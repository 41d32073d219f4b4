"""Every detector by name, and the loader of detector files."""

from __future__ import annotations

from typing import Any

from ._base import Detector
from ._features import KNN, Mahalanobis, ReAct, ViM
from ._logits import GEN, MSP, ODIN, Energy, MaxLogit

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
    >>> make_detector("knn", k=10, bank_size=5000).get_params()["bank_size"]
    5000
    """
    key = str(name).lower()
    if key not in DETECTORS:
        raise ValueError(f"unknown detector {name!r}; known: {', '.join(DETECTORS)}.")
    return DETECTORS[key](**params)
