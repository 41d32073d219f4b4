"""The HTML report; defined in :mod:`abstain.app.report`.

This module path is kept for existing code; it re-exports the names of its new home.
"""

from .app.report import (
    html_report,
    report_figures,
    write_report,
)

__all__ = [
    "report_figures",
    "html_report",
    "write_report",
]
