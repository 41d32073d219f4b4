"""A self-contained HTML report of a table's scores: curves, histograms and metrics.

The page embeds its images as base64 PNGs, so it is one file that opens anywhere.
It holds the risk-coverage curve of each score; with an OOD column also the ROC
and PR curves, the risk-coverage curve at an FPR bound and score histograms for
ID/OOD; histograms for correct/wrong ID rows; and the metrics table of
:func:`abstain.tabular.evaluate`. Double-score pairs (an OOD score named in
:func:`abstain.tabular.prepare`) get their column of the table and dashed ROC, PR
and risk-at-FPR curves. Needs the ``plot`` extra (matplotlib).
"""

from __future__ import annotations

import base64
import html
import io
import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from .. import metrics as m
from .._core.optional import figure
from ..plot import plot_pr, plot_risk_at_fpr, plot_risk_coverage, plot_roc, plot_score_histograms
from .evaluate import Evaluation
from .io import atomic_path, check_not_input, write_text
from .tables import Progress, TableData

__all__ = ["report_figures", "html_report", "write_report"]


def _figure(ncols: int = 1) -> tuple[Any, list[Any]]:
    fig = figure("the report", figsize=(5 * ncols, 4), layout="constrained")
    axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
    return fig, axes


def report_figures(data: TableData, *, fpr: float = 0.05,
                   progress: Progress | None = None) -> dict[str, Any]:
    """The report's figures, by name (matplotlib ``Figure`` objects, no pyplot state).

    Names: ``risk_coverage``; with an OOD column holding both classes ``roc``, ``pr``
    and ``risk_at_fpr``; and ``histograms_<score>`` for each score column. The ROC, PR
    and risk-at-FPR figures also draw each double-score pair of
    :attr:`~abstain.tabular.TableData.pairs` (dashed): the best direction at each point.
    """
    ood = data.is_ood
    has_ood = ood is not None and 0 < int(ood.sum()) < ood.size
    id_rows = ~ood if ood is not None else np.ones(data.losses.size, dtype=bool)
    names = list(data.scores)
    pairs = data.pairs if has_ood else {}

    def curves() -> list[tuple[str, Any, dict[str, Any]]]:
        """(label, one or two score columns, line style) of each curve of an OOD figure."""
        out: list[tuple[str, Any, dict[str, Any]]] = [(n, data.scores[n], {}) for n in names]
        out += [(name, data.stacked(cols), {"ls": "--"}) for name, cols in pairs.items()]
        return out

    steps = (4 if has_ood else 1) + len(names)
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, steps)

    figs: dict[str, Any] = {}
    fig, (ax,) = _figure()
    for name in names:
        plot_risk_coverage(m.risk_coverage_curve(data.losses[id_rows], data.scores[name][id_rows]),
                           label=name, ax=ax)
    ax.set_title("risk-coverage curve (ID rows)")
    ax.legend(fontsize=8)
    figs["risk_coverage"] = fig
    tick()
    if has_ood:
        assert ood is not None
        fig, (ax,) = _figure()
        for name, s, style in curves():
            plot_roc(m.ood_roc_curve(ood, s), label=name, ax=ax, **style)
        ax.set_title("ROC curve (ID positive)")
        ax.legend(fontsize=8)
        figs["roc"] = fig
        tick()
        fig, (ax,) = _figure()
        for name, s, style in curves():
            plot_pr(m.ood_pr_curve(ood, s), label=name, ax=ax, **style)
        ax.set_title("PR curve (ID positive)")
        ax.legend(fontsize=8)
        figs["pr"] = fig
        tick()
        fig, (ax,) = _figure()
        for name, s, style in curves():
            curve = m.risk_coverage_curve_at_fpr(data.losses, ood, s, fpr)
            plot_risk_at_fpr(curve, label=name, ax=ax, fpr=fpr, **style)
        ax.set_title(f"least selective risk at FPR <= {fpr:g}")
        ax.legend(fontsize=8)
        figs["risk_at_fpr"] = fig
        tick()
    for name in names:
        s = data.scores[name]
        fig, axes = _figure(2 if has_ood else 1)
        plot_score_histograms(s[id_rows], data.losses[id_rows] > 0,
                              labels=("correct", "wrong"), ax=axes[0])
        axes[0].set_title(f"{name}: correct / wrong (ID rows)")
        if has_ood:
            assert ood is not None
            plot_score_histograms(s, ood, labels=("ID", "OOD"), ax=axes[1])
            axes[1].set_title(f"{name}: ID / OOD")
        figs[f"histograms_{name}"] = fig
        tick()
    return figs


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def _html_table(ev: Evaluation) -> str:
    names = list(ev.metrics)
    head = "".join(f"<th>{html.escape(s)}</th>" for s in names)
    rows = []
    for key, label in ev.labels.items():
        cells = []
        for s in names:
            v = ev.metrics[s].get(key)
            text = "-" if v is None else ("nan" if math.isnan(v) else f"{v:.4f}")
            cells.append(f"<td>{text}</td>")
        rows.append(f"<tr><th>{html.escape(label)}</th>{''.join(cells)}</tr>")
    return (f'<table class="metrics"><thead><tr><th>metric</th>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>")


def html_report(data: TableData, evaluation: Evaluation, *, fpr: float = 0.05,
                title: str = "abstain report", png_dir: str | Path | None = None,
                progress: Progress | None = None, protect: Iterable[str | Path] = ()) -> str:
    """The report as one HTML string with embedded PNG images.

    Parameters
    ----------
    data : TableData
    evaluation : Evaluation
        From :func:`abstain.tabular.evaluate` on the same data.
    fpr : float in [0, 1]
        The FPR bound of the risk-coverage curve at an FPR bound.
    title : str
    png_dir : path, optional
        Also write each figure as ``<png_dir>/<name>.png``.
    progress : callable(done, total), optional
    protect : iterable of paths
        Input files that no PNG may overwrite (``ValueError`` before any is written).
    """
    figs = report_figures(data, fpr=fpr, progress=progress)
    parts = []
    if png_dir is not None:
        for name in figs:
            check_not_input(Path(png_dir) / f"{_safe(name)}.png", protect)
        Path(png_dir).mkdir(parents=True, exist_ok=True)
    for name, fig in figs.items():
        png = _png(fig)
        if png_dir is not None:
            with atomic_path(Path(png_dir) / f"{_safe(name)}.png") as tmp:
                Path(tmp).write_bytes(png)
        data_uri = base64.b64encode(png).decode("ascii")
        parts.append(f'<figure><img alt="{html.escape(name)}" '
                     f'src="data:image/png;base64,{data_uri}"></figure>')
    counts = (f"{evaluation.n_id} ID rows, {evaluation.n_ood} OOD rows"
              + (f", {evaluation.n_dropped} rows dropped for missing values"
                 if evaluation.n_dropped else ""))
    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto}"
             "table.metrics{border-collapse:collapse}"
             "table.metrics td,table.metrics th{border:1px solid #ccc;padding:3px 8px;"
             "text-align:right}figure{display:inline-block;margin:0.5em}"
             "img{max-width:100%}")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{style}</style></head><body>"
            f"<h1>{html.escape(title)}</h1><p>{counts}. A higher score is rejected first.</p>"
            f"<h2>Metrics</h2>{_html_table(evaluation)}"
            f"<h2>Curves and histograms</h2>{''.join(parts)}</body></html>\n")


def write_report(path: str | Path, data: TableData, evaluation: Evaluation,
                 **kwargs: Any) -> None:
    """Write :func:`html_report` to ``path`` atomically (keyword arguments as there).

    ``path`` must not be one of the ``protect`` files either.
    """
    check_not_input(path, kwargs.get("protect", ()))
    write_text(path, html_report(data, evaluation, **kwargs))
