"""``lockchaos merge DIR…``: join the compare directories of a sharded comparison (``compare``
or ``demo`` with ``--shard K/N`` on N machines) into one, with its ``matrix.json``,
``index.html`` and ``junit.xml``, every run's directory copied in so the page's links work.
Exit status 0, or 2 on bad input (a directory without ``matrix.json``, shards of different
comparisons, a shard given twice)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from chaos.experiments.shard import merge as merge_directories
from chaos.report.matrix import INDEX, write_compare_reports


def merge(
    directories: list[Path] = typer.Argument(..., help="compare directories (one per shard)"),
    out: Path = typer.Option(Path("reports"), "--out", help="where the merged directory goes"),
) -> None:
    """Join compare directories into one matrix; prints the merged index.html's path."""
    target, matrix = merge_directories(directories, out)
    write_compare_reports(target, matrix)
    done = sum(cell.status == "done" for cell in matrix.cells)
    Console(stderr=True).print(f"{len(matrix.cells)} cells ({done} run) from "
                               f"{len(directories)} directories in {target}", highlight=False)
    print((target / INDEX).resolve())
