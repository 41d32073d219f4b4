"""abstain: selective classification and out-of-distribution rejection.

Turn any trained classifier into one that predicts or abstains: exact metrics
(:mod:`abstain.metrics`), plug-in uncertainty scores (:mod:`abstain.scores`) and the
three optimal reject models (:class:`CostBased`, :class:`BoundedImprovement`,
:class:`BoundedAbstention`). A higher uncertainty is always rejected first.
Every fitted object writes itself with ``to_json`` and :func:`load_json` reads any of them.
"""

from ._core.binned import BinnedTable
from ._core.pair_table import PairTable
from ._core.serialize import load_json
from ._core.table import ScoreTable
from ._core.version import VERSION
from .exceptions import InfeasibleTargetWarning, NotFittedError
from .models.classifier import SelectiveClassifier
from .models.selective import (
    BoundedAbstention,
    BoundedImprovement,
    CostBased,
    EquivalentModels,
    rule_from_json,
)

__all__ = [
    "BinnedTable",
    "BoundedAbstention",
    "BoundedImprovement",
    "CostBased",
    "EquivalentModels",
    "InfeasibleTargetWarning",
    "NotFittedError",
    "ScoreTable",
    "PairTable",
    "SelectiveClassifier",
    "load_json",
    "rule_from_json",
]

__version__ = VERSION
