"""End-to-end demo on scikit-learn's bundled digits: ``abstain demo``.

Trains a logistic regression, scores its uncertainty with the plug-in conditional
risk (MCP under the 0/1 loss), fits each reject model on a calibration split,
evaluates the rules on a test split, prints a table and writes the test
risk-coverage curve as a PNG. Needs the ``sklearn`` and ``plot`` extras.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np

from .._core.files import atomic_path
from .._core.optional import figure, require
from ..metrics import augrc, aurc, e_aurc, risk_coverage_curve
from ..models import BoundedAbstention, BoundedImprovement, CostBased
from ..scores import conditional_risk


def _imports() -> tuple[Any, Any, Any]:
    who = "the demo"
    datasets = require("sklearn.datasets", "sklearn", who)
    linear = require("sklearn.linear_model", "sklearn", who)
    selection = require("sklearn.model_selection", "sklearn", who)
    return datasets.load_digits, linear.LogisticRegression, selection.train_test_split


def run(out_dir: Path, random_state: int = 0) -> list[dict[str, Any]]:
    """Run the demo, print the table, write ``out_dir/risk_coverage.png``; return the rows."""
    load_digits, LogisticRegression, train_test_split = _imports()
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    X_train, X_rest, y_train, y_rest = train_test_split(
        X, y, test_size=0.5, stratify=y, random_state=random_state
    )
    X_cal, X_test, y_cal, y_test = train_test_split(
        X_rest, y_rest, test_size=0.5, stratify=y_rest, random_state=random_state
    )
    clf = LogisticRegression(max_iter=5000).fit(X_train, y_train)

    def score(X_part: np.ndarray, y_part: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pred, risk = conditional_risk(clf.predict_proba(X_part))
        return risk, (clf.classes_[pred] != y_part).astype(float)

    u_cal, loss_cal = score(X_cal, y_cal)
    u_test, loss_test = score(X_test, y_test)
    base_risk = float(loss_test.mean())
    print(f"digits: {len(y_train)} train / {len(y_cal)} calibration / {len(y_test)} test; "
          f"test error without rejection {base_risk:.4f}")
    print(f"uncertainty = plug-in conditional risk (MCP): test AuRC {aurc(loss_test, u_test):.5f}, "
          f"E-AuRC {e_aurc(loss_test, u_test):.5f}, AUGRC {augrc(loss_test, u_test):.5f}\n")

    rules: list[tuple[str, Any]] = [
        ("CostBased(reject_cost=0.1)", CostBased(reject_cost=0.1)),
        ("BoundedAbstention(target_coverage=0.9)", BoundedAbstention(target_coverage=0.9)),
        ("BoundedImprovement(target_risk=0.01)", BoundedImprovement(target_risk=0.01)),
        ("BoundedImprovement(0.02, delta=0.1)", BoundedImprovement(target_risk=0.02, delta=0.1)),
    ]
    rows = []
    header = (
        f"{'reject model':<40} {'cal cov':>8} {'cal risk':>9} {'test cov':>9} {'test risk':>10}"
    )
    print(header)
    print("-" * len(header))
    for name, rule in rules:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rule.fit(u_cal, loss_cal)
        c = rule.accept_proba(u_test)
        test_cov = float(c.mean())
        test_risk = float((c * loss_test).sum() / c.sum()) if c.sum() > 0 else float("nan")
        rows.append({"model": name, "threshold": rule.threshold_, "cal_coverage": rule.coverage_,
                     "cal_risk": rule.risk_, "test_coverage": test_cov, "test_risk": test_risk})
        print(
            f"{name:<40} {rule.coverage_:>8.4f} {rule.risk_:>9.4f} "
            f"{test_cov:>9.4f} {test_risk:>10.4f}"
        )
    print("\nOn the calibration data each rule is also the optimum of the other models:")
    for name, rule in rules[:3]:
        eq = rule.equivalent_
        risk = "no target risk" if eq.target_risk is None else (
            f"target_risk={eq.target_risk[0]:.4g}")
        cost = "no reject cost" if eq.reject_cost is None else (
            "reject_cost in [{:.4g}, {:.4g}]".format(*eq.reject_cost))
        print(f"  {name}: target_coverage={eq.target_coverage:.4f}; {risk}; {cost}")

    out_dir.mkdir(parents=True, exist_ok=True)
    png = out_dir / "risk_coverage.png"
    _plot(risk_coverage_curve(loss_test, u_test), rows, png)
    print(f"\nwrote {png}")
    return rows


def _plot(curve: Any, rows: list[dict[str, Any]], path: Path) -> None:
    fig = figure("the demo plot", figsize=(6, 4))
    ax = fig.add_subplot()
    ax.step(curve.coverage, curve.risk, where="post", label="MCP score (test)")
    for row in rows:
        ax.plot(row["test_coverage"], row["test_risk"], "o", label=row["model"])
    ax.set_xlabel("coverage")
    ax.set_ylabel("selective risk (0/1 loss)")
    ax.set_title("Risk-coverage curve, digits, logistic regression")
    ax.legend(fontsize=7)
    fig.tight_layout()
    with atomic_path(path) as tmp:  # an interrupt leaves the old PNG, never half of one
        fig.savefig(tmp, dpi=120, format="png")

