"""A tiny progress bar on stderr, for the command line."""

from __future__ import annotations

import sys
from typing import TextIO


class ProgressBar:
    """Draw ``label [#####.....] done/total`` on one line of ``stream``.

    Call the object with ``(done, total)``; ``close()`` ends the line. With
    ``quiet=True`` nothing is written.
    """

    def __init__(self, label: str, *, quiet: bool = False, stream: TextIO | None = None,
                 width: int = 30) -> None:
        self.label = label
        self.quiet = quiet
        self.stream = sys.stderr if stream is None else stream
        self.width = width
        self._drawn = False

    def __call__(self, done: int, total: int) -> None:
        if self.quiet or total <= 0:
            return
        filled = int(self.width * done / total)
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(f"\r{self.label} [{bar}] {done}/{total}")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False
