"""Root pytest configuration: skip what needs an optional extra that is not installed."""

from __future__ import annotations

import importlib.util

collect_ignore: list[str] = []
if importlib.util.find_spec("torch") is None:  # the torch extra (abstain.torch)
    collect_ignore += ["src/abstain/torch", "docs/torch.md", "tests/torch_adapter"]
