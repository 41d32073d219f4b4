"""A tiny progress bar on stderr, for the command line and the torch adapter."""

from __future__ import annotations

import sys
from typing import TextIO

import numpy as np

from .validation import plain

SHOW = ("auto", "always", "never")


class ProgressBar:
    """Draw ``label [#####.....] done/total`` on one line of ``stream``.

    Call the object with ``(done, total)``; ``close()`` ends the line.

    Parameters
    ----------
    label : str
    show : {"auto", "always", "never"}, default "auto"
        ``"auto"`` draws only when ``stream.isatty()`` is true, so a log file or a
        pipe gets no carriage-return clutter; ``"always"`` draws on any stream;
        ``"never"`` writes nothing.
    stream : text stream, default ``sys.stderr``
    width : int, default 30
        Characters of the bar.

    Examples
    --------
    >>> import io
    >>> from abstain._core.progress import ProgressBar
    >>> buf = io.StringIO()  # not a terminal
    >>> bar = ProgressBar("fit", stream=buf, width=4)
    >>> bar(1, 2); bar.close(); buf.getvalue()
    ''
    >>> bar = ProgressBar("fit", show="always", stream=buf, width=4)
    >>> bar(1, 2); bar.close(); buf.getvalue()
    '\\rfit [##..] 1/2\\n'
    """

    def __init__(self, label: str, *, show: str = "auto", stream: TextIO | None = None,
                 width: int = 30) -> None:
        if show not in SHOW:
            raise ValueError(f"show must be one of {', '.join(map(repr, SHOW))}; "
                             f"got {plain(show)}.")
        self.label = label
        self.stream = sys.stderr if stream is None else stream
        self.width = width
        self.show = show
        self.enabled = show == "always" or (show == "auto" and _isatty(self.stream))
        self._drawn = False

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        filled = int(self.width * done / total)
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(f"\r{self.label} [{bar}] {done}/{total}")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """End the bar's line (if anything was drawn)."""
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False


def as_show(progress: bool | str) -> str:
    """A ``progress`` argument as a ``show`` mode: True is ``"always"`` (an explicit request
    draws even when stderr is not a terminal), False is ``"never"``, a mode is itself.

    >>> from abstain._core.progress import as_show
    >>> as_show(True), as_show(False), as_show("auto")
    ('always', 'never', 'auto')
    """
    if isinstance(progress, (bool, np.bool_)):
        return "always" if progress else "never"
    if progress not in SHOW:
        raise ValueError(f"progress must be True, False or one of {', '.join(map(repr, SHOW))}; "
                         f"got {plain(progress)}.")
    return str(progress)


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False
