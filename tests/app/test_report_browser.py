"""The HTML report as a browser renders it: Debian's Chromium, headless.

Skipped when Chromium is absent; ``make report-check`` installs it and runs this file. The
page is loaded from disk with a probe script added to a copy (the report itself has none):
no error event or console error, every image decoded, and no horizontal scrolling at a
phone's width. Screenshots at 1280 px and 390 px are kept under ``out/``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from abstain.app.cli import main
from abstain.app.io import write_table

pytest.importorskip("matplotlib")

CHROMIUM = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser")) if p),
                None)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Debian's chromium is not installed: `make report-check` installs it (apt-get "
           "install chromium) and runs this check",
)
OUT = Path(__file__).resolve().parents[2] / "out"

PROBE = """<script>
window.__errors = [];
window.addEventListener("error", function (e) {
  window.__errors.push(String(e.message || (e.target && e.target.alt) || e.type));
}, true);
var origError = console.error;
console.error = function () {
  window.__errors.push(Array.prototype.join.call(arguments, " "));
  origError.apply(console, arguments);
};
window.addEventListener("load", function () {
  var imgs = Array.prototype.slice.call(document.images);
  var pre = document.createElement("pre");
  pre.id = "__probe";
  pre.textContent = JSON.stringify({
    images: imgs.length,
    broken: imgs.filter(function (i) { return !(i.complete && i.naturalWidth > 0); })
                .map(function (i) { return i.alt; }),
    errors: window.__errors,
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth
  });
  document.body.appendChild(pre);
});
</script>"""


def _chromium(*args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                           "--hide-scrollbars", *args], capture_output=True, text=True,
                          timeout=120, check=False)


def _probe(page: Path, width: int) -> dict:
    done = _chromium(f"--window-size={width},900", "--virtual-time-budget=10000",
                     "--dump-dom", page.as_uri())
    found = re.search(r'<pre id="__probe">(.*?)</pre>', done.stdout, re.S)
    assert found, f"no probe output; chromium said: {done.stderr[-2000:]}"
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("browser")
    rng = np.random.default_rng(0)
    n = 400
    ood = rng.random(n) < 0.25
    risk = rng.beta(1, 5, n)
    loss = np.where(ood, np.nan, (rng.random(n) < risk).astype(float))
    write_table(folder / "p.csv", {"loss": loss, "risk": risk.round(3),
                                   "distance": rng.normal(2.0 * ood, 1.0).round(2),
                                   "is_ood": ood.astype(float)})
    assert main(["fit", str(folder / "p.csv"), "--score", "risk", "--ood-score", "distance",
                 "--tpr", "0.8", "--fpr", "0.4", "-o", str(folder / "rule.json")]) == 0
    assert main(["report", str(folder / "p.csv"), "--ood-score", "distance", "--rule",
                 str(folder / "rule.json"), "--bootstrap", "10", "--quiet", "-o",
                 str(folder / "report.html")]) == 0
    page = folder / "report.html"
    probe = folder / "probe.html"
    probe.write_text(page.read_text(encoding="utf-8").replace("<head>", "<head>" + PROBE, 1),
                     encoding="utf-8")
    return page, probe


@pytest.mark.parametrize("width", [1280, 390])
def test_no_errors_every_image_loads_and_nothing_overflows(report, width):
    _, probe = report
    result = _probe(probe, width)
    assert result["errors"] == []
    assert result["images"] == 7 and result["broken"] == []
    assert result["scrollWidth"] <= result["innerWidth"], result


@pytest.mark.parametrize("width", [1280, 390])
def test_screenshot_is_kept_under_out(report, width):
    page, _ = report
    OUT.mkdir(exist_ok=True)
    shot = OUT / f"report-{width}px.png"
    done = _chromium(f"--window-size={width},2400", f"--screenshot={shot}", page.as_uri())
    assert shot.is_file() and shot.stat().st_size > 10_000, done.stderr[-2000:]
