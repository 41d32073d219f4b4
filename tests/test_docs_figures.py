"""Every image that a docs page links exists (docs/make_figures.py writes them: make docs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = sorted(DOCS.glob("*.md"))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_linked_images_exist(page):
    for target in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", page.read_text(encoding="utf-8")):
        assert (page.parent / target).is_file(), f"{page.name} links {target}: run make docs"


def test_plots_page_shows_the_figures():
    text = (DOCS / "plots.md").read_text(encoding="utf-8")
    assert "figures/ood_displays.png" in text and "figures/risk_coverage_displays.png" in text
