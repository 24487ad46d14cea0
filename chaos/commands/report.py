"""``lockchaos report``: rebuild a saved run's report.html and junit.xml (or a comparison's
or an audit's index.html), from the files it holds and nothing else."""

from __future__ import annotations

from pathlib import Path

import typer

from chaos.errors import UsageError
from chaos.report import REPORT, write_run_reports
from chaos.report.audit_page import AUDIT, load_audit, write_audit_reports
from chaos.report.matrix import MATRIX, load_matrix, write_compare_reports


def report(
    run_dir: Path = typer.Argument(..., help="a run, compare or audit directory"),
) -> None:
    """Rebuild report.html and junit.xml in RUN_DIR from its history.jsonl and verdict.json
    (in a compare directory: index.html and junit.xml from matrix.json; in an audit
    directory, from audit.json); prints the page."""
    if not run_dir.is_dir():
        raise UsageError(f"{run_dir}: no such directory; give a run directory (or the "
                         "directory `lockchaos compare` or `audit` wrote)")
    matrix = run_dir / MATRIX
    if matrix.is_file():
        print(write_compare_reports(run_dir, load_matrix(matrix)))
        return
    audit = run_dir / AUDIT
    if audit.is_file():
        print(write_audit_reports(run_dir, load_audit(audit)))
        return
    write_run_reports(run_dir)
    print(run_dir / REPORT)
