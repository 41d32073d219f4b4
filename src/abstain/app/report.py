"""A self-contained HTML report of a table's scores: summary, metrics, curves, histograms.

The page embeds its images as base64 PNGs and has no script, link or font from
elsewhere, so it is one file that opens anywhere, offline. From the top:

- a summary: the rows, the base error at full coverage, the best score on each
  headline metric (with its bootstrap interval when asked), the operating point of
  a rule given with ``rule=``, and warnings for samples too small to trust;
- the metrics table of :func:`abstain.app.evaluate.evaluate`, every NaN or ``-``
  cell explained in place, and a one-line glossary of the metrics;
- the curves, drawn with :mod:`abstain.plot`'s display objects (the area in the
  legend, random and oracle references, a marker for the rule), each score in its
  own line style and marker so that curves lying on each other stay visible: the
  risk-coverage and generalized risk-coverage curves; with an OOD column the ROC, PR
  and risk-at-FPR curves (double-score pairs dashed);
- per-score histograms (correct/wrong ID rows, ID/OOD rows), in counts with a rug
  of the values when a group is small;
- a provenance footer: the command, the abstain version, the date, and the input
  file's name and SHA-256.

Needs the ``plot`` extra (matplotlib).
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import html
import io
import itertools
import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from .._core.optional import figure
from .._core.version import VERSION
from ..plot import (
    GeneralizedRiskCoverageDisplay,
    OODPrecisionRecallDisplay,
    OODRocDisplay,
    RiskAtFPRDisplay,
    RiskCoverageDisplay,
    plot_score_histograms,
)
from .evaluate import Evaluation, glossary_of
from .io import atomic_path, check_not_input, write_text
from .tables import Progress, TableData

__all__ = ["report_figures", "html_report", "write_report", "sample_warnings", "SMALL_SAMPLE"]

#: Below this many rows a group's histogram is drawn in counts with a rug, and the
#: summary warns that its metrics are noisy.
SMALL_SAMPLE = 30

_STYLES = [{"ls": ls, "marker": mk, "markevery": 0.1, "ms": 4}
           for ls, mk in zip(itertools.cycle(["-", "--", "-.", ":"]),
                             ["o", "s", "^", "D", "v", "P", "X", "*"], strict=False)]


def _style(i: int, *, pair: bool = False) -> dict[str, Any]:
    """The i-th score's line style: line styles and markers cycle together."""
    style = dict(_STYLES[i % len(_STYLES)])
    if pair:
        style["ls"] = "--"
    return style


def _figure(ncols: int = 1) -> tuple[Any, list[Any]]:
    fig = figure("the report", figsize=(5 * ncols, 4), layout="constrained")
    axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
    return fig, axes


def _rule_target(rule: Any, columns: list[str] | None, data: TableData) -> str | None:
    """The score (or pair) name of the table that a rule thresholds, if it has one."""
    if rule is None or not columns:
        return None
    if len(columns) == 1:
        return columns[0] if columns[0] in data.scores else None
    for name, cols in data.pairs.items():
        if list(cols) == list(columns):
            return name
    return None


def report_figures(data: TableData, *, fpr: float = 0.05, rule: Any = None,
                   rule_columns: list[str] | None = None,
                   progress: Progress | None = None) -> dict[str, Any]:
    """The report's figures, by name (matplotlib ``Figure`` objects, no pyplot state).

    Names: ``risk_coverage`` and ``generalized_risk_coverage``; with an OOD column
    holding both classes ``roc``, ``pr`` and ``risk_at_fpr``; and
    ``histograms_<score>`` for each score column. The ROC, PR and risk-at-FPR figures
    also draw each double-score pair of :attr:`~abstain.app.tables.TableData.pairs`
    (dashed): the best direction at each point. A fitted ``rule`` on the score
    ``rule_columns`` is marked at its operating point on these rows.
    """
    ood = data.is_ood
    has_ood = ood is not None and 0 < int(ood.sum()) < ood.size
    id_rows = ~ood if ood is not None else np.ones(data.losses.size, dtype=bool)
    names = list(data.scores)
    pairs = data.pairs if has_ood else {}
    target = _rule_target(rule, rule_columns, data)
    ood_rule = rule is not None and hasattr(rule, "tpr_")

    def curves() -> list[tuple[str, Any, dict[str, Any]]]:
        """(label, one or two score columns, line style) of each curve of an OOD figure."""
        out = [(n, data.scores[n], _style(i)) for i, n in enumerate(names)]
        out += [(name, data.stacked(cols), _style(len(names) + j, pair=True))
                for j, (name, cols) in enumerate(pairs.items())]
        return out

    steps = (5 if has_ood else 2) + len(names)
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, steps)

    figs: dict[str, Any] = {}
    loss_id = data.losses[id_rows]
    display: Any
    for key, display, title in (
            ("risk_coverage", RiskCoverageDisplay, "risk-coverage curve (ID rows)"),
            ("generalized_risk_coverage", GeneralizedRiskCoverageDisplay,
             "generalized risk-coverage curve (ID rows)")):
        fig, (ax,) = _figure()
        for i, name in enumerate(names):
            refs = ("random", "oracle") if i == len(names) - 1 else ()
            marked = rule if (name == target and not ood_rule) else None
            display.from_predictions(loss_id, data.scores[name][id_rows], name=name,
                                     rule=marked, ax=ax, references=refs, **_style(i))
        ax.set_title(title)
        figs[key] = fig
        tick()
    if has_ood:
        assert ood is not None
        for key, display, title in (("roc", OODRocDisplay, "ROC curve (ID positive)"),
                                    ("pr", OODPrecisionRecallDisplay,
                                     "PR curve (ID positive)")):
            fig, (ax,) = _figure()
            items = curves()
            for i, (name, s, style) in enumerate(items):
                refs = ("random", "oracle") if i == len(items) - 1 else ()
                marked = rule if (name == target and ood_rule) else None
                display.from_predictions(ood, s, name=name, rule=marked, ax=ax,
                                         references=refs, **style)
            ax.set_title(title)
            figs[key] = fig
            tick()
        fig, (ax,) = _figure()
        items = curves()
        for i, (name, s, style) in enumerate(items):
            # the rule is on this curve only if it keeps FPR <= fpr on these rows
            marked = rule if (name == target and ood_rule
                              and float(np.mean(rule.accept_proba(s)[ood])) <= fpr) else None
            RiskAtFPRDisplay.from_predictions(data.losses, ood, s, fpr=fpr, name=name,
                                              rule=marked, ax=ax,
                                              references=("random",) if i == len(items) - 1
                                              else (), **style)
        ax.set_title(f"least selective risk at FPR <= {fpr:g}")
        figs["risk_at_fpr"] = fig
        tick()
    for name in names:
        s = data.scores[name]
        fig, axes = _figure(2 if has_ood else 1)
        plot_score_histograms(s[id_rows], data.losses[id_rows] > 0,
                              labels=("correct", "wrong"), ax=axes[0], small=SMALL_SAMPLE)
        axes[0].set_title(f"{name}: correct / wrong (ID rows)")
        if has_ood:
            assert ood is not None
            plot_score_histograms(s, ood, labels=("ID", "OOD"), ax=axes[1],
                                  small=SMALL_SAMPLE)
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


def _cell(ev: Evaluation, score: str, key: str, notes: list[str]) -> str:
    """One table cell: the value with its interval, or a marked explanation."""
    v = ev.metrics[score].get(key)
    why = ev.notes.get(score, {}).get(key)
    if v is None or math.isnan(v):
        text = "-" if v is None else "nan"
        if why is None:
            return f"<td>{text}</td>"
        if why not in notes:
            notes.append(why)
        k = notes.index(why) + 1
        return (f'<td class="note" title="{html.escape(why)}">{text}'
                f'<sup><a href="#note-{k}">{k}</a></sup></td>')
    iv = ev.intervals.get(score, {}).get(key)
    ci = "" if iv is None or math.isnan(iv[0]) else \
        f'<br><span class="ci">[{iv[0]:.4f}, {iv[1]:.4f}]</span>'
    return f"<td>{v:.4f}{ci}</td>"


def _html_table(ev: Evaluation) -> str:
    names = list(ev.metrics)
    head = "".join(f"<th>{html.escape(s)}</th>" for s in names)
    notes: list[str] = []
    rows = []
    for key, label in ev.labels.items():
        cells = "".join(_cell(ev, s, key, notes) for s in names)
        rows.append(f"<tr><th>{html.escape(label)}</th>{cells}</tr>")
    table = (f'<div class="scroll"><table class="metrics"><thead><tr><th>metric</th>{head}'
             f"</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")
    if ev.intervals:
        table += (f'<p class="small">Under each value: its {ev.level:.0%} bootstrap percentile '
                  f"interval (rows resampled, ID and OOD apart).</p>")
    if notes:
        items = "".join(f'<li id="note-{k}">{html.escape(t)}</li>'
                        for k, t in enumerate(notes, start=1))
        table += f'<ol class="small notes">{items}</ol>'
    lines = dict.fromkeys(glossary_of(key) for key in ev.labels if glossary_of(key))
    glossary = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    return table + f'<ul class="small glossary">{glossary}</ul>'


#: Headline metrics of the summary: key prefix, display name, whether higher is better.
_HEADLINE = (("aurc", "AuRC", False), ("auroc", "AUROC", True), ("risk@tpr", None, False))


def _best(ev: Evaluation) -> list[str]:
    """'the best score on each headline metric' lines of the summary."""
    out = []
    for prefix, shown, higher in _HEADLINE:
        key = next((k for k in ev.labels if k.split(",")[0] == prefix
                    or (prefix == "risk@tpr" and k.startswith(prefix))), None)
        if key is None:
            continue
        vals = {s: d[key] for s, d in ev.metrics.items()
                if key in d and not math.isnan(d[key])}
        label = shown or ev.labels[key]
        if not vals:
            why = next(iter(ev.notes.get(s, {}).get(key, "") for s in ev.metrics), "")
            out.append(f"{html.escape(label)}: no score has a value ({html.escape(why)})")
            continue
        pick = max if higher else min
        best = pick(vals, key=lambda s: vals[s])
        tied = [s for s, v in vals.items() if v == vals[best]]
        iv = ev.intervals.get(best, {}).get(key)
        ci = "" if iv is None or math.isnan(iv[0]) else f" [{iv[0]:.4f}, {iv[1]:.4f}]"
        who = ", ".join(f"<strong>{html.escape(s)}</strong>" for s in tied)
        out.append(f"{html.escape(label)}: {who} with {vals[best]:.4f}{ci}"
                   + (" (tied)" if len(tied) > 1 else ""))
    return out


def _rule_line(rule: Any, columns: list[str] | None, data: TableData) -> str:
    """The operating point of a rule on the report's rows."""
    kind = type(rule).__name__
    on = ", ".join(columns or [])
    target = _rule_target(rule, columns, data)
    if target is None:
        return (f"{html.escape(kind)} on {html.escape(on)}: the report's table has no such "
                "score column; it is not marked.")
    ood = data.is_ood
    scores = data.stacked(list(columns or [])) if len(columns or []) > 1 else data.scores[target]
    c = np.asarray(rule.accept_proba(scores), dtype=np.float64)
    id_rows = ~ood if ood is not None else np.ones(c.size, dtype=bool)
    kept = float(c[id_rows].sum())
    risk = float(c[id_rows] @ data.losses[id_rows]) / kept if kept > 0 else math.nan
    parts = [f"coverage of ID rows {c[id_rows].mean():.4f}", f"selective risk {risk:.4f}"]
    if ood is not None and ood.any():
        parts.append(f"OOD rows accepted {c[ood].mean():.4f}")
    return f"rule {html.escape(kind)} on <strong>{html.escape(on)}</strong>: " + ", ".join(parts)


def sample_warnings(data: TableData, ev: Evaluation) -> list[str]:
    """Samples too small to trust the curves and metrics drawn from them."""
    out = []
    id_rows = ~data.is_ood if data.is_ood is not None else np.ones(data.losses.size, bool)
    wrong = int((data.losses[id_rows] > 0).sum())
    for count, what in ((ev.n_id, "in-distribution row(s)"), (wrong, "ID row(s) with a loss"),
                        (ev.n_ood, "OOD row(s)")):
        if 0 < count < SMALL_SAMPLE:
            out.append(f"only {count} {what}: the curves and metrics that use them are "
                       "noisy" + (" and a curve of one row is a single point" if count == 1
                                  else "") + "; their histograms are drawn in counts.")
    if wrong == 0:
        out.append("no ID row has a loss: every ranking has the same risk-coverage curve "
                   "(zero risk).")
    return out


def _summary(data: TableData, ev: Evaluation, rule: Any, rule_columns: list[str] | None) -> str:
    id_rows = ~data.is_ood if data.is_ood is not None else np.ones(data.losses.size, bool)
    base = float(data.losses[id_rows].mean())
    rows = (f"{ev.n_id + ev.n_ood} rows: {ev.n_id} ID, {ev.n_ood} OOD"
            + (f"; {ev.n_dropped} dropped for missing values" if ev.n_dropped else ""))
    items = [rows, f"base error (mean loss of ID rows at full coverage): {base:.4f}",
             *(f"best {line}" for line in _best(ev))]
    if rule is not None:
        items.append(_rule_line(rule, rule_columns, data))
    lis = "".join(f"<li>{item}</li>" for item in items)
    warn = "".join(f'<li class="warn">{html.escape(w)}</li>' for w in sample_warnings(data, ev))
    return (f'<section class="summary"><h2>Summary</h2><ul>{lis}{warn}</ul>'
            "<p class=\"small\">A higher score is rejected first.</p></section>")


def _sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _footer(provenance: dict[str, Any] | None) -> str:
    prov = dict(provenance or {})
    when = prov.get("date") or datetime.datetime.now(datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M:%S UTC")
    items = [f"abstain {html.escape(VERSION)}", f"written {html.escape(when)}"]
    if prov.get("command"):
        items.insert(0, f"<code>{html.escape(prov['command'])}</code>")
    if prov.get("input"):
        path = Path(prov["input"])
        items.append(f"input {html.escape(path.name)}, SHA-256 "
                     f"<code>{_sha256(path)}</code>")
    return f'<footer class="small">{" &middot; ".join(items)}</footer>'


_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:1100px;margin:1.5em auto;padding:0 1em;"
    "line-height:1.4;color:#222}"
    "h1{font-size:1.5em;overflow-wrap:anywhere}"
    ".scroll{overflow-x:auto}"
    "table.metrics{border-collapse:collapse}"
    "table.metrics td,table.metrics th{border:1px solid #ccc;padding:3px 8px;"
    "text-align:right;vertical-align:top}"
    "table.metrics thead th{overflow-wrap:anywhere}"
    ".ci{color:#666;font-size:0.8em;white-space:nowrap}"
    "td.note{color:#666}"
    ".small{font-size:0.85em;color:#555}"
    ".summary li.warn{color:#8a4b00}"
    "figure{display:inline-block;margin:0.5em 0;max-width:100%}"
    "img{max-width:100%;height:auto}"
    "footer{margin-top:2em;border-top:1px solid #ddd;padding-top:0.5em;"
    "overflow-wrap:anywhere}"
)


def html_report(data: TableData, evaluation: Evaluation, *, fpr: float = 0.05,
                title: str = "abstain report", png_dir: str | Path | None = None,
                progress: Progress | None = None, protect: Iterable[str | Path] = (),
                rule: Any = None, rule_columns: list[str] | None = None,
                provenance: dict[str, Any] | None = None) -> str:
    """The report as one HTML string with embedded PNG images.

    Parameters
    ----------
    data : TableData
    evaluation : Evaluation
        From :func:`abstain.app.evaluate.evaluate` on the same data (with
        ``n_bootstrap`` for intervals in the table and the summary).
    fpr : float in [0, 1]
        The FPR bound of the risk-coverage curve at an FPR bound.
    title : str
    png_dir : path, optional
        Also write each figure as ``<png_dir>/<name>.png``.
    progress : callable(done, total), optional
    protect : iterable of paths
        Input files that no PNG may overwrite (``ValueError`` before any is written).
    rule, rule_columns : fitted rule and its score columns, optional
        As :func:`abstain.app.rules.load_rule` returns them: the rule's operating point
        on these rows is given in the summary and marked on its curves.
    provenance : dict, optional
        ``command`` (the command line), ``input`` (the input file: its name and SHA-256
        go in the footer) and ``date`` (default: now, UTC).
    """
    figs = report_figures(data, fpr=fpr, rule=rule, rule_columns=rule_columns,
                          progress=progress)
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
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
            f"<h1>{html.escape(title)}</h1>{_summary(data, evaluation, rule, rule_columns)}"
            f"<h2>Metrics</h2>{_html_table(evaluation)}"
            f"<h2>Curves and histograms</h2>{''.join(parts)}"
            f"{_footer(provenance)}</body></html>\n")


def write_report(path: str | Path, data: TableData, evaluation: Evaluation,
                 **kwargs: Any) -> None:
    """Write :func:`html_report` to ``path`` atomically (keyword arguments as there).

    ``path`` must not be one of the ``protect`` files either.
    """
    check_not_input(path, kwargs.get("protect", ()))
    write_text(path, html_report(data, evaluation, **kwargs))
