"""``lockchaos check-history``: judge a history file and say why, in words or as JSON.

Exit status: 0 when nothing at or above ``--fail-on`` was found, 1 when something was, 2 when
the input cannot be judged at all (missing file, not a history, bad option).
"""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec
import typer
from rich.console import Console
from rich.text import Text

from chaos.checker import DEFAULT_LIVENESS_FACTOR, KINDS, Verdict, check_file, fails
from chaos.errors import UsageError
from chaos.history import HistoryError

SHOWN = 20  # explanations printed in the summary; --json has them all
STYLE = {"ok": "bold green", "soft": "yellow", "liveness": "magenta", "data": "bold red",
         "hard": "bold red"}


def check_history(
    path: Path,
    json_output: bool = typer.Option(False, "--json", help="Print the verdict as JSON."),
    fail_on: str = typer.Option(
        "hard", "--fail-on",
        help="Exit 1 on any violation at least this severe: soft < liveness < data < hard.",
    ),
    liveness_factor: float = typer.Option(
        DEFAULT_LIVENESS_FACTOR, "--liveness-factor",
        help="Flag a liveness violation when nobody could acquire for longer than this many "
             "TTLs while nobody held the lock.",
    ),
) -> None:
    """Check the history file PATH (JSON lines a run wrote) for mutual-exclusion, liveness
    and lost-update violations, and explain each one."""
    if fail_on not in KINDS:
        raise UsageError(f"--fail-on must be one of {', '.join(KINDS)}, not {fail_on!r}")
    if not liveness_factor > 0:
        raise UsageError(f"--liveness-factor must be a positive number, not {liveness_factor}")
    verdict = _check(path, liveness_factor)
    if json_output:
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(verdict), indent=2).decode())
        sys.stdout.write("\n")
    else:
        _summary(verdict, Console(soft_wrap=True, highlight=False))
    raise typer.Exit(1 if fails(verdict, fail_on) else 0)


def _check(path: Path, liveness_factor: float) -> Verdict:
    """The verdict, with every reason the file cannot be judged turned into one line."""
    try:
        return check_file(path, liveness_factor=liveness_factor)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file; give the history.jsonl a run wrote") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it ({exc.strerror}); give a history file") from None
    except HistoryError as exc:
        raise UsageError(f"{exc}; expected a lockchaos history (one JSON event per line)") from None


def _summary(verdict: Verdict, console: Console) -> None:
    head = Text("verdict: ")
    head.append(verdict.verdict.upper(), style=STYLE[verdict.verdict])
    ttl = f"{verdict.ttl_ms:g} ms" if verdict.ttl_ms is not None else "unknown"
    head.append(f"  (lock {verdict.lock or 'unknown'}, TTL {ttl}, {verdict.duration_s:.3f} s, "
                f"{verdict.counts['events']} events)")
    console.print(head)
    lost = "not judged" if verdict.lost_writes is None else str(verdict.lost_writes)
    console.print(
        f"hard {verdict.hard_violations} · soft {verdict.soft_violations} · liveness "
        f"{verdict.liveness_violations} · lost writes {lost} · stale accesses rejected by "
        f"fencing {verdict.stale_writes_rejected}", markup=False,
    )
    counts = verdict.counts
    console.print(
        f"acquires {counts['acquire_ok']} ok / {counts['acquire_fail']} failed / "
        f"{counts['acquire_info']} indeterminate · releases {counts['release_ok']} ok / "
        f"{counts['release_fail']} failed / {counts['release_info']} indeterminate · crashes "
        f"{counts['crashes']} · faults {counts['faults']}", markup=False,
    )
    if verdict.first_hard_violation_s is not None:
        console.print(f"first hard violation at {verdict.first_hard_violation_s:.3f} s")
    for number, violation in enumerate(verdict.violations[:SHOWN], 1):
        line = Text(f"{number:>3}. ", style=STYLE[violation.kind])
        line.append(violation.explanation)
        console.print(line)
    if len(verdict.violations) > SHOWN:
        console.print(f"… and {len(verdict.violations) - SHOWN} more (--json lists them all)")
    for note in verdict.notes:  # what could not be judged, or was skipped
        console.print(Text(f"warning: {note}", style="yellow"))
