"""abstain: selective classification and out-of-distribution rejection.

Turn any trained classifier into one that predicts or abstains: exact metrics
(:mod:`abstain.metrics`), plug-in uncertainty scores (:mod:`abstain.scores`) and the
three optimal reject models (:class:`CostBased`, :class:`BoundedImprovement`,
:class:`BoundedAbstention`). A higher uncertainty is always rejected first.
Every fitted object writes itself with ``to_json`` and :func:`load_json` reads any of them.

Each public name has one home, a subpackage (``from abstain.models import BoundedTPRFPR``);
this module re-exports only a short list of what a newcomer needs first (``__all__``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._core.version import VERSION

if TYPE_CHECKING:
    from ._load import load_json
    from .exceptions import InfeasibleTargetWarning, NotFittedError
    from .models import (
        BoundedAbstention,
        BoundedImprovement,
        CostBased,
        EquivalentModels,
        SelectiveClassifier,
    )
    from .tables import BinnedTable, PairTable, ScoreTable

# The public names, imported on first use (PEP 562): ``import abstain`` stays light, so
# that the ``abstain`` command installs its signal handlers before NumPy and SciPy load.
_HOMES = {
    "BinnedTable": ".tables",
    "PairTable": ".tables",
    "load_json": "._load",
    "ScoreTable": ".tables",
    "InfeasibleTargetWarning": ".exceptions",
    "NotFittedError": ".exceptions",
    "SelectiveClassifier": ".models._classifier",
    "BoundedAbstention": ".models._selective",
    "BoundedImprovement": ".models._selective",
    "CostBased": ".models._selective",
    "EquivalentModels": ".models._equivalent",
}

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
]
# The modules that ``import abstain`` made available as attributes when it imported the
# public names eagerly.
_SUBPACKAGES = frozenset({"metrics", "scores", "detectors", "models", "exceptions"})

__version__ = VERSION


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is not None:
        value = getattr(importlib.import_module(home, __name__), name)
    elif name in _SUBPACKAGES:  # ``import abstain; abstain.metrics.aurc(...)``
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'abstain' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
