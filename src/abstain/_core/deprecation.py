"""The one deprecation warning of the renamed verbs (see ``docs/architecture.md``)."""

from __future__ import annotations

import warnings

__all__ = ["REMOVED_IN", "warn_renamed"]

#: The release that removes the deprecated aliases.
REMOVED_IN = "0.3"


def warn_renamed(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Issue ``FutureWarning: <old> is deprecated and will be removed in 0.3; use <new>.``

    ``stacklevel=3`` points at the caller of the deprecated method that calls this.
    """
    warnings.warn(
        f"{old} is deprecated and will be removed in {REMOVED_IN}; use {new}.",
        FutureWarning,
        stacklevel=stacklevel,
    )
