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
    sections = (
        ("locks (--lock NAME, or module:attr for your own)", "locks",
         {"name": "name", "what it does": "summary", "seed": "seed", "known flaw": "flaw"}),
        ("faults (--faults a,b or a:key=value)", "faults",
         {"name": "name", "what it does": "summary", "needs": "topology"}),
        ("workload options (lockchaos run)", "options",
         {"option": "name", "what it does": "summary", "seed": "seed"}),
    )
    for title, key, columns in sections:
        table = Table(title=title)
        for column in columns:
            table.add_column(column, overflow="fold")
        for entry in data[key]:
            table.add_row(*(entry[field] for field in columns.values()))
        console.print(table)
