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

A source too large for memory (a directory of parts, a glob, ``--chunk-rows``) gives the
same page from its score tables (:class:`abstain.app.chunks.Summary`): the metrics, the
curves of each score column and the histograms are exact, and memory is bounded by the
chunk and the distinct scores. A double-score pair gets its risk at TPR/FPR and a
double-score rule its operating point from the pair's :class:`abstain.PairTable`; the
pair's envelope metrics and curves, and bootstrap intervals, need every row at once; the
page says so in its summary (:data:`CHUNKED_NOTE`).

Needs the ``plot`` extra (matplotlib).
"""

from __future__ import annotations

import base64
import datetime
import errno
import hashlib
import html
import io
import itertools
import math
import os
import re
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from .. import metrics as m
from .._core.optional import figure
from .._core.parallel import check_jobs, ordered_map
from .._core.version import VERSION
from ..models import REJECT_RULES
from ..plot import (
    GeneralizedRiskCoverageDisplay,
    OODPrecisionRecallDisplay,
    OODRocDisplay,
    RiskAtFPRDisplay,
    RiskCoverageDisplay,
    plot_score_histograms,
)
from .chunks import Summary
from .data import Rows, Tables, as_data
from .evaluate import Evaluation, glossary_of, inverted_warnings
from .io import atomic_files, atomic_path_and_files, check_not_input, os_error, write_text
from .tables import Progress, TableData

__all__ = ["report_figures", "html_report", "write_report", "sample_warnings", "png_names",
           "SMALL_SAMPLE", "CHUNKED_NOTE", "NO_TPR"]

#: Below this many rows a group's histogram is drawn in counts with a rug, and the
#: summary warns that its metrics are noisy.
SMALL_SAMPLE = 30

#: What the risk-at-FPR panel says when not even its first TPR target (0.01) can be met at
#: the FPR bound.
NO_TPR = ("no TPR of 0.01 or more is reachable at FPR <= {fpr:g}:\nevery rule that keeps "
          "at least 1% of the ID rows\naccepts more than {fpr:g} of the OOD rows")

_STYLES = [{"ls": ls, "marker": mk, "markevery": 0.1, "ms": 4}
           for ls, mk in zip(itertools.cycle(["-", "--", "-.", ":"]),
                             ["o", "s", "^", "D", "v", "P", "X", "*"], strict=False)]


def _style(i: int, *, pair: bool = False) -> dict[str, Any]:
    """The i-th score's line style: line styles and markers cycle together."""
    style = dict(_STYLES[i % len(_STYLES)])
    if pair:
        style["ls"] = "--"
    return style


def _figure(nrows: int = 1, *, fixed: bool = False) -> tuple[Any, list[Any]]:
    """A figure of ``nrows`` axes stacked (so that a phone's width keeps its text
    readable): laid out by matplotlib's constrained layout, or with ``fixed=True`` in fixed
    margins (for the per-score histograms, whose labels have one shape: the layout pass
    would cost about a third of drawing each)."""
    height = 4.0 if nrows == 1 else 3.4 * nrows
    fig = figure("the report", figsize=(5, height), layout=None if fixed else "constrained")
    if fixed:
        fig.subplots_adjust(left=0.14, right=0.97, bottom=0.52 / height,
                            top=1 - 0.36 / height, hspace=0.55)
    axes = [fig.add_subplot(nrows, 1, i + 1) for i in range(nrows)]
    return fig, axes


#: A curve figure's legend with more entries than this goes below its axes, in two columns,
#: and the figure grows to hold it (inside the axes it would squash them to nothing).
LEGEND_INSIDE = 10
#: Height of a row of the legend below the axes, inches (font size 7).
_LEGEND_ROW = 0.16


def _legend_below(fig: Any, ax: Any) -> None:
    """Move ``ax``'s legend below the axes in two columns when it has more than
    :data:`LEGEND_INSIDE` entries, adding its rows to the figure's height."""
    legend = ax.get_legend()
    if legend is None:
        return
    handles, labels = ax.get_legend_handles_labels()
    if len(labels) <= LEGEND_INSIDE:
        return
    legend.remove()
    width, height = fig.get_size_inches()
    fig.set_size_inches(width, height + (len(labels) + 1) // 2 * _LEGEND_ROW + 0.3)
    fig.legend(handles, labels, loc="outside lower center", ncols=2, fontsize=7)


#: The coverage above which the report zooms a risk-coverage figure whose curves lie flat
#: below it (a confident model's errors are all in the last tenth of coverage).
ZOOM_FROM = 0.9


def _zoom_high_coverage(ax: Any) -> None:
    """Add an inset of coverage ``[ZOOM_FROM, 1]`` when every curve's risk up to that
    coverage is under a third of its risk at full coverage (the curves are then squashed
    against the axis); the inset redraws every line there, on its own scale."""
    lines = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 1
             and ln.get_label() not in ("random", "oracle")]
    if not lines:
        return
    squashed = True
    for ln in lines:
        x, y = (np.asarray(v, dtype=np.float64) for v in ln.get_data())
        full = y[np.argmax(x)]
        low = y[x <= ZOOM_FROM]
        if not (full > 0 and low.size and np.nanmax(low) <= full / 3):
            squashed = False
            break
    if not squashed:
        return
    inset = ax.inset_axes((0.12, 0.5, 0.45, 0.4))
    legend = ax.get_legend()
    if legend is not None:  # below the inset, where the curves lie flat
        legend.set_loc("lower left")
    top = 0.0
    for ln in ax.get_lines():
        x, y = (np.asarray(v, dtype=np.float64) for v in ln.get_data())
        keep = x >= ZOOM_FROM - 0.005
        if keep.any():
            inset.plot(x[keep], y[keep], color=ln.get_color(), ls=ln.get_linestyle(),
                       marker=ln.get_marker(), ms=3, lw=ln.get_linewidth())
            top = max(top, float(np.nanmax(y[keep])))
    inset.set_xlim(ZOOM_FROM, 1.0)
    inset.set_ylim(0.0, top * 1.05 if top > 0 else 1.0)
    inset.set_title(f"coverage {ZOOM_FROM:g}-1, zoomed", fontsize=8)
    inset.tick_params(labelsize=7)
    ax.indicate_inset_zoom(inset, edgecolor="#888")


def _rule_target(rule: Any, columns: list[str] | None, src: Rows | Tables) -> str | None:
    """The score (or pair) name of the table that a rule thresholds, if it has one."""
    if rule is None or not columns:
        return None
    if len(columns) == 1:
        return columns[0] if columns[0] in src.names else None
    for name, cols in src.pairs.items():
        if list(cols) == list(columns):
            return name
    return None


def report_figures(data: TableData | Summary, *, fpr: float = 0.05, rule: Any = None,
                   rule_columns: list[str] | None = None,
                   progress: Progress | None = None, search: str = "auto",
                   resampled: bool = False) -> dict[str, Any]:
    """The report's figures, by name (matplotlib ``Figure`` objects, no pyplot state).

    Names: ``risk_coverage`` and ``generalized_risk_coverage``; with an OOD column
    holding both classes ``roc``, ``pr`` and ``risk_at_fpr``; and
    ``histograms_<score>`` for each score column. The ROC, PR and risk-at-FPR figures
    also draw each double-score pair of :attr:`~abstain.app.tables.TableData.pairs`
    (dashed): the best direction at each point, searched as ``search`` says (as in
    :func:`abstain.metrics.evaluate_ood`, so that the areas in the legends are those of
    the table; ``resampled``: the table's values were bootstrapped, so ``"auto"`` means the
    grid of the standardised columns at every size, as :func:`~abstain.app.evaluate.evaluate`
    computes them then). A fitted ``rule`` on the score ``rule_columns`` is marked at its
    operating point on these rows.

    ``data`` may also be the :class:`~abstain.app.chunks.Summary` of a source read in
    chunks: every figure is then drawn from its score tables, exactly as from the rows
    (the histograms from the rows per distinct score; ``summarise(..., wrong=True)`` for
    losses other than 0/1), with no double-score pair.
    """
    makers = _figure_makers(data, fpr=fpr, rule=rule, rule_columns=rule_columns,
                            search=search, resampled=resampled)
    figs: dict[str, Any] = {}
    for name, make in makers.items():
        figs[name] = make()
        if progress is not None:
            progress(len(figs), len(makers))
    return figs


class _AcceptedOn:
    """A rule's acceptance of the rows' own columns, whatever columns a curve is computed
    on (a pair's standardised columns): what marks its operating point there."""

    def __init__(self, rule: Any, columns: Any) -> None:
        self._c = np.asarray(rule.accept_proba(columns), dtype=np.float64)

    def accept_proba(self, scores: Any) -> Any:
        return self._c


def _figure_makers(data: TableData | Summary, *, fpr: float, rule: Any,
                   rule_columns: list[str] | None, search: str,
                   resampled: bool = False) -> dict[str, Any]:
    """What draws each figure of :func:`report_figures`, by name: a function of no
    argument that returns the ``Figure`` (so that figures can be drawn apart)."""
    src = as_data(data)
    names = src.names
    target = _rule_target(rule, rule_columns, src)
    spec = REJECT_RULES.get(type(rule).__name__) if rule is not None else None
    ood_rule = spec is not None and spec.ood  # a rule fitted with the OOD column

    def styled() -> list[tuple[str, Any, Any, dict[str, Any]]]:
        """(label, what to draw, the rule marked on it or None, line style) of each curve
        of an OOD figure: a pair's columns as the table's search computed them."""
        out = []
        for i, (name, source, pair) in enumerate(src.ood_sources()):
            marked = rule if (name == target and ood_rule) else None
            style = _style(i, pair=pair)
            if pair:
                _, columns, style["search"] = m.resolve_search(source, search,
                                                               resampled=resampled)
                if marked is not None:
                    marked = _AcceptedOn(marked, source)
                source = columns
            out.append((name, source, marked, style))
        return out

    def selective(display: Any, title: str) -> Any:
        fig, (ax,) = _figure()
        for i, name in enumerate(names):
            refs = ("random", "oracle") if i == len(names) - 1 else ()
            marked = rule if (name == target and not ood_rule) else None
            src.selective(display, name, rule=marked, ax=ax, references=refs,
                          legend=i == len(names) - 1, **_style(i))
        ax.set_title(title)
        _zoom_high_coverage(ax)
        _legend_below(fig, ax)
        return fig

    def ood_curve(display: Any, title: str) -> Any:
        fig, (ax,) = _figure()
        items = styled()
        for i, (name, source, marked, style) in enumerate(items):
            refs = ("random", "oracle") if i == len(items) - 1 else ()
            src.ood_curve(display, source, name=name, rule=marked, ax=ax,
                          references=refs, legend=i == len(items) - 1, **style)
        ax.set_title(title)
        _legend_below(fig, ax)
        return fig

    def risk_at_fpr() -> Any:
        fig, (ax,) = _figure()
        items = styled()
        reachable = False
        for i, (name, source, marked, style) in enumerate(items):
            # the rule is on this curve only if it keeps FPR <= fpr on these rows
            if marked is not None and src.ood_accepted(marked, source) > fpr:
                marked = None
            last = i == len(items) - 1
            d = src.at_fpr(RiskAtFPRDisplay, source, fpr, name=name, rule=marked, ax=ax,
                           references=("random",) if last else (), legend=last, **style)
            reachable = reachable or d.reachable
        ax.set_title(f"least selective risk at FPR <= {fpr:g}")
        if not reachable:
            ax.text(0.5, 0.5, NO_TPR.format(fpr=fpr), transform=ax.transAxes, ha="center",
                    va="center", wrap=True, bbox={"fc": "white", "ec": "#8a4b00"})
        _legend_below(fig, ax)
        return fig

    def histograms(name: str) -> Any:
        fig, axes = _figure(2 if src.has_ood else 1, fixed=True)  # stacked
        for ax, (values, groups, weights), labels in zip(
                axes, src.histograms(name), (("correct", "wrong"), ("ID", "OOD")), strict=False):
            plot_score_histograms(values, groups, weights=weights, labels=labels, ax=ax,
                                  small=SMALL_SAMPLE)
        axes[0].set_title(f"{name}: correct / wrong (ID rows)")
        if src.has_ood:
            axes[1].set_title(f"{name}: ID / OOD")
        return fig

    makers: dict[str, Any] = {
        "risk_coverage": lambda: selective(RiskCoverageDisplay,
                                           "risk-coverage curve (ID rows)"),
        "generalized_risk_coverage": lambda: selective(
            GeneralizedRiskCoverageDisplay, "generalized risk-coverage curve (ID rows)")}
    if src.has_ood:
        makers["roc"] = lambda: ood_curve(OODRocDisplay, "ROC curve (ID positive)")
        makers["pr"] = lambda: ood_curve(OODPrecisionRecallDisplay, "PR curve (ID positive)")
        makers["risk_at_fpr"] = risk_at_fpr
    for name in names:
        makers[f"histograms_{name}"] = lambda name=name: histograms(name)
    return makers


#: matplotlib's settings are the process's: reports drawn in several threads at once restored
#: each other's ``text.parse_math``, which stayed False; they draw one after the other.
_DRAWING = threading.Lock()
os.register_at_fork(after_in_child=lambda: globals().update(_DRAWING=threading.Lock()))


def _drawn(make: Any) -> bytes:
    """The PNG of the figure ``make()`` builds, with every text as written: a column named
    ``cost $5 and $6`` is no formula (and ``$\frac{$`` no parse error)."""
    import matplotlib

    with _DRAWING, matplotlib.rc_context({"text.parse_math": False}):
        return _png(make())


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()


def png_names(names: Iterable[str]) -> dict[str, str]:
    """The PNG file name of each figure of :func:`report_figures`, unique in one report.

    The name with each run of characters other than ASCII letters, digits, ``_``, ``.``
    and ``-`` replaced by ``_`` (cut to 100 characters), then ``.png``. When that changed
    the name, or an earlier figure has the same file name ignoring case (as on macOS and
    Windows), ``-`` and the first 8 hexadecimal digits of the name's SHA-256 (UTF-8) come
    before ``.png``; ``-2``, ``-3``... if still taken. The same names in the same order
    always get the same files.

    Examples
    --------
    >>> from abstain.app.report import png_names
    >>> for name, file in png_names(["roc", "histograms_a b", "histograms_a_b"]).items():
    ...     print(f"{name!r}: {file}")
    'roc': roc.png
    'histograms_a b': histograms_a_b-d763d88a.png
    'histograms_a_b': histograms_a_b.png
    """
    used: set[str] = set()
    out = {}
    for name in names:
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:100]
        if stem != name or stem.casefold() in used:
            stem += "-" + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        base, k = stem, 2
        while stem.casefold() in used:
            stem, k = f"{base}-{k}", k + 1
        used.add(stem.casefold())
        out[name] = f"{stem}.png"
    return out


def _cell(ev: Evaluation, score: str, key: str, notes: list[str]) -> str:
    """One table cell: the value with its interval, or a marked explanation."""
    v = ev.metrics[score].get(key)
    why = ev.notes.get(score, {}).get(key)
    mark = ""
    if why is not None:  # why a cell is empty, or what a value is (a pair's envelope)
        if why not in notes:
            notes.append(why)
        k = notes.index(why) + 1
        mark = f' <sup>[<a href="#note-{k}">note {k}</a>]</sup>'
    if v is None or math.isnan(v):
        text = "n/a" if v is None else "nan"  # not applicable, or undefined / infeasible
        if why is None:
            return f"<td>{text}</td>"
        return f'<td class="note" title="{html.escape(why)}">{text}{mark}</td>'
    iv = ev.intervals.get(score, {}).get(key)
    ci = "" if iv is None or math.isnan(iv[0]) else \
        f'<br><span class="ci">[{iv[0]:.4f}, {iv[1]:.4f}]</span>'
    if why is None:
        return f"<td>{v:.4f}{ci}</td>"
    return f'<td class="note" title="{html.escape(why)}">{v:.4f}{mark}{ci}</td>'


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
        table += (f'<p class="small">Under each value: its {100 * ev.level:.12g}% bootstrap '
                  f"percentile interval (rows resampled, ID and OOD apart).</p>")
    if notes:
        items = "".join(f'<li id="note-{k}">{html.escape(t)}</li>'
                        for k, t in enumerate(notes, start=1))
        table += (f'<p class="small">Notes on the cells marked [note k]: n/a, a metric that '
                  f'does not apply to that column; nan, one with no value there.</p>'
                  f'<ol class="small notes">{items}</ol>')
    lines = dict.fromkeys(glossary_of(key) for key in ev.labels if glossary_of(key))
    glossary = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    return table + f'<ul class="small glossary">{glossary}</ul>'


#: How the summary names a pair's envelope value beside the best single score.
ENVELOPE_BEST = ("{label} of a pair's envelope (an oracle: the best direction at each point, "
                 "chosen on these rows, not one rule)")


def _best(ev: Evaluation) -> list[str]:
    """'the best score on each headline metric' lines of the summary: each metric of the
    registry with ``headline`` set, at its first entry in the table, best by its
    direction. A pair's envelope value (a metric with ``pair="envelope"``) is an oracle over
    directions, not the value of one detector: it is named on a line of its own, never as
    the best score."""
    out = []
    for spec in m.METRICS.values():
        key = next((k for k in ev.labels if spec.headline and spec.matches(k)), None)
        if key is None:
            continue
        envelope = spec.pair == "envelope"
        label = ev.labels[key]
        groups = [(label, {s: d for s, d in ev.metrics.items()
                           if not (envelope and s in ev.pairs)})]
        if envelope and ev.pairs:
            groups.append((ENVELOPE_BEST.format(label=label),
                           {s: d for s, d in ev.metrics.items() if s in ev.pairs}))
        for title, rows in groups:
            vals = {s: d[key] for s, d in rows.items() if key in d and not math.isnan(d[key])}
            if not vals:
                why = next(iter(ev.notes.get(s, {}).get(key, "") for s in rows), "")
                out.append(f"{html.escape(title)}: no score has a value ({html.escape(why)})")
                continue
            pick = max if spec.higher_is_better else min
            best = pick(vals, key=lambda s: vals[s])
            # values a few ulps apart tie (a pair whose best rule is one column's, summed in
            # another order): which is named must not hang on their last bits
            tied = [s for s, v in vals.items()
                    if math.isclose(v, vals[best], rel_tol=1e-12, abs_tol=1e-300)]
            iv = ev.intervals.get(best, {}).get(key)
            ci = "" if iv is None or math.isnan(iv[0]) else f" [{iv[0]:.4f}, {iv[1]:.4f}]"
            who = ", ".join(f"<strong>{html.escape(s)}</strong>" for s in tied)
            out.append(f"{html.escape(title)}: {who} with {vals[best]:.4f}{ci}"
                       + (" (tied)" if len(tied) > 1 else ""))
    return out


def _rule_line(rule: Any, columns: list[str] | None, src: Rows | Tables,
               ev: Evaluation) -> str:
    """The operating point of a rule on the report's rows."""
    kind = type(rule).__name__
    on = ", ".join(columns or [])
    target = _rule_target(rule, columns, src)
    if target is None:
        why = ("the report pairs no columns (a pair needs --ood-score and rows marked OOD)"
               if len(columns or []) == 2 and not src.pairs else
               "the report's table has no such score column")
        return f"{html.escape(kind)} on {html.escape(on)}: {why}; it is not marked."
    coverage, risk, ood = src.operating_point(rule, target, list(columns or []))
    parts = [f"coverage of ID rows {coverage:.4f}", f"selective risk {risk:.4f}"]
    if ood is not None:
        parts.append(f"OOD rows accepted {ood:.4f}")
    line = (f"rule {html.escape(kind)} on <strong>{html.escape(on)}</strong>"
            f"{_rule_promise(rule, list(columns or []))}; on these rows (expected over its "
            "random acceptance of tied scores, which apply draws): " + ", ".join(parts))
    # an infeasible rule has no fitted direction (it rejects everything): no own score
    if (len(columns or []) == 2 and target in ev.pairs and hasattr(rule, "score")
            and getattr(rule, "feasible_", True)):
        line += "; " + _rule_own(rule, list(columns or []), target, src, ev)
    return line


def _rule_promise(rule: Any, columns: list[str]) -> str:
    """What a rule of the registry was asked for (its targets, ``delta``, bound procedure)
    and what its fit found (threshold, rates, certified bound), as ``abstain fit`` prints
    it; empty for a rule the registry does not know."""
    spec = REJECT_RULES.get(type(rule).__name__)
    if spec is None:
        return ""
    asked = [f"{t.name} {getattr(rule, t.name)!r}" for t in (*spec.targets, *spec.companions)
             if getattr(rule, t.name, None) is not None]
    fitted = spec.summary(rule, columns) if getattr(rule, "feasible_", True) else \
        ["infeasible on the rows it was fitted on (it rejects everything)"]
    return (f" (asked for: {html.escape(', '.join(asked))}; as fitted: "
            f"{html.escape(', '.join(fitted))})")


def _rule_own(rule: Any, columns: list[str], target: str, src: Rows | Tables,
              ev: Evaluation) -> str:
    """A pair rule's own score as one detector, beside the pair's envelope (an oracle)."""
    env = next((ev.metrics[target][k] for k in ev.labels
                if m.METRICS["auroc"].matches(k) and k in ev.metrics.get(target, {})), None)
    beside = ("" if env is None or math.isnan(env) else
              f" (the pair's envelope AUROC, the best direction at each point, is {env:.4f})")
    own = src.rule_auroc(rule, target, columns)
    if own is None:
        return "its own score has no AUROC here (no OOD rows)"
    weights = ", ".join(f"{w:.4g}" for w in getattr(rule, "weights_", []))
    return f"its own score (weights {weights}) as one detector: AUROC {own:.4f}{beside}"


def sample_warnings(data: TableData | Summary, ev: Evaluation) -> list[str]:
    """Samples too small to trust the curves and metrics drawn from them."""
    out = []
    src = as_data(data)
    wrong = src.n_wrong()
    erring = ("misclassified ID row{}" if src.binary_losses()
              else "ID row{} with a loss above 0")
    for count, what in ((ev.n_id, "in-distribution row{}"), (wrong, erring),
                        (ev.n_ood, "OOD row{}")):
        if 0 < count < SMALL_SAMPLE:
            out.append(f"only {count} {what.format('' if count == 1 else 's')}: the curves "
                       "and metrics that use them are noisy"
                       + (" and a curve of one row is a single point" if count == 1 else "")
                       + "; their histograms are drawn in counts.")
    if wrong == 0:
        out.append("no ID row has a loss: every ranking has the same risk-coverage curve "
                   "(zero risk).")
    return out + inverted_warnings(data, ev)


#: What a report read in chunks leaves out, and why (one line in its summary).
CHUNKED_NOTE = ("Read in chunks into score tables (one per score column): every metric, "
                "curve and histogram here is computed exactly from them. A double-score pair "
                "(--ood-score) is kept as a table of its distinct score pairs, which gives its "
                "AUROC, FPR at TPR, OSCR and risk at TPR/FPR; its envelope curves and "
                "bootstrap intervals need every row at once and are not drawn.")


def _summary(data: TableData | Summary, ev: Evaluation, rule: Any,
             rule_columns: list[str] | None) -> str:
    src = as_data(data)
    rows = (f"{ev.n_id + ev.n_ood} rows: {ev.n_id} ID, {ev.n_ood} OOD"
            + (f"; {ev.n_dropped} dropped for missing values" if ev.n_dropped else ""))
    items = [rows, f"base error (mean loss of ID rows at full coverage): {src.base_error():.4f}",
             *(f"best {line}" for line in _best(ev))]
    if rule is not None:
        items.append(_rule_line(rule, rule_columns, src, ev))
    if src.chunked:
        items.append(html.escape(CHUNKED_NOTE))
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
    parts = [Path(p) for p in prov.get("parts") or ()]
    if len(parts) > 1:
        digest = hashlib.sha256("".join(f"{_sha256(p)}  {p.name}\n" for p in parts).encode())
        items.append(f"input {html.escape(str(prov.get('input', '')))}: {len(parts)} parts, "
                     f"SHA-256 of their SHA-256 list <code>{digest.hexdigest()}</code>")
    elif prov.get("input") or parts:
        path = parts[0] if parts else Path(prov["input"])
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
    "table.metrics th:first-child{position:sticky;left:0;background:#fff}"
    "@media (max-width:600px){table.metrics{font-size:0.75em}"
    "table.metrics td,table.metrics th{padding:2px 4px}.ci{font-size:0.9em}}"
    ".ci{color:#666;font-size:0.8em;white-space:nowrap}"
    "td.note{color:#666}"
    ".small{font-size:0.85em;color:#555}"
    ".summary li.warn{color:#8a4b00}"
    "figure{display:inline-block;margin:0.5em 0;max-width:100%}"
    "img{max-width:100%;height:auto}"
    "footer{margin-top:2em;border-top:1px solid #ddd;padding-top:0.5em;"
    "overflow-wrap:anywhere}"
)


def html_report(data: TableData | Summary, evaluation: Evaluation, *, fpr: float = 0.05,
                title: str = "abstain report", png_dir: str | Path | None = None,
                progress: Progress | None = None, protect: Iterable[str | Path] = (),
                rule: Any = None, rule_columns: list[str] | None = None,
                provenance: dict[str, Any] | None = None, search: str = "auto",
                n_jobs: int | None = None) -> str:
    """The report as one HTML string with embedded PNG images.

    Parameters
    ----------
    data : TableData or Summary
        The rows of one file, or the score tables of a source read in chunks
        (:func:`abstain.app.chunks.summarise` with ``wrong=True``): the same page, drawn
        from the tables, with a line saying what needs the rows.
    evaluation : Evaluation
        From :func:`abstain.app.evaluate.evaluate` on the same data (with
        ``n_bootstrap`` for intervals in the table and the summary), or
        :func:`abstain.app.evaluate.evaluate` on the same summary.
    fpr : float in [0, 1]
        The FPR bound of the risk-coverage curve at an FPR bound.
    title : str
    png_dir : path, optional
        Also write each figure as a PNG into this folder (created if missing), under the
        file name of :func:`png_names`; all PNGs are moved in together once written (see
        :func:`abstain.app.io.atomic_files`), and other files of the folder are kept.
    progress : callable(done, total), optional
    protect : iterable of paths
        Input files that no PNG may overwrite (``ValueError`` before any is written).
    rule, rule_columns : fitted rule and its score columns, optional
        As :func:`abstain.app.rules.load_rule` returns them: the rule's operating point
        on these rows is given in the summary and marked on its curves.
    provenance : dict, optional
        ``command`` (the command line), ``input`` (the input file: its name and SHA-256
        go in the footer), ``parts`` (the files of a source read in chunks: with more
        than one, the footer gives the SHA-256 of their list of SHA-256s, one
        ``"<sha256>  <name>\\n"`` line per part in order) and ``date`` (default: now, UTC).
    search : {"auto", "exact", "grid"}, default "auto"
        How a double-score pair's curves search the directions: give the ``search`` that
        ``evaluation`` was computed with.
    n_jobs : None, -1 or int >= 1, default None
        Worker processes that draw the figures (None: this process, -1: every usable core;
        forked, on Linux and the other systems that fork safely). The page and the PNGs
        are the same, byte for byte, for any value.
    """
    page, pngs = _render(data, evaluation, fpr=fpr, title=title, progress=progress,
                         rule=rule, rule_columns=rule_columns, provenance=provenance,
                         search=search, n_jobs=n_jobs)
    if png_dir is not None:
        _check_pngs(png_dir, pngs, protect)
        with atomic_files(png_dir, pngs):
            pass
    return page


def _render(data: TableData | Summary, evaluation: Evaluation, *, fpr: float = 0.05,
            title: str = "abstain report", progress: Progress | None = None, rule: Any = None,
            rule_columns: list[str] | None = None, provenance: dict[str, Any] | None = None,
            search: str = "auto", n_jobs: int | None = None) -> tuple[str, dict[str, bytes]]:
    """The page and its PNGs by file name (:func:`png_names`), the figures drawn on
    ``n_jobs`` worker processes."""
    makers = _figure_makers(data, fpr=fpr, rule=rule, rule_columns=rule_columns,
                            search=search, resampled=bool(evaluation.intervals))
    names = list(makers)
    drawn = ordered_map(lambda name: _drawn(makers[name]), names, check_jobs(n_jobs),
                        done=None if progress is None else lambda k: progress(k, len(names)))
    files = png_names(names)
    parts = []
    pngs = {}
    for name, png in zip(names, drawn, strict=True):
        pngs[files[name]] = png
        data_uri = base64.b64encode(png).decode("ascii")
        parts.append(f'<figure><img alt="{html.escape(name)}" '
                     f'src="data:image/png;base64,{data_uri}"></figure>')
    page = (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
            f"<h1>{html.escape(title)}</h1>{_summary(data, evaluation, rule, rule_columns)}"
            f"<h2>Metrics</h2>{_html_table(evaluation)}"
            f"<h2>Curves and histograms</h2>{''.join(parts)}"
            f"{_footer(provenance)}</body></html>\n")
    # a file name's bytes that are no text (os.fsdecode's surrogates) as escapes, so that
    # the page is UTF-8 (they stopped the report: "surrogates not allowed")
    return page.encode("utf-8", "backslashreplace").decode("utf-8"), pngs


def _check_pngs(png_dir: str | Path, pngs: dict[str, bytes],
                protect: Iterable[str | Path]) -> None:
    """Refuse, before anything is written, a PNG path that is an input file."""
    if str(png_dir) == "":
        raise ValueError("png_dir must name a folder; got ''.")
    for name in pngs:
        check_not_input(Path(png_dir) / name, protect)


def write_report(path: str | Path, data: TableData | Summary, evaluation: Evaluation, *,
                 png_dir: str | Path | None = None, **kwargs: Any) -> None:
    """Write :func:`html_report` to ``path`` (keyword arguments as there), all or nothing.

    The page and the PNGs of ``png_dir`` are written through
    :func:`abstain.app.io.atomic_path_and_files`: the PNGs go into a temporary folder
    inside ``png_dir`` and are moved in in the same step as the page is renamed, with
    SIGINT and SIGTERM held back, so an interrupt lands before both or after both. On
    any failure (``path`` unwritable, ``path`` one of the PNGs, an interrupt) ``png_dir``
    is left as it was (a folder created for the PNGs is removed) and ``path`` too.
    ``path`` must not be one of the ``protect`` files either.
    """
    protect = list(kwargs.pop("protect", ()))
    check_not_input(path, protect)
    folder = Path(path).parent
    if not folder.is_dir():  # before the figures are drawn: fail at once
        raise os_error(path, FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT)))
    page, pngs = _render(data, evaluation, **kwargs)
    if png_dir is None:
        write_text(path, page)
        return
    _check_pngs(png_dir, pngs, protect)
    for name in pngs:
        if _same_path(Path(png_dir) / name, Path(path)):
            raise ValueError(f"path must not be a PNG of png_dir; got {str(path)!r}, the "
                             f"PNG {name!r}: write the page to another path.")
    with atomic_path_and_files(path, png_dir, pngs) as tmp:
        Path(tmp).write_text(page, encoding="utf-8")


def _same_path(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file (the same path, a link, a hard link)."""
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists()
                                              and os.path.samefile(a, b))
    except OSError:
        return False
