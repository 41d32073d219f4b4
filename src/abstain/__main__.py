"""``python -m abstain``: the command line."""

from .app.console import console

console()
