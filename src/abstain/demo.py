"""The demo (``python -m abstain.demo``); defined in :mod:`abstain.app.demo`.

This module path is kept for existing code; it re-exports the names of its new home.
"""

from .app.demo import (
    main,
    run,
)

__all__ = [
    "run",
    "main",
]

if __name__ == "__main__":
    raise SystemExit(main())
