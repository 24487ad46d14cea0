"""The audit's answer in words (``chaos.report.audit_answer``), read from ``audit.json``
alone: the first line says passes / fails / did not test, the second the worst verdict and
what it means — for data and soft, the known limit of a lease without fencing and the page to
read; a sound lock's headline once said only ``audit: data``."""

from __future__ import annotations

from typing import Any

from chaos.checker.coverage import FaultCoverage
from chaos.report.audit_answer import answer
from chaos.report.audit_page import AuditFile, AuditRun


def _audit(verdict: str, exit_status: int, **fields: Any) -> AuditFile:
    run = AuditRun(name="slow-work", verdict=verdict, hard_violations=0, soft_violations=3,
                   liveness_violations=0, first_hard_violation_s=None,
                   explanation=f"{verdict}: 2 acknowledged writes are missing", duration_s=3.0,
                   report="runs/x/report.html")
    return AuditFile(**{
        "lock": "mylock.py:make_lock", "budget_s": 60.0, "seed": 1, "fail_on": "hard",
        "verdict": verdict, "failed": exit_status == 1, "exit_status": exit_status,
        "inconclusive_reasons": [], "coverage": {"slow-work": FaultCoverage(
            fired=2, effective=2, active_s=0.0)}, "tested": ["slow-work"], "explored": [],
        "assumed_away": [], "runs": [run], "skipped": [], "examples": 4, "first_hard_s": None,
        "wall_s": 61.0, "replay": "lockchaos audit --lock mylock.py:make_lock --budget 60",
        **fields})


def test_a_lock_that_loses_writes_only_past_its_leases_passes_and_is_told_why() -> None:
    lines = answer(_audit("data", 0))
    assert lines[0].startswith("audit: mylock.py:make_lock [bold green]passes[/] (--fail-on "
                               "hard; 1 run and 4 programs in 61 s)")
    assert "the known limit of a lease without fencing" in lines[1]
    assert "docs/fencing.md" in lines[1] and lines[2] == (
        "  slow-work: data: 2 acknowledged writes are missing")


def test_an_audit_that_did_not_test_all_it_planned_says_so_first() -> None:
    why = "client-pause-at never fired in any run"
    lines = answer(_audit("soft", 3, inconclusive_reasons=[why]))
    assert "did not test" in lines[0] and lines[-1].endswith(f"not tested[/]: {why}")


def test_an_audit_stopped_by_a_hard_violation_says_what_it_skipped_in_one_line() -> None:
    lines = answer(_audit("hard", 1, skipped=["latency", "partition", "reset"],
                          skipped_faults=["latency", "partition", "reset"]))
    assert "[bold red]fails[/]" in lines[0]
    (skipped,) = [line for line in lines if "skipped" in line]
    assert skipped == ("  skipped after the hard violation (--full runs them): 3 campaigns "
                       "and explore; never injected: latency, partition, reset")


def test_campaigns_the_budget_had_no_time_for_are_one_line() -> None:
    """Listed in audit.json only, they were said nowhere a user reads: a loaded machine's
    30 s audit ran 3 of its 15 campaigns that come first and passed without a word."""
    cut = ["latency", "client-crash", "latency"]  # a campaign run again is cut again
    lines = answer(_audit("data", 0, not_fitted=cut))
    assert "  no time for 2 planned campaigns in the 60 s budget (a longer --budget would " \
        "run them)" in lines
    lines = answer(_audit("data", 0, not_fitted=cut, fits_in_s=90.0))
    assert "  no time for 2 planned campaigns in the 60 s budget (--budget 90 would run " \
        "them)" in lines
    assert not [line for line in answer(_audit("data", 0)) if "no time" in line]
