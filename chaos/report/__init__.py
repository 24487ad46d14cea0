"""Reports people look at: a run's ``report.html`` and ``junit.xml``, and a comparison's index.

``write_run_reports`` is the one entry point for a run directory (``run``, ``explore`` and
every ``compare`` cell call it). It reads only the run's history and verdict (and its
parameter files), never Redis, so ``lockchaos report RUN_DIR`` can rebuild both files from a
saved run at any time.
"""

from __future__ import annotations

from pathlib import Path

from chaos.campaign.rundir import HISTORY, REPORT
from chaos.report.junit import JUNIT, run_case, run_properties, write_junit
from chaos.report.page import write_report_html
from chaos.report.rundir import RunRecord, load_run, save_verdict

__all__ = [
    "HISTORY",
    "JUNIT",
    "REPORT",
    "RunRecord",
    "load_run",
    "save_verdict",
    "write_run_reports",
]


def write_run_reports(run_dir: Path) -> None:
    """Write ``junit.xml`` and ``report.html`` into ``run_dir`` from its history and verdict.

    Raises ``UsageError`` when ``run_dir`` holds no history or no verdict.
    """
    run = load_run(Path(run_dir))
    write_junit(run_dir / JUNIT, f"lockchaos {run.lock}", [run_case(run)], run_properties(run))
    write_report_html(run, run_dir / REPORT)
