"""``abstain.load_json``: reads back every fitted kind.

The codec (:mod:`abstain._core.serialize`) knows a kind once the module that defines it is
imported (``@serializable`` registers the class). This module imports every subpackage that
defines serialisable classes, so that :func:`load_json` reads every kind, nested documents
too, without the user importing anything first; ``import abstain`` loads it on first use of
``abstain.load_json``.
"""

from __future__ import annotations

import os
from typing import Any

# Each import registers the kinds its modules define (the top-level package may import every
# layer): rules, OOD rules and double-score detectors; learned scores; detectors and
# DetectorBank; combiners; SVOR; score tables.
from . import combine, detectors, models, ordinal, scores, tables  # noqa: F401
from ._core.serialize import read_document

__all__ = ["load_json"]


def load_json(text_or_path: str | bytes | os.PathLike[str]) -> Any:
    """Load any fitted abstain object written by its ``to_json``. Only JSON is parsed.

    Parameters
    ----------
    text_or_path : str, bytes or path-like
        The JSON document, or the path of a file holding it (a ``str`` that does not
        start with ``{`` is taken as a path when such a file exists).

    Returns
    -------
    The fitted object, of the class named by the document's ``kind``.

    Raises
    ------
    ValueError
        For any problem with the document: not JSON, nested too deeply, not an object,
        an unknown format or kind, a parameter missing, of the wrong type or out of range, a
        fitted attribute missing, unknown, of the wrong type, out of range, non-finite
        where its field does not allow it, or an array of the wrong shape. The message
        names the field, e.g. ``fitted.threshold_``; for a file it starts with the path.

    Examples
    --------
    >>> import abstain
    >>> rule = abstain.CostBased(reject_cost=0.3).fit([0.1, 0.2, 0.6, 0.9], [0, 0, 1, 1])
    >>> abstain.load_json(rule.to_json()).threshold_
    0.2
    >>> abstain.load_json('{"format": "abstain/1", "kind": "CostBased", "params": {}}')
    Traceback (most recent call last):
    ...
    ValueError: fitted is missing: a document needs fitted, format, kind, params.
    """
    return read_document(text_or_path)
