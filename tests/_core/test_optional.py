"""Every optional import names an extra that pyproject.toml declares, in one message."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import tomllib

from abstain._core.optional import EXTRAS, missing_extra, require

ROOT = Path(__file__).resolve().parents[2]


def _required_extras() -> set[str]:
    """The extras named by every ``require(module, extra, who)`` call in the package."""
    found = set()
    for path in (ROOT / "src" / "abstain").rglob("*.py"):
        found |= set(re.findall(r'require\(\s*"[^"]+",\s*"([^"]+)"', path.read_text()))
    return found


def test_every_extra_a_require_names_has_a_message_and_is_declared():
    # "torchmetrics" and "spark" had no entry: a KeyError while the message was built
    declared = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
                   ["optional-dependencies"])
    named = _required_extras()
    assert {"torchmetrics", "spark", "plot", "dask"} <= named
    assert named <= set(EXTRAS)
    assert set(EXTRAS) <= declared


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_a_missing_module_gets_the_one_line_message(extra):
    with pytest.raises(ImportError, match=rf"^who needs .+: pip install 'abstain\[{extra}\]'"):
        require("no_such_module_here", extra, "who")
    assert str(missing_extra("who", extra)).count("\n") == 0
