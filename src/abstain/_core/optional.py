"""Optional dependencies, imported lazily with one error message that names the extra."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

__all__ = ["EXTRAS", "figure", "missing_extra", "require"]

#: What each extra of ``pyproject.toml`` installs, as the error message names it.
EXTRAS = {
    "sklearn": "scikit-learn",
    "plot": "matplotlib",
    "io": "pandas and pyarrow",
    "images": "Pillow",
    "torch": "PyTorch",
    "faiss": "faiss-cpu",
    "dask": "Dask",
    "torchmetrics": "torchmetrics",
    "spark": "PySpark",
}
_NOTES = {"torch": " (torch==2.13.0, the CPU wheel)"}


def missing_extra(who: str, extra: str) -> ImportError:
    """The one message pattern: ``"<who> needs <what>: pip install 'abstain[<extra>]'"``."""
    return ImportError(
        f"{who} needs {EXTRAS[extra]}: pip install 'abstain[{extra}]'{_NOTES.get(extra, '')}."
    )


def require(module: str, extra: str, who: str) -> ModuleType:
    """Import ``module``, or raise :func:`missing_extra` for ``who`` and ``extra``.

    Examples
    --------
    >>> from abstain._core.optional import require
    >>> require("math", "plot", "abstain.plot").sqrt(4.0)
    2.0
    >>> require("no_such_module_here", "plot", "abstain.plot")
    Traceback (most recent call last):
    ...
    ImportError: abstain.plot needs matplotlib: pip install 'abstain[plot]'.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise missing_extra(who, extra) from exc


def figure(who: str, **kwargs: Any) -> Any:
    """A new ``matplotlib.figure.Figure`` (extra ``plot``), outside pyplot's state.

    Library code draws on such figures and saves them with ``fig.savefig``, so it never
    switches the user's plotting backend nor leaves figures open in pyplot.
    """
    return require("matplotlib.figure", "plot", who).Figure(**kwargs)


def axes(ax: Any, who: str, figsize: tuple[float, float] = (5, 4)) -> Any:
    """``ax`` itself, or new axes from pyplot (extra ``plot``) when ``ax`` is None.

    Only the user-facing plotting API calls this: when the user gives no axes, a new
    pyplot figure is what they expect to show or save.
    """
    if ax is not None:
        return ax
    plt = require("matplotlib.pyplot", "plot", who)
    _, new = plt.subplots(figsize=figsize)
    return new
