"""The peers' metric functions, called on the same NumPy data as abstain's (import-guarded).

Each peer is a dictionary entry ``name -> callable(losses, is_ood, scores)`` built only when
its package imports; :func:`peers_missing` names the ones that do not, so a benchmark table
says "not installed" instead of leaving a row out silently. The dev environment has
scikit-learn; torch-uncertainty and pytorch-ood need a newer PyTorch than the ``torch`` extra
pins and live in ``.venv-peers`` (``make bench-metrics-peers``).

What each peer computes, and how it differs from abstain:

- torch-uncertainty ``AURC`` / ``AUGRC`` (its ``partial_compute`` on a descending argsort of
  the confidence, a trapezoid over ``k / n`` and the ``1 / (1 - 1/n)`` normalisation, as its
  ``compute``): order-dependent on ties, and a different normalisation, so its values are not
  abstain's; the time is that of the same job, one sort plus cumulative sums.
- pytorch-ood ``auroc``, ``aupr(positive="id")``, ``fpr_at_tpr`` (functional, CPU tensors,
  OOD as label -1): tie-aware like abstain (one point per distinct score).
- scikit-learn ``roc_auc_score`` and ``average_precision_score`` (ID as positive class, so
  ``average_precision_score`` is a step-wise AUPR-In, not the trapezoid of ``aupr_in``).

Scores are uncertainties (higher = rejected first); the peers that rank by confidence get
``-scores`` (negation is exact).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

Peer = Callable[[np.ndarray, np.ndarray, np.ndarray], Any]

_MISSING: dict[str, str] = {}


def _torch_uncertainty() -> dict[str, Peer]:
    try:
        import torch
        from torch_uncertainty.metrics.classification.risk_coverage import (
            _aurc_rejection_rate_compute,
        )
        from torchmetrics.utilities.compute import _auc_compute
    except Exception as exc:  # noqa: BLE001 - any import failure means "not installed"
        _MISSING["torch-uncertainty"] = f"{type(exc).__name__}: {exc}"
        return {}

    def _rates(losses: np.ndarray, scores: np.ndarray) -> tuple[Any, Any]:
        # AURC.partial_compute: errors in order of descending confidence, running error rate
        rates = _aurc_rejection_rate_compute(torch.from_numpy(-scores),
                                             torch.from_numpy(losses))
        m = rates.size(0)
        return rates, torch.arange(1, m + 1) / m

    def aurc(losses: np.ndarray, is_ood: np.ndarray, scores: np.ndarray) -> float:
        rates, cov = _rates(losses, scores)
        return float(_auc_compute(cov, rates) / (1 - 1 / cov.size(0)))

    def augrc(losses: np.ndarray, is_ood: np.ndarray, scores: np.ndarray) -> float:
        rates, cov = _rates(losses, scores)
        return float(_auc_compute(cov, rates * cov) / (1 - 1 / cov.size(0)))

    return {"torch-uncertainty aurc": aurc, "torch-uncertainty augrc": augrc}


def _pytorch_ood() -> dict[str, Peer]:
    try:
        import torch
        from pytorch_ood.metrics.functional import aupr, auroc, fpr_at_tpr
    except Exception as exc:  # noqa: BLE001
        _MISSING["pytorch-ood"] = f"{type(exc).__name__}: {exc}"
        return {}

    def _t(is_ood: np.ndarray, scores: np.ndarray) -> tuple[Any, Any]:
        return torch.from_numpy(scores), torch.from_numpy(np.where(is_ood, -1, 0))

    return {
        "pytorch-ood auroc": lambda ls, o, s: float(auroc(*_t(o, s))),
        "pytorch-ood aupr_in": lambda ls, o, s: float(aupr(*_t(o, s), positive="id")),
        # its positives (label < 0) are those scored high: ID rows and -scores give the FPR
        # of OOD accepted at 95 % of ID accepted, abstain's fpr_at_tpr(tpr=0.95)
        "pytorch-ood fpr_at_tpr": lambda ls, o, s: float(fpr_at_tpr(*_t(~o, -s), tpr=0.95)),
    }


def _sklearn() -> dict[str, Peer]:
    try:
        from sklearn.metrics import average_precision_score, roc_auc_score
    except Exception as exc:  # noqa: BLE001
        _MISSING["scikit-learn"] = f"{type(exc).__name__}: {exc}"
        return {}
    return {
        "scikit-learn roc_auc_score": lambda ls, o, s: roc_auc_score(o, s),
        "scikit-learn average_precision_score":
            lambda ls, o, s: average_precision_score(~o, -s),
    }


def metric_peers() -> dict[str, Peer]:
    """Every importable peer, by name (``"<package> <function>"``)."""
    _MISSING.clear()
    return {**_torch_uncertainty(), **_pytorch_ood(), **_sklearn()}


def peers_missing() -> dict[str, str]:
    """The peers :func:`metric_peers` could not import, with the reason (after a call)."""
    return dict(_MISSING)


def torch_threads(n: int) -> None:
    """Give PyTorch ``n`` threads when it is imported (the same cores as NumPy's BLAS)."""
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(n)
