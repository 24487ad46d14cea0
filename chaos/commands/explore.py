"""``lockchaos explore``: Hypothesis writes step programs against a lock and shrinks the first
one that breaks it to the smallest program that still does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from chaos.campaign import Campaign
from chaos.commands.campaign_options import As, campaign_options
from chaos.explore.explorer import EXPLORE_TTL_MS, ExploreResult, explore
from chaos.explore.rundir import REPLAY
from chaos.report.style import LOOKS, marked
from chaos.signals import sigterm_unwinds


@campaign_options(
    "lock", "faults", "topology", "nodes", "provider", "provider_config", "server", "clients",
    "ttl_ms", "seed", "fail_on", "capacity",
    faults=As(help="faults to switch on and off as steps (client pauses always are)"),
    topology=As(help="auto, standalone or sentinel"),
    clients=As(default=2),
    ttl_ms=As(default=EXPLORE_TTL_MS, help="the lock's TTL; every wait is a multiple of it"),
)
def explore_command(
    max_examples: int = typer.Option(100, "--max-examples", help="programs to try"),
    steps: int = typer.Option(20, "--steps", help="steps per program (before shrinking)"),
    out: Path = typer.Option(Path("reports"), "--out", help="where the run directory goes"),
    json_output: bool = typer.Option(False, "--json", help="print the result as JSON only"),
    **knobs: Any,
) -> None:
    """Search for the smallest step program that breaks LOCK; exit 0 none found, 1 found,
    2 bad input."""
    campaign = Campaign.from_options(**knobs)
    status = f"exploring {campaign.lock} ({max_examples} programs of up to {steps} steps)…"
    with sigterm_unwinds(), Console(stderr=True).status(status):
        result = explore(campaign, max_examples=max_examples, steps=steps, out=out)
    if json_output:
        print(json.dumps(to_json(result)))
    else:
        print_result(result)
    raise typer.Exit(1 if result.failed else 0)


def to_json(result: ExploreResult) -> dict[str, object]:
    found = result.failure
    return {
        "lock": result.campaign.lock,
        "fail_on": result.campaign.fail_on,
        "failed": result.failed,
        **result.summary(),
        "program": found.program.numbered(found.outcomes) if found else None,
        "verdict": found.verdict.to_dict() if found else None,
        "run_dir": str(result.run_dir) if result.run_dir else None,
        "replay": str(result.run_dir / REPLAY) if result.run_dir else None,
    }


def print_result(result: ExploreResult) -> None:
    console = Console(highlight=False)
    campaign, found = result.campaign, result.failure
    if found is None:
        console.print(
            f"explore {campaign.lock}: [{LOOKS['ok'].terminal}]no violation at or above "
            f"{campaign.fail_on}[/] "
            f"in {result.examples} programs ({result.elapsed_s:.1f} s)"
        )
        return
    verdict = found.verdict
    console.print(
        f"explore {campaign.lock}: {marked(verdict.verdict)} — found after "
        f"{result.time_to_find_s:.1f} s, shrunk to {len(found.program.steps)} steps "
        f"({result.examples} programs, {result.elapsed_s:.1f} s)"
    )
    for line in found.program.numbered(found.outcomes):
        console.print(f"  {escape(line)}")
    for line in verdict.explanations[:3]:
        console.print(f"  • {escape(line)}")
    if result.flaky:
        console.print(
            "  [yellow]note:[/] the shrunk program did not fail when Hypothesis replayed it; "
            "this is the shortest program that did"
        )
    if result.run_dir is not None:
        console.print(f"run dir: {result.run_dir}")
        console.print(f"replay:  pytest {result.run_dir / REPLAY}")
