"""Networks of the benchmarks, trained once and cached in ``$ABSTAIN_DATA/models``."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def cached_training(path: Path, load: Callable[[Path], Any], train: Callable[[], Any],
                    save: Callable[[Any, Path], None], *, quick: bool, quiet: bool,
                    what: str) -> tuple[Any, float]:
    """``(network, seconds of training)``: ``load(path)`` where ``path`` exists (0 seconds),
    else ``train()``, saved by ``save(network, path)``; a ``quick`` run neither reads nor
    writes the cache."""
    if path.exists() and not quick:
        if not quiet:
            print(f"  {what}: cached {path}", flush=True)
        return load(path), 0.0
    start = time.perf_counter()
    net = train()
    seconds = time.perf_counter() - start
    if not quick:
        path.parent.mkdir(parents=True, exist_ok=True)
        save(net, path)
    if not quiet:
        print(f"  {what}: trained in {seconds:.0f} s", flush=True)
    return net, seconds
