"""Post-hoc OOD detectors on a trained network's logits and features.

Every detector returns one score per input with the library's one direction: **a higher
score means more out-of-distribution** (confidences such as the maximum softmax
probability are negated here, never in the core). A detector works on one kind of input,
named by its class attribute ``inputs``:

- ``"logits"``: :class:`MSP`, :class:`MaxLogit`, :class:`Energy`, :class:`ODIN`, :class:`GEN`
  take the classifier's logits, shape (n, K), and need no fitting;
- ``"features"``: :class:`ReAct`, :class:`KNN`, :class:`ViM`, :class:`Mahalanobis` take the
  penultimate features, shape (n, d), and are fitted on the in-distribution training set;
  ReAct and ViM also need the last linear layer ``logits = features @ weight.T + bias``
  (``weight`` of shape (K, d), ``bias`` of shape (K,)).

All share one protocol: ``fit(X, y=None, *, weight=None, bias=None)`` (arguments a method
does not use are ignored), ``score(X)``, ``score_outputs(outputs)`` (picks
``outputs.logits`` or ``outputs.features``, e.g. from :func:`abstain.torch.extract`), and
``to_json`` read back by :func:`abstain.load_json`. Nothing here needs PyTorch; ODIN's input
perturbation, which needs gradients, is :meth:`ODIN.score_inputs` (through
:func:`abstain.torch.odin_logits`). The feature detectors compute in float32 unless given
``dtype="float64"``.

:class:`DetectorBank` fits several detectors on the same outputs and scores them into one
matrix (one column per detector), the input of :mod:`abstain.combine`.

:class:`~abstain.models.DoubleScoreDetector` pairs a misclassification score with an OOD
score and tunes their combination with an OOD reject model; it is a reject model itself and
lives in :mod:`abstain.models` (Franc, Prusa and Paplham, 2023, section 4: KNN+MSP,
ViM+MSP), as does :func:`~abstain.models.tune_detector`, which chooses a detector's
hyperparameters on validation data.

:class:`LeaveClassesOut` makes proxy outliers from labelled inliers (held-out classes) and
:func:`restrict_outputs` gives a network's outputs as if it knew only the kept classes: the
data on which :class:`abstain.combine.BankDetector` and :func:`abstain.models.tune_detector`
choose without real outliers. :func:`shuffled_columns` makes proxy outliers of another kind
from inlier rows (each column permuted apart), the tabular counterpart of :func:`rotations`.

:class:`ShiftedBaseScores` computes the base scores of a class x rotation network
(:data:`BASE_SCORE_KINDS`), the input of :mod:`abstain.combine`.
"""

from ._bank import (
    DetectorBank,
)
from ._base import (
    Detector,
)
from ._base_scores import (
    BASE_SCORE_KINDS,
    CSI,
    ShiftedBaseScores,
    SupCSI,
    joint_labels,
    rotation_training_set,
    rotations,
)
from ._features import (
    KNN,
    Mahalanobis,
    ReAct,
    ViM,
)
from ._logits import (
    GEN,
    MSP,
    ODIN,
    Energy,
    MaxLogit,
)
from ._proxy import (
    LeaveClassesOut,
    ProxyOutputs,
    ProxySplit,
    restrict_outputs,
    shuffled_columns,
)
from ._registry import (
    DETECTORS,
    SHIFTED_DETECTORS,
    make_detector,
)

__all__ = [
    "DETECTORS",
    "SHIFTED_DETECTORS",
    "DetectorBank",
    "GEN",
    "KNN",
    "MSP",
    "ODIN",
    "Energy",
    "Mahalanobis",
    "MaxLogit",
    "ReAct",
    "ViM",
    "make_detector",
    "Detector",
    "BASE_SCORE_KINDS",
    "ShiftedBaseScores",
    "joint_labels",
    "rotation_training_set",
    "CSI",
    "SupCSI",
    "rotations",
    "LeaveClassesOut",
    "ProxyOutputs",
    "ProxySplit",
    "restrict_outputs",
    "shuffled_columns",
]

