"""Every detector by name, and the loader of detector files."""

from __future__ import annotations

from typing import Any

from ._base import Detector
from ._base_scores import CSI, SupCSI
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


#: The detectors of a network's outputs on shifted copies of each input (a dict such as
#: :func:`abstain.torch.csi_outputs` returns, each entry of shape (n_shifts, n, ...)): they
#: score ``score_outputs(outputs)`` and are not members of a :class:`DetectorBank`.
SHIFTED_DETECTORS: dict[str, type[CSI | SupCSI]] = {"csi": CSI, "supcsi": SupCSI}


def make_detector(name: str, **params: Any) -> Detector | CSI | SupCSI:
    """A detector by its short name (a key of :data:`DETECTORS` or
    :data:`SHIFTED_DETECTORS`), e.g. ``"knn"`` or ``"csi"``.

    >>> from abstain.detectors import make_detector
    >>> make_detector("knn", k=10, bank_size=5000).get_params()["bank_size"]
    5000
    >>> make_detector("SupCSI", shifts=(0, 2)).shifts
    (0, 2)
    """
    key = str(name).lower()
    if key in SHIFTED_DETECTORS:
        return SHIFTED_DETECTORS[key](**params)
    if key not in DETECTORS:
        raise ValueError(f"unknown detector {name!r}; known: "
                         f"{', '.join([*DETECTORS, *SHIFTED_DETECTORS])}.")
    return DETECTORS[key](**params)
