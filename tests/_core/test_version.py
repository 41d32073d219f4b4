"""The version is stated in the package and in pyproject.toml, and the changelog has its entry."""

import re
from pathlib import Path

import abstain
from abstain._core.version import VERSION

ROOT = Path(__file__).resolve().parents[2]


def test_version_is_0_2_0():
    assert VERSION == "0.2.0" and abstain.__version__ == VERSION


def test_pyproject_states_the_same_version():
    # read as text: tomllib is not in Python 3.10, which the package supports
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.findall(r'^version = "([^"]+)"$', text, flags=re.MULTILINE) == [VERSION]


def test_changelog_has_an_entry_for_the_version():
    lines = (ROOT / "docs" / "changelog.md").read_text(encoding="utf-8").splitlines()
    assert f"## {VERSION}" in lines
