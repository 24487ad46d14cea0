"""Rendering pages from jinja2 templates (``chaos/report/templates``).

Every page is self-contained: styles are inline, and a page with a chart carries plotly.js
itself, so a report opens from disk, from a CI artifact or from an air-gapped laptop alike.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup
from plotly.offline import get_plotlyjs

from chaos.report.figure import MAX_VIOLATIONS, choose_window, figure_html, timeline_figure
from chaos.report.rundir import RunRecord
from chaos.report.style import LOOKS, reasons_label

TABLE_ROWS = 500  # violations listed in the report's table at most (verdict.json has all)


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("chaos.report", "templates"),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html", "j2")),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


@cache
def _plotlyjs() -> Markup:
    # plotly.js is code, not text: it goes into a <script> element unescaped.
    return Markup(get_plotlyjs())


def render(template: str, path: Path, **context: Any) -> None:
    """Render ``template`` with ``context`` into ``path``; every page gets the verdicts'
    ``looks`` and ``reasons_label`` (``chaos.report.style``)."""
    text = _environment().get_template(template).render(looks=LOOKS, reasons_label=reasons_label,
                                                        **context)
    path.write_text(text, encoding="utf-8")


def write_report_html(run: RunRecord, path: Path) -> None:
    """The run's report page: verdict, parameters, summary, the timeline, every violation."""
    window = choose_window(run)
    verdict = run.verdict
    drawn = sum(v.start_s <= window.end_s and v.end_s >= window.start_s
                for v in verdict.violations)
    rows = [
        {"index": i, "kind": v.kind, "processes": ", ".join(v.processes), "start_s": v.start_s,
         "end_s": v.end_s, "cause": v.cause or "", "explanation": v.explanation}
        for i, v in enumerate(verdict.violations[:TABLE_ROWS])
    ]
    render(
        "report.html.j2", path,
        run=run, verdict=verdict, window=window, rows=rows,
        hidden_rows=len(verdict.violations) - len(rows),
        undrawn=max(drawn - MAX_VIOLATIONS, 0),
        explanations=[v.explanation for v in verdict.violations],
        figure=Markup(figure_html(timeline_figure(run, window))),  # plotly's own markup
        plotlyjs=_plotlyjs(),
    )
