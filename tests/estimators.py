"""Every serialisable estimator with a small synthetic sample: how to fit it, what it
produces on new data, and which call needs a fitted object.

Shared by ``test_common.py`` (the estimator contract) and ``_core/test_serialize.py``
(round trips). ``test_common.py`` checks that ``CASES`` covers every class registered for
serialisation, so a new class cannot be forgotten here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from abstain import BoundedAbstention, BoundedImprovement, CostBased
from abstain.combine import BankDetector, EmpiricalZ, GuaranteedDetector, ScoreCombiner
from abstain.detectors import (
    CSI,
    GEN,
    KNN,
    MSP,
    ODIN,
    DetectorBank,
    Energy,
    Mahalanobis,
    MaxLogit,
    ReAct,
    ShiftedBaseScores,
    SupCSI,
    ViM,
)
from abstain.models import BoundedPrecisionRecall, BoundedTPRFPR, CostBasedOOD, DoubleScoreDetector
from abstain.ordinal import SVOR
from abstain.scores import SELE, TCP, LossRegression


def _sample(seed: int) -> dict[str, Any]:
    """One small sample of every input kind, ID training rows first."""
    rng = np.random.default_rng(seed)
    n, d, k = 60, 4, 3
    W, b = rng.normal(size=(k, d)), rng.normal(size=k)
    y = np.arange(n) % k
    F = rng.normal(size=(n, d)) + 2.0 * np.eye(k, d)[y]
    u = rng.uniform(size=n)
    s2 = rng.normal(size=(n, 2))
    is_ood = np.arange(n) % 4 == 0
    s2[is_ood] += 5.0
    T = 4  # the default shifts (0, 1, 2, 3)
    Fs = rng.normal(size=(T, n, d)) + 2.0
    Fv = F.copy()  # a validation sample with OOD rows far from the ID features
    Fv[is_ood] = 0.3 * rng.normal(size=(int(is_ood.sum()), d)) - 6.0
    return {
        "F": F, "y": y, "W": W, "b": b, "logits": F @ W.T + b,
        "outputs": {"features": F, "logits": F @ W.T + b},
        "val": {"features": Fv, "logits": Fv @ W.T + b},
        "u": u, "losses": (rng.random(n) < u**3).astype(float),
        "s2": s2, "is_ood": is_ood, "ood_losses": (rng.random(n) < 0.1).astype(float),
        "S": rng.normal(size=(n, 3)), "stat": rng.normal(size=n),
        "Fs": Fs, "Ls": rng.normal(size=(T, n, k * T)),
        "ranks": np.clip(np.round(F[:, 0] + 1), 0, 2).astype(int) + 1,
        "pred": y, "proba": np.clip(1.0 - 0.5 * u, 0.0, 1.0),
    }


TRAIN = _sample(0)
NEW = _sample(1)  # new data: the outputs of a loaded object must equal the original's
CAL = _sample(2)  # more in-distribution data, for the calibration of BankDetector


@dataclass
class Case:
    """``fit(obj)`` fits on ``TRAIN``; ``outputs(obj)`` is what it produces on ``NEW``;
    ``use(obj)`` needs a fitted object (None: the class has no fitted state)."""

    make: Callable[[], Any]
    fit: Callable[[Any], Any]
    outputs: Callable[[Any], dict[str, Any]]
    use: Callable[[Any], Any] | None


def _verb(obj: Any, new: str, old: str) -> Any:
    """The method ``new`` where the class has it, else ``old``: the learned scores, SVOR and
    GuaranteedDetector gain ``score``/``accept`` (the old spellings then warn)."""
    return getattr(obj, new if callable(getattr(type(obj), new, None)) else old)


def _rule(cls: type) -> Case:
    return Case(cls, lambda r: r.fit(TRAIN["u"], TRAIN["losses"]),
                lambda r: {"accept_proba": r.accept_proba(NEW["u"])},
                lambda r: r.accept_proba(NEW["u"]))


def _ood(cls: type) -> Case:
    return Case(cls, lambda r: r.fit(TRAIN["s2"], TRAIN["is_ood"], TRAIN["ood_losses"]),
                lambda r: {"score": r.score(NEW["s2"]), "accept_proba": r.accept_proba(NEW["s2"])},
                lambda r: r.accept_proba(NEW["s2"]))


def _learned(cls: type) -> Case:
    target = "proba" if cls is TCP else "losses"
    return Case(cls, lambda m: m.fit(TRAIN["F"], TRAIN["pred"], TRAIN[target]),
                lambda m: {"score": _verb(m, "score", "predict")(NEW["F"], NEW["pred"]),
                           "decision_function": m.decision_function(NEW["F"], NEW["pred"])},
                lambda m: m.decision_function(NEW["F"], NEW["pred"]))


def _logit_detector(cls: type) -> Case:
    return Case(cls, lambda det: det.fit(TRAIN["logits"]),
                lambda det: {"score": det.score(NEW["logits"])}, None)


def _feature_detector(cls: type) -> Case:
    return Case(cls, lambda det: det.fit(TRAIN["F"], TRAIN["y"], weight=TRAIN["W"],
                                         bias=TRAIN["b"]),
                lambda det: {"score": det.score(NEW["F"])}, lambda det: det.score(NEW["F"]))


def _double(det: DoubleScoreDetector) -> DoubleScoreDetector:
    det.fit(TRAIN["outputs"], TRAIN["y"])
    return det.tune(TRAIN["val"], TRAIN["is_ood"], TRAIN["ood_losses"])



def _shift_logits(part: dict[str, Any]) -> Any:
    """CSI's shift logits (T, n, T): the first T joint logits, shifted so that the true
    shift's mean is away from 0 (eq. 7 divides by it)."""
    T = part["Fs"].shape[0]
    return part["Ls"][:, :, :T] + 2.0 * np.eye(T)[:, None, :]

CASES: dict[str, Case] = {
    "CostBased": _rule(CostBased),
    "BoundedImprovement": _rule(BoundedImprovement),
    "BoundedAbstention": _rule(BoundedAbstention),
    "BoundedTPRFPR": _ood(BoundedTPRFPR),
    "BoundedPrecisionRecall": _ood(BoundedPrecisionRecall),
    "CostBasedOOD": _ood(CostBasedOOD),
    "DoubleScoreDetector": Case(
        DoubleScoreDetector, _double,
        lambda det: {"scores": det.scores(NEW["val"]), "score": det.score(NEW["val"]),
                     "accept_proba": det.accept_proba(NEW["val"])},
        lambda det: det.accept_proba(NEW["val"])),
    "LossRegression": _learned(LossRegression),
    "SELE": _learned(SELE),
    "TCP": _learned(TCP),
    "MSP": _logit_detector(MSP),
    "MaxLogit": _logit_detector(MaxLogit),
    "Energy": _logit_detector(Energy),
    "ODIN": _logit_detector(ODIN),
    "GEN": _logit_detector(GEN),
    "ReAct": _feature_detector(ReAct),
    "KNN": _feature_detector(KNN),
    "ViM": _feature_detector(ViM),
    "Mahalanobis": _feature_detector(Mahalanobis),
    "ShiftedBaseScores": Case(
        ShiftedBaseScores,
        lambda bs: bs.fit(TRAIN["Fs"], TRAIN["y"]),
        lambda bs: {"score": bs.score(NEW["Fs"], NEW["Ls"])},
        lambda bs: bs.score(NEW["Fs"], NEW["Ls"])),
    "CSI": Case(
        CSI,
        lambda d: d.fit(TRAIN["Fs"], _shift_logits(TRAIN)),
        lambda d: {"score": d.score(NEW["Fs"], _shift_logits(NEW)),
                   "base_scores": d.base_scores(NEW["Fs"], _shift_logits(NEW))},
        lambda d: d.score(NEW["Fs"], _shift_logits(NEW))),
    "SupCSI": Case(SupCSI, lambda d: d.fit(TRAIN["Ls"]),
                   lambda d: {"score": d.score(NEW["Ls"])}, lambda d: d.score(NEW["Ls"])),
    "EmpiricalZ": Case(EmpiricalZ, lambda ez: ez.fit(TRAIN["S"]),
                       lambda ez: {"transform": ez.transform(NEW["S"])},
                       lambda ez: ez.transform(NEW["S"])),
    "GuaranteedDetector": Case(GuaranteedDetector, lambda g: g.fit(TRAIN["stat"]),
                               lambda g: {"decision": _verb(g, "accept", "predict")(NEW["stat"])},
                               lambda g: _verb(g, "accept", "predict")(NEW["stat"])),
    "ScoreCombiner": Case(lambda: ScoreCombiner(random_state=0),
                          lambda c: c.fit(TRAIN["S"], TRAIN["S"] + 1.0),
                          lambda c: {"score": c.score(NEW["S"]),
                                     "transform": c.transform(NEW["S"])},
                          lambda c: c.score(NEW["S"])),
    "DetectorBank": Case(
        lambda: DetectorBank([MSP(), KNN(k=5), Mahalanobis()]),
        lambda bank: bank.fit(TRAIN["outputs"], TRAIN["y"]),
        lambda bank: {"score": bank.score(NEW["outputs"])},
        lambda bank: bank.score(NEW["outputs"])),
    "BankDetector": Case(
        lambda: BankDetector(DetectorBank([MSP(), KNN(k=5)]), alpha=0.2, delta=0.2,
                             random_state=0),
        lambda det: det.fit(TRAIN["outputs"], TRAIN["y"], CAL["outputs"]),
        lambda det: {"score": det.score(NEW["outputs"]),
                     "accept_proba": det.accept_proba(NEW["outputs"])},
        lambda det: det.accept_proba(NEW["outputs"])),
    "SVOR": Case(SVOR, lambda m: m.fit(TRAIN["F"], TRAIN["ranks"]),
                 lambda m: {"predict": m.predict(NEW["F"]),
                            "decision_function": m.decision_function(NEW["F"]),
                            "margin": m.uncertainty(NEW["F"])},
                 lambda m: m.predict(NEW["F"])),
}


class Reordered:
    """A fitted classifier with its ``classes_`` (and probability columns) in another order
    than scikit-learn's sorted one: ``order`` of the model's classes."""

    def __init__(self, model: Any, order: Any) -> None:
        self.model, self.order = model, np.asarray(order)
        self.classes_ = model.classes_[self.order]

    def predict(self, X: Any) -> Any:
        return self.model.predict(X)

    def predict_proba(self, X: Any) -> Any:
        return self.model.predict_proba(X)[:, self.order]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {}
