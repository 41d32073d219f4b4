"""The ``abstain`` command line; defined in :mod:`abstain.app.cli`.

This module path is kept for existing code; it re-exports the names of its new home.
"""

from .app.cli import (
    main,
)

__all__ = [
    "main",
]
