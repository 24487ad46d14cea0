"""``lockchaos list``: every bundled lock and fault with its one-line description."""

from __future__ import annotations

import json

import typer
from rich.console import Console
from rich.table import Table

from chaos import locks
from chaos.nemesis import FAULTS

# Workload options a seed's claim needs (a lock or a fault cannot express them): the option,
# what it does, the seed it comes from. ``run`` takes them; truth-table cells set them.
OPTIONS = (
    ("--nest-depth K", "acquire K times per critical section, the inner ones while holding: "
     "a reentrant lock lets its holder in, a string lock refuses it (self-deadlock)",
     "003_ad4e3d3f63ce056d.txt, 可重入性"),
    ("--ttl-ms, --work-ms, --clients", "the lock's TTL, the holder's work, the contention: "
     "e.g. a 1.5 s TTL that int(expire) truncates to EX 1 (001), 10 clients as in 002's demo",
     "001 / 002"),
)


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
        "options": [
            {"name": name, "summary": summary, "seed": seed} for name, summary, seed in OPTIONS
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
    table = Table(title="workload options (lockchaos run)")
    for column in ("option", "what it does", "seed"):
        table.add_column(column, overflow="fold")
    for option in data["options"]:
        table.add_row(option["name"], option["summary"], option["seed"])
    console.print(table)
