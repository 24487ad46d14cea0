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
from chaos.checker.verdict import EXIT_INCONCLUSIVE, EXIT_OK, EXIT_VIOLATION, INCONCLUSIVE
from chaos.commands.campaign_options import As, campaign_options
from chaos.explore.explorer import EXPLORE_TTL_MS, ExploreResult, explore
from chaos.explore.rundir import REPLAY
from chaos.report.style import LOOKS, marked
from chaos.report.summary import INDENT
from chaos.report.terminal import command, say, terminal
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
    2 bad input, 3 inconclusive: no program exercised the lock (fewer than 2 lock cycles in
    all, e.g. every acquire raised)."""
    campaign = Campaign.from_options(**knobs)
    status = f"exploring {campaign.lock} ({max_examples} programs of up to {steps} steps)…"
    with sigterm_unwinds(), Console(stderr=True).status(status):
        result = explore(campaign, max_examples=max_examples, steps=steps, out=out)
    if json_output:
        print(json.dumps(to_json(result)))
    else:
        print_result(result)
    raise typer.Exit(exit_status(result))


def exit_status(result: ExploreResult) -> int:
    """1 a program broke the lock, 3 none exercised it, else 0 (as ``run``'s)."""
    if result.failed:
        return EXIT_VIOLATION
    return EXIT_INCONCLUSIVE if result.inconclusive else EXIT_OK


def to_json(result: ExploreResult) -> dict[str, object]:
    found = result.failure
    return {
        "lock": result.campaign.lock,
        "fail_on": result.campaign.fail_on,
        "failed": result.failed,
        "inconclusive": result.inconclusive_reason() if result.inconclusive else None,
        **result.summary(),
        "program": found.program.numbered(found.outcomes) if found else None,
        "verdict": found.verdict.to_dict() if found else None,
        "run_dir": str(result.run_dir) if result.run_dir else None,
        "replay": str(result.run_dir / REPLAY) if result.run_dir else None,
    }


def print_result(result: ExploreResult) -> None:
    console = terminal()
    campaign, found = result.campaign, result.failure
    ran = f"{result.examples} programs ({result.elapsed_s:.1f} s)"
    if found is None:
        if result.inconclusive:
            say(console, f"explore {campaign.lock}: {marked(INCONCLUSIVE)} — did not test the "
                         f"lock: {escape(result.inconclusive_reason())}", INDENT)
            return
        say(console, f"explore {campaign.lock}: [{LOOKS['ok'].terminal}]no violation at or "
                     f"above {campaign.fail_on}[/] in {ran}", INDENT)
        return
    verdict = found.verdict
    say(console, f"explore {campaign.lock}: {marked(verdict.verdict)} — found after "
                 f"{result.time_to_find_s:.1f} s, shrunk to {len(found.program.steps)} steps "
                 f"({ran})", INDENT)
    for line in found.program.numbered(found.outcomes):
        say(console, f"{INDENT}{escape(line)}", INDENT * 3)
    for line in verdict.explanations[:3]:
        say(console, f"{INDENT}• {escape(line)}", INDENT * 2)
    if result.flaky:
        say(console, f"{INDENT}[yellow]note:[/] the shrunk program did not fail when "
                     "Hypothesis replayed it; this is the shortest program that did", INDENT * 2)
    if result.run_dir is not None:
        command(console, "run dir: ", str(result.run_dir))
        command(console, "replay:  ", f"pytest {result.run_dir / REPLAY}")
