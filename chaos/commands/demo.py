"""``lockchaos demo``: the seed posts' locks against the faults that break them, side by side.

A short, fixed set of campaigns on fresh local topologies (about a minute on 2 cores),
printed as one table with the first explanation of each verdict.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from chaos.campaign import Campaign, Outcome, run_campaign
from chaos.nemesis import parse_faults
from chaos.signals import sigterm_unwinds

CELLS = [
    ("del-release", "slow-work"),
    ("get-then-del", "client-pause-at"),
    ("lua", "slow-work"),
    ("fenced", "client-pause"),
    ("watchdog", "client-pause"),
    ("redlock", "clock-jump"),
]
STYLE = {"ok": "green", "soft": "yellow"}


def demo(
    duration: float = typer.Option(6.0, "--duration", help="seconds per cell at most"),
    seed: int = typer.Option(1, "--seed"),
    out: Path = typer.Option(Path("reports"), "--out"),
) -> None:
    """Run the bundled locks against the faults that matter for them and compare verdicts."""
    outcomes: list[tuple[str, str, Outcome]] = []
    with sigterm_unwinds(), Progress(transient=True) as progress:
        task = progress.add_task("demo", total=len(CELLS))
        for lock, faults in CELLS:
            progress.update(task, description=f"{lock} × {faults}")
            campaign = Campaign(
                lock=lock,
                faults=parse_faults(faults),
                duration_s=duration,
                seed=seed,
                stop_on_first=True,
            )
            outcomes.append((lock, faults, run_campaign(campaign, out / "demo")))
            progress.advance(task)
    table = Table(title="lockchaos demo: lock × fault", show_lines=True)
    for column in ("lock", "fault", "verdict", "hard", "soft", "lost writes", "why"):
        table.add_column(column, overflow="fold")
    for lock, faults, outcome in outcomes:
        v = outcome.verdict.to_dict()
        why = v["explanations"][0] if v["explanations"] else "no violation"
        table.add_row(
            lock,
            faults,
            f"[{STYLE.get(v['verdict'], 'bold red')}]{v['verdict']}[/]",
            str(v["hard_violations"]),
            str(v["soft_violations"]),
            str(v["lost_writes"]),
            why,
        )
    console = Console()
    console.print(table)
    console.print(f"run directories: {out / 'demo'}")
