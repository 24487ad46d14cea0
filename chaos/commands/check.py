"""``lockchaos check-history``: judge a history file and say why, in words or as JSON.

Exit status: 0 when nothing at or above ``--fail-on`` was found, 1 when something was, 2 when
the input cannot be judged at all (missing file, not a history, bad option), 3 when the run
did not exercise the lock (inconclusive; 0 with ``--allow-inconclusive``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec
import typer
from rich.console import Console

from chaos.checker import DEFAULT_LIVENESS_FACTOR, check_fail_on, exit_status
from chaos.errors import UsageError
from chaos.report.summary import judge_file, print_summary


def check_history(
    path: Path,
    json_output: bool = typer.Option(False, "--json", help="Print the verdict as JSON."),
    fail_on: str = typer.Option(
        "hard", "--fail-on",
        help="Exit 1 on any violation at least this severe: soft < liveness < data < hard.",
    ),
    allow_inconclusive: bool = typer.Option(
        False, "--allow-inconclusive",
        help="Exit 0, not 3, when the run did not exercise the lock (inconclusive).",
    ),
    liveness_factor: float = typer.Option(
        DEFAULT_LIVENESS_FACTOR, "--liveness-factor",
        help="Flag a liveness violation when nobody could acquire for longer than this many "
             "TTLs while nobody held the lock.",
    ),
) -> None:
    """Check the history file PATH (JSON lines a run wrote) for mutual-exclusion, liveness
    and lost-update violations, and explain each one. Exit 0 ok, 1 violation, 2 bad input,
    3 inconclusive (the run did not exercise the lock)."""
    check_fail_on(fail_on)
    if not liveness_factor > 0:
        raise UsageError(f"--liveness-factor must be a positive number, not {liveness_factor}")
    verdict = judge_file(path, liveness_factor)
    if json_output:
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(verdict), indent=2).decode())
        sys.stdout.write("\n")
    else:
        print_summary(verdict, Console(soft_wrap=True, highlight=False))
    raise typer.Exit(exit_status(verdict, fail_on, allow_inconclusive=allow_inconclusive))
