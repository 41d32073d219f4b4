"""Write ``legacy_documents.json``: documents in the per-family formats of abstain 0.1.0.

Run with the release whose ``to_json`` wrote ``abstain.rule/1``, ``abstain.ood/1``, ...
(commit b8a5cf8) on the path, e.g.::

    git archive b8a5cf8 src | tar -x -C /tmp/old
    PYTHONPATH=/tmp/old/src python tests/data/make_legacy_documents.py

Each case holds the document as that release wrote it, the method to call on the loaded
object (or the fitted attribute to read), its arguments and that release's answer;
``tests/_core/test_serialize.py`` loads every document with ``abstain.load_json`` and checks
the answer.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return np.asarray(value).tolist()


def main() -> None:
    from abstain import BoundedAbstention, BoundedImprovement, CostBased
    from abstain.base_scores import ShiftedBaseScores
    from abstain.combine import EmpiricalZ, GuaranteedDetector, ScoreCombiner
    from abstain.detectors import (
        GEN,
        KNN,
        MSP,
        ODIN,
        DoubleScoreDetector,
        Energy,
        Mahalanobis,
        MaxLogit,
        ReAct,
        ViM,
    )
    from abstain.ood import BoundedPrecisionRecall, BoundedTPRFPR, CostBasedOOD
    from abstain.ordinal import SVOR
    from abstain.scores import SELE, TCP, LossRegression
    from abstain.tabular import rule_to_json

    rng = np.random.default_rng(2024)
    cases: list[dict[str, Any]] = []

    def add(name: str, obj: Any, method: str, *args: Any, text: str | None = None) -> None:
        out = getattr(obj, method)  # a method called with args, or a fitted attribute
        out = out(*args) if callable(out) else out
        cases.append({"name": name, "document": obj.to_json() if text is None else text,
                      "method": method, "args": [_jsonable(a) for a in args],
                      "expected": _jsonable(out)})

    warnings.simplefilter("ignore")
    # abstain.rule/1
    u = rng.integers(0, 6, 40) / 5.0
    loss = (rng.random(40) < u).astype(float)
    probe = np.linspace(-0.2, 1.2, 15)
    rule = CostBased(reject_cost=0.3).fit(u, loss)
    add("rule CostBased", rule, "accept_proba", probe)
    add("rule CostBased plug-in", CostBased(0.4).fit(), "accept_proba", probe)
    add("rule BoundedAbstention", BoundedAbstention(0.55, random_state=3).fit(u, loss),
        "accept", probe)
    add("rule BoundedImprovement delta", BoundedImprovement(0.3, delta=0.2).fit(u, loss),
        "accept_proba", probe)
    infeasible = BoundedImprovement(0.01, delta=0.05).fit(u, loss)
    assert not infeasible.feasible_ and infeasible.threshold_ == -np.inf
    add("rule BoundedImprovement infeasible", infeasible, "accept_proba", probe)
    add("rule CLI file with columns", rule, "accept_proba", probe,
        text=rule_to_json(rule, ["risk"]))
    # abstain.ood/1
    s2 = rng.normal(size=(60, 2))
    is_ood = np.arange(60) % 3 == 0
    s2[is_ood] += 1.5
    l2 = (rng.random(60) < 0.2).astype(float)
    q2 = rng.normal(size=(8, 2))
    add("ood BoundedTPRFPR", BoundedTPRFPR(0.7, 0.4, random_state=1).fit(s2, is_ood, l2),
        "accept_proba", q2)
    unable = BoundedTPRFPR(0.99, 0.0).fit(s2[:, 0], is_ood, l2)
    assert not unable.feasible_
    add("ood BoundedTPRFPR infeasible", unable, "accept_proba", q2[:, 0])
    add("ood BoundedPrecisionRecall", BoundedPrecisionRecall(0.6, 0.6, search="exact").fit(
        s2[:, 1], is_ood, l2), "accept_proba", q2[:, 1])
    add("ood CostBasedOOD plug-in", CostBasedOOD(0.3, 1.0, 0.0, ood_prior=0.25).fit(),
        "accept_proba", q2)
    add("ood CostBasedOOD", CostBasedOOD(0.3, 1.0, 0.1).fit(s2, is_ood, l2), "score", q2)
    # abstain.score/1
    X = rng.normal(size=(50, 3))
    labels = np.array(["cat", "dog", "eel"])[rng.integers(0, 3, 50)]
    lx = (rng.random(50) < 1 / (1 + np.exp(-X[:, 0]))).astype(float)
    Xq, yq = rng.normal(size=(6, 3)), np.array(["dog", "cat", "eel", "cat", "dog", "eel"])
    add("score LossRegression", LossRegression(C=1.0).fit(X, labels, lx), "decision_function",
        Xq, yq)
    add("score TCP", TCP(C=0.0, classes=[0, 1, 2]).fit(X, np.unique(labels, return_inverse=True)[1],
                                                        np.clip(1 - lx / 2, 0, 1)),
        "decision_function", Xq, np.array([0, 1, 2, 0, 1, 2]))
    add("score SELE gap inf", SELE(C=0, chunk_size=None, max_iter=3, features="shared").fit(
        X, None, lx), "decision_function", Xq)
    # abstain.detector/1
    F = rng.normal(size=(30, 4)) + 1.0
    W, b = rng.normal(size=(3, 4)), rng.normal(size=3)
    yF = rng.integers(0, 3, 30)
    Fq = rng.normal(size=(5, 4)) + 1.0
    Lq = Fq @ W.T + b
    for det in (MSP(temperature=2.0), MaxLogit(), Energy(), ODIN(), GEN(top_m=2)):
        add(f"detector {type(det).__name__}", det, "score", Lq)
    add("detector ReAct", ReAct(percentile=80).fit(F, weight=W, bias=b), "score", Fq)
    add("detector KNN", KNN(k=3).fit(F), "score", Fq)
    add("detector ViM", ViM(dim=2).fit(F, weight=W, bias=b), "score", Fq)
    add("detector Mahalanobis", Mahalanobis().fit(F, np.array(["a", "b", "c"])[yF]),
        "score", Fq)
    # abstain.double-score/1
    train = {"features": F, "logits": F @ W.T + b}
    val_f = np.vstack([rng.normal(size=(40, 4)) + 1.0, rng.normal(size=(20, 4)) - 1.0])
    val = {"features": val_f, "logits": val_f @ W.T + b}
    val_ood = np.arange(60) >= 40
    val_loss = (rng.random(60) < 0.3).astype(float)
    det2 = DoubleScoreDetector(MSP(), KNN(k=2), BoundedTPRFPR(0.6, 0.5)).fit(train)
    det2.tune(val, val_ood, val_loss)
    add("double-score MSP+KNN", det2, "accept_proba", {"features": Fq, "logits": Lq})
    # abstain.base-scores/1
    T, K, d, n = 2, 2, 3, 24
    y_bs = np.arange(n) % K
    Fb = rng.normal(size=(T, n, d)) + 2.0
    Fbq = rng.normal(size=(T, 4, d)) + 2.0
    Lbq = rng.normal(size=(T, 4, K * T))
    bs = ShiftedBaseScores(shifts=(0, 2), gamma=0.2, svm_max_samples=8).fit(Fb, y_bs)
    add("base-scores all kinds", bs, "score", Fbq, Lbq)
    # abstain.combine/1
    S = rng.normal(size=(40, 3))
    Sq = rng.normal(size=(5, 3)) * 2
    add("combine EmpiricalZ", EmpiricalZ(higher_is_inlier=True).fit(S), "transform", Sq)
    add("combine GuaranteedDetector", GuaranteedDetector(alpha=0.2, delta=0.2).fit(S[:, 0]),
        "threshold_")
    add("combine ScoreCombiner glrt_cov", ScoreCombiner(method="glrt_cov").fit(S), "score", Sq)
    # abstain.svor/1
    Xo = rng.normal(size=(40, 2))
    yo = np.clip(np.round(Xo[:, 0] + 2), 1, 3).astype(int)
    add("svor SVOR", SVOR(C=10.0).fit(Xo, yo), "projection", rng.normal(size=(5, 2)))

    out = Path(__file__).with_name("legacy_documents.json")
    out.write_text(json.dumps(cases, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(cases)} cases to {out}")


if __name__ == "__main__":
    main()
