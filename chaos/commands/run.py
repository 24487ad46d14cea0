"""``lockchaos run``: one lock against a seeded schedule of faults, checked, with a run dir."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from chaos.campaign import KNOBS, Campaign
from chaos.commands.campaign_options import campaign_options
from chaos.experiments import search as schedule_search
from chaos.experiments.execute import Outcome, run_campaign
from chaos.report.summary import print_coverage, print_lock_errors
from chaos.signals import sigterm_unwinds


@campaign_options(*KNOBS)
def run(
    out: Path = typer.Option(Path("reports"), "--out", help="where run directories go"),
    json_output: bool = typer.Option(False, "--json", help="print the verdict JSON only"),
    search: int = typer.Option(
        0, "--search", help="try N Hypothesis-drawn schedules; shrink a failing one"
    ),
    **knobs: Any,
) -> None:
    """Run LOCK against a seeded schedule of FAULTS; exit 0 ok, 1 violation at or above
    --fail-on, 2 bad input (a lock whose factory fails in every client included), 3
    inconclusive: the run did not exercise the lock (never acquired, fewer than 2 lock
    cycles; --allow-inconclusive makes it 0)."""
    campaign = Campaign.from_options(**knobs)
    console = Console(stderr=True)
    found = None
    with sigterm_unwinds(), console.status(
        f"running {campaign.lock} for {campaign.duration_s:g} s…"
    ):
        if search:
            found = schedule_search.search(campaign, out, tries=search)
            outcome = found.outcome
        else:
            outcome = run_campaign(campaign, out)
    if json_output:
        searched = {"search": found.describe()} if found else {}
        verdict = outcome.verdict.to_dict()
        print(json.dumps({**verdict, "run_dir": str(outcome.run_dir), **searched}))
    else:
        print_summary(outcome)
        if found:
            Console().print(found.describe(), highlight=False)
    raise typer.Exit(outcome.exit_status)


def print_summary(outcome: Outcome) -> None:
    console = Console()
    v = outcome.verdict.to_dict()
    style = {"ok": "green", "soft": "yellow", "inconclusive": "bold yellow"}.get(
        v["verdict"], "bold red"
    )
    console.print(f"verdict: [{style}]{v['verdict']}[/] — run dir {outcome.run_dir}")
    console.print(
        f"  {v['counts'].get('lock_cycles', outcome.completed_ops)} lock cycles, "
        f"{len(outcome.schedule.events)} faults; "
        f"hard {v['hard_violations']}, soft {v['soft_violations']}, "
        f"liveness {v['liveness_violations']}, lost writes {v['lost_writes']}, "
        f"stale accesses rejected {v['stale_writes_rejected']}"
    )
    for reason in outcome.verdict.inconclusive_reasons:
        console.print(f"  [bold yellow]inconclusive:[/] {reason}", highlight=False)
    print_lock_errors(outcome.verdict, console, indent="  ")
    print_coverage(outcome.verdict, console, indent="  ")
    if v["first_hard_violation_s"] is not None:
        console.print(f"  first hard violation at {v['first_hard_violation_s']:.3f} s")
    for line in v["explanations"][:5]:
        console.print(f"  • {line}", highlight=False)
    if len(v["explanations"]) > 5:
        console.print(f"  … and {len(v['explanations']) - 5} more in verdict.json")
    for error in outcome.nemesis_errors:
        console.print(f"  [yellow]nemesis:[/] {error}", highlight=False)
