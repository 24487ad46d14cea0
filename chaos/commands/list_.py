"""``lockchaos list``: every bundled lock and fault with its one-line description."""

from __future__ import annotations

import json

import typer
from rich.console import Console
from rich.table import Table

from chaos import locks
from chaos.nemesis import FAULTS


def catalog() -> dict[str, list[dict[str, str]]]:
    return {
        "locks": [
            {
                "name": info.name,
                "summary": info.summary,
                "seed": info.seed,
                "flaw": info.flaw,
                "topology": info.topology,
            }
            for info in locks.catalog()
        ],
        "faults": [
            {"name": fault.name, "summary": fault.summary, "topology": fault.needs}
            for fault in FAULTS.values()
        ],
    }


def list_(json_output: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """Show every bundled lock and fault with its one-line description."""
    data = catalog()
    if json_output:
        print(json.dumps(data, indent=2))
        return
    console = Console()
    table = Table(title="locks (--lock NAME, or module:attr for your own)")
    for column in ("name", "what it does", "seed", "known flaw"):
        table.add_column(column, overflow="fold")
    for lock in data["locks"]:
        table.add_row(lock["name"], lock["summary"], lock["seed"], lock["flaw"])
    console.print(table)
    table = Table(title="faults (--faults a,b or a:key=value)")
    for column in ("name", "what it does", "needs"):
        table.add_column(column, overflow="fold")
    for fault in data["faults"]:
        table.add_row(fault["name"], fault["summary"], fault["topology"])
    console.print(table)
