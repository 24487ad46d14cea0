"""``lockchaos run``: one lock against a seeded schedule of faults, checked, with a run dir."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from chaos.campaign import KNOBS, Campaign
from chaos.commands.campaign_options import campaign_options
from chaos.experiments import search as schedule_search
from chaos.experiments.execute import Outcome, run_campaign
from chaos.report import summary
from chaos.report.terminal import say, terminal
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
            say(terminal(), escape(found.describe()))
    raise typer.Exit(outcome.exit_status)


def print_summary(outcome: Outcome) -> None:
    facts = summary.RunFacts(outcome.run_dir, len(outcome.schedule.events), outcome.nemesis_errors)
    summary.print_summary(outcome.verdict, Console(soft_wrap=True, highlight=False), facts)
