"""``lockchaos run``: one lock against a seeded schedule of faults, checked, with a run dir."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console

from chaos.commands.provider_options import PROVIDER, PROVIDER_CONFIG, SERVER
from chaos.report import summary
from chaos.run import search as schedule_search
from chaos.run.campaign import Campaign, Outcome, run_campaign
from chaos.signals import sigterm_unwinds


def run(
    lock: str = typer.Option(..., "--lock", help="bundled lock name or module:attr"),
    faults: str = typer.Option("", "--faults", help="comma-separated faults (lockchaos list)"),
    topology: str = typer.Option(
        "auto", "--topology", help="auto, standalone, sentinel or cluster (not external)"
    ),
    provider: str = PROVIDER,
    provider_config: Path | None = PROVIDER_CONFIG,
    server: str | None = SERVER,
    nodes: int = typer.Option(0, "--nodes", help="masters for standalone (0: what the lock needs)"),
    clients: int = typer.Option(5, "--clients"),
    duration: float = typer.Option(20.0, "--duration", help="seconds"),
    ttl_ms: int = typer.Option(200, "--ttl-ms"),
    work_ms: float | None = typer.Option(
        None, "--work-ms",
        help="time a holder works on the resource (default: a quarter of the TTL)",
    ),
    nest_depth: int = typer.Option(
        1, "--nest-depth",
        help="acquires per critical section: 2+ re-acquire while holding (reentrancy, seed 003)",
    ),
    seed: int = typer.Option(1, "--seed"),
    stop_on_first: bool = typer.Option(False, "--stop-on-first"),
    fail_on: str = typer.Option("hard", "--fail-on", help="hard, data, liveness or soft"),
    allow_inconclusive: bool = typer.Option(
        False, "--allow-inconclusive",
        help="exit 0, not 3, when the run did not exercise the lock (never acquired, …)",
    ),
    extend_during_work: bool | None = typer.Option(
        None,
        "--extend-during-work/--no-extend-during-work",
        help="holders call extend() every TTL/3 of work (default: when the lock has one)",
    ),
    out: Path = typer.Option(Path("reports"), "--out", help="where run directories go"),
    json_output: bool = typer.Option(False, "--json", help="print the verdict JSON only"),
    search: int = typer.Option(
        0, "--search", help="try N Hypothesis-drawn schedules; shrink a failing one"
    ),
) -> None:
    """Run LOCK against a seeded schedule of FAULTS; exit 0 ok, 1 violation at or above
    --fail-on, 2 bad input (a lock whose factory fails in every client included), 3
    inconclusive: the run did not exercise the lock (never acquired, fewer than 2 lock
    cycles; --allow-inconclusive makes it 0)."""
    campaign = Campaign.from_options(
        lock,
        faults,
        topology=topology,
        nodes=nodes,
        clients=clients,
        duration_s=duration,
        ttl_ms=ttl_ms,
        work_ms=work_ms,
        seed=seed,
        stop_on_first=stop_on_first,
        fail_on=fail_on,
        allow_inconclusive=allow_inconclusive,
        extend_during_work=extend_during_work,
        provider=provider,
        provider_config=provider_config,
        nest_depth=nest_depth,
        server=server,
    )
    console = Console(stderr=True)
    found = None
    with sigterm_unwinds(), console.status(f"running {lock} for {duration:g} s…"):
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
    facts = summary.RunFacts(outcome.run_dir, len(outcome.schedule.events), outcome.nemesis_errors)
    summary.print_summary(outcome.verdict, Console(soft_wrap=True, highlight=False), facts)
