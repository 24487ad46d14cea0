"""A verdict in words on a terminal: the one summary ``lockchaos run`` and ``check-history``
(and the compose demo's checker) print, with a run's own facts when there is a run.
``judge_file`` turns every reason a file cannot be judged into one line."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.text import Text

from chaos.checker import LockErrors, Verdict, check_file
from chaos.checker.coverage import FaultCoverage
from chaos.errors import UsageError
from chaos.history import HistoryError
from chaos.report.style import LOOKS, reasons_label

SHOWN = 20  # explanations printed in the summary; --json has them all
INDENT = "  "  # the lines under the headline


@dataclass(frozen=True)
class RunFacts:
    """What a run knows beyond its history: where its files went, how many faults its
    schedule held (the history has only those that fired), what the nemesis failed to do."""

    run_dir: Path
    faults_scheduled: int
    nemesis_errors: Sequence[str] = ()


def judge_file(path: Path, liveness_factor: float) -> Verdict:
    """The verdict, with every reason the file cannot be judged turned into one line."""
    try:
        return check_file(path, liveness_factor=liveness_factor)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file; give the history.jsonl a run wrote") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it ({exc.strerror}); give a history file") from None
    except HistoryError as exc:
        raise UsageError(f"{exc}; expected a lockchaos history (one JSON event per line)") from None


def print_summary(verdict: Verdict, console: Console, run: RunFacts | None = None) -> None:
    """The verdict, what the run did, why it is inconclusive or what went wrong (the first
    ``SHOWN`` violations), and, for a run, its directory and what the nemesis could not do."""
    head = Text("verdict: ")
    head.append(verdict.verdict, style=LOOKS[verdict.verdict].terminal)
    if verdict.wedged:
        head.append(", wedged for good (fails every gate)", style=LOOKS[verdict.verdict].terminal)
    if run is not None:
        head.append(f" — run dir {run.run_dir}")
    console.print(head)
    counts = verdict.counts
    ttl = f"{verdict.ttl_ms:g} ms" if verdict.ttl_ms is not None else "unknown"
    scheduled = f", {run.faults_scheduled} faults scheduled" if run is not None else ""
    lost = "not judged" if verdict.lost_writes is None else str(verdict.lost_writes)
    for facts in (
        f"lock {verdict.lock or 'unknown'}, TTL {ttl}, {verdict.duration_s:.3f} s, "
        f"{counts['events']} events, {counts.get('lock_cycles', 0)} lock cycles{scheduled}",
        f"hard {verdict.hard_violations} · soft {verdict.soft_violations} · liveness "
        f"{verdict.liveness_violations} · lost writes {lost} · stale accesses rejected by "
        f"fencing {verdict.stale_writes_rejected}",
        f"acquires {counts['acquire_ok']} ok / {counts['acquire_fail']} failed / "
        f"{counts['acquire_info']} indeterminate · releases {counts['release_ok']} ok / "
        f"{counts['release_fail']} failed / {counts['release_info']} indeterminate · crashes "
        f"{counts['crashes']} · faults {counts['faults']}",
        exercised_line(verdict),
    ):
        if facts:
            console.print(Text(INDENT + facts))
    said = reasons_label(verdict.verdict)
    for reason in verdict.inconclusive_reasons:
        console.print(Text(f"{INDENT}{said}: {reason}", style=LOOKS["inconclusive"].terminal))
    _print_lock_errors(verdict, console)
    _print_coverage(verdict, console)
    if (first_hard := verdict.first_hard_violation_s) is not None:
        console.print(Text(f"{INDENT}first hard violation at {first_hard:.3f} s"))
    for number, violation in enumerate(verdict.violations[:SHOWN], 1):
        line = Text(f"{INDENT}{number:>3}. ", style=LOOKS[violation.kind].terminal)
        line.append(violation.explanation)
        console.print(line)
    if len(verdict.violations) > SHOWN:
        console.print(Text(f"{INDENT}… and {len(verdict.violations) - SHOWN} more (--json lists "
                           "them all)"))
    for note in verdict.notes:  # what could not be judged, or was skipped
        console.print(Text(f"{INDENT}warning: {note}", style="yellow"))
    for error in run.nemesis_errors if run is not None else ():
        console.print(Text(f"{INDENT}nemesis: {error}", style="yellow"))


def exercised_line(verdict: Verdict) -> str:
    """What the lock did beyond acquire and release, where it did any: "extends 40 ok / 2
    failed · renewals 12 · nested grants 5 · pause points reached 3" (empty: nothing)."""
    counts = verdict.counts
    extends = counts.get("extend_ok", 0) + counts.get("extend_fail", 0) + counts.get(
        "extend_info", 0)
    parts = [
        f"extends {counts.get('extend_ok', 0)} ok / {counts.get('extend_fail', 0)} failed"
        if extends else "",
        f"renewals {counts.get('renew_ok', 0)}" if counts.get("renew_ok") else "",
        f"nested grants {counts.get('reacquired', 0)}" if counts.get("reacquired") else "",
        f"pause points reached {counts.get('pause_points', 0)}"
        if counts.get("pause_points") else "",
    ]
    return " · ".join(part for part in parts if part)


def coverage_line(name: str, entry: FaultCoverage) -> str:
    """"client-pause fired 4×, had an effect 3×, on 1.20 s"."""
    return (f"{name} fired {entry.fired}×, had an effect {entry.effective}×, on "
            f"{entry.active_s:.2f} s")


def _print_coverage(verdict: Verdict, console: Console) -> None:
    """What each fault did to the lock: a fault that had no effect on it tested nothing. The
    warning is left out where a reason above already says it, and why (a finished run's)."""
    if not verdict.coverage:
        return
    console.print(Text(INDENT + "faults: " + "; ".join(
        coverage_line(name, entry) for name, entry in verdict.coverage.items()
    )))
    for name, entry in verdict.coverage.items():
        said = any(reason.startswith((f"{name} ", f"{name}:"))
                   for reason in verdict.inconclusive_reasons)
        if not entry.effective and not said:
            warning = f"{INDENT}warning: {name} had no effect on the lock"
            console.print(Text(warning, style="yellow"))


def lock_error_line(errors: LockErrors) -> str:
    """"release raised ValueError 412 times (first: ValueError: nope, c1 at 0.050 s)"."""
    times = "once" if errors.count == 1 else f"{errors.count} times"
    return (f"{errors.op} raised {times} with an error that is not a Redis or connection "
            f"error (first: {errors.error}, {errors.process} at {errors.at_s:.3f} s)")


def _print_lock_errors(verdict: Verdict, console: Console) -> None:
    """Bugs in the lock, per operation, and the first one's traceback: each was judged as an
    indeterminate outcome, which is sound but would hide the bug if nobody said so."""
    for errors in verdict.lock_errors:
        line = f"{INDENT}bug in the lock: {lock_error_line(errors)}"
        console.print(Text(line, style="bold red"))
        if errors.traceback:
            console.print(Text(_indent(errors.traceback, INDENT * 3), style="dim"))


def _indent(text: str, indent: str) -> str:
    return "\n".join(f"{indent}{line}" for line in text.rstrip("\n").splitlines())
