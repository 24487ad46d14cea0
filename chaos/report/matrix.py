"""A comparison's pages: ``index.html`` (the lock × fault matrix, each cell linking to its
run's report) and ``junit.xml`` (one test case per cell), both from ``matrix.json`` alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chaos.checker.verdict import reaches
from chaos.report.junit import JUNIT, Case, write_junit
from chaos.report.page import render

INDEX = "index.html"


def write_compare_reports(directory: Path, matrix: dict[str, Any]) -> Path:
    """Write ``index.html`` and ``junit.xml`` for ``matrix`` (``matrix.json``'s content) into
    ``directory``; returns the index's path."""
    grid = {(cell["lock"], cell["faults"]): cell for cell in matrix["cells"]}
    index = directory / INDEX
    render("index.html.j2", index, matrix=matrix, grid=grid)
    write_junit(directory / JUNIT, matrix["title"], [_case(cell) for cell in matrix["cells"]],
                {"seeds": str(matrix["seeds"])})
    return index


def _case(cell: dict[str, Any]) -> Case:
    name, classname = f"{cell['lock']} × {cell['label']}", f"lockchaos.{cell['lock']}"
    time_s = sum(run["duration_s"] for run in cell["runs"])
    if cell["status"] != "done":
        return Case(name, classname, skipped=cell["reason"] or "not run")
    failed = [run for run in cell["runs"] if reaches(run["verdict"], cell["stop_on"] or "hard")]
    output = "\n".join(
        f"seed {run['seed']}: {run['verdict']} (hard {run['hard_violations']}, soft "
        f"{run['soft_violations']}, lost writes {run['lost_writes']}) in {run['run_dir']}"
        for run in cell["runs"]
    )
    failure = None
    if failed:
        text = "\n".join(f"seed {run['seed']}: {why}" for run in failed
                         for why in run["explanations"][:1])
        failure = (cell["verdict"], text)
    return Case(name, classname, time_s, failure, output=output)
