"""Write the figures that docs/plots.md and docs/cli.md show, into docs/figures/.

Run by ``make docs``; the pages link the PNGs, and tests/test_docs_figures.py checks that
every linked figure exists. The data are those of docs/cli.md: 500 rows, 20% OOD, a
conditional-risk score ``risk`` and an OOD score ``distance``.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from abstain import BoundedAbstention
from abstain.app.cli import main
from abstain.models import BoundedTPRFPR
from abstain.plot import (
    GeneralizedRiskCoverageDisplay,
    OODPrecisionRecallDisplay,
    OODRocDisplay,
    RiskAtFPRDisplay,
    RiskCoverageDisplay,
)

DOCS = Path(__file__).resolve().parent
FIGURES = DOCS / "figures"


def _data() -> dict[str, np.ndarray]:
    """The table of docs/cli.md, by running that page's own script."""
    (setup,) = re.findall(r"```python\n(.*?)```", (DOCS / "cli.md").read_text(), flags=re.S)[:1]
    with tempfile.TemporaryDirectory() as tmp:
        code = setup.replace('"predictions.csv"', repr(str(Path(tmp) / "p.csv")))
        here = os.getcwd()
        os.chdir(tmp)  # the page's script writes its other files (parts/) where it runs
        try:
            exec(compile(code, "docs/cli.md", "exec"), {})
        finally:
            os.chdir(here)
        from abstain.app.io import read_table

        return read_table(Path(tmp) / "p.csv")


def _save(fig: Figure, name: str) -> None:
    fig.savefig(FIGURES / name, dpi=90)


def displays(t: dict[str, np.ndarray]) -> None:
    ood = t["is_ood"] == 1
    loss, risk, dist = t["loss"], t["risk"], t["distance"]
    rule = BoundedAbstention(target_coverage=0.8, random_state=0).fit(risk[~ood], loss[~ood])
    fig = Figure(figsize=(10, 4), layout="constrained")
    ax1, ax2 = fig.subplots(1, 2)
    RiskCoverageDisplay.from_predictions(loss[~ood], risk[~ood], name="risk", rule=rule, ax=ax1)
    RiskCoverageDisplay.from_predictions(loss[~ood], dist[~ood], name="distance", ax=ax1,
                                         ls="--", references=("random", "oracle"))
    GeneralizedRiskCoverageDisplay.from_predictions(loss[~ood], risk[~ood], name="risk",
                                                    rule=rule, ax=ax2,
                                                    references=("random", "oracle"))
    _save(fig, "risk_coverage_displays.png")

    both = np.column_stack([risk, dist])
    sel = BoundedTPRFPR(tpr=0.9, fpr=0.2, random_state=0).fit(both, ood, loss)
    fig = Figure(figsize=(15, 4), layout="constrained")
    ax1, ax2, ax3 = fig.subplots(1, 3)
    OODRocDisplay.from_predictions(ood, dist, name="distance", ax=ax1)
    OODRocDisplay.from_predictions(ood, both, name="risk+distance", rule=sel, ax=ax1, ls="--",
                                   references=("random", "oracle"))
    OODPrecisionRecallDisplay.from_predictions(ood, dist, name="distance", ax=ax2,
                                               references=("random",))
    RiskAtFPRDisplay.from_predictions(loss, ood, both, fpr=0.2, name="risk+distance",
                                      rule=sel, ax=ax3, references=("random",))
    _save(fig, "ood_displays.png")


def report() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "predictions.csv"
        from abstain.app.io import write_table

        write_table(csv, _data())
        main(["fit", str(csv), "--score", "risk", "--ood-score", "distance", "--tpr", "0.9",
              "--fpr", "0.2", "-o", str(Path(tmp) / "ood.json")])
        main(["report", str(csv), "--ood-score", "distance", "--rule",
              str(Path(tmp) / "ood.json"), "--quiet", "--png", str(FIGURES / "report"),
              "-o", str(Path(tmp) / "report.html")])


if __name__ == "__main__":
    FIGURES.mkdir(exist_ok=True)
    displays(_data())
    report()
    print(f"wrote {FIGURES}")
