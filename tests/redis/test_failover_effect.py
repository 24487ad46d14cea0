"""A failover had an effect only when it split the clients between two masters while they
still ran: Sentinel promotes a replica about 3 s after the master is cut off, and a run that
ended before then never saw two masters (issue 20: count what a fault did, not that it
fired)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chaos import history as h
from chaos.campaign import Campaign
from chaos.checker.verdict import EXIT_INCONCLUSIVE, INCONCLUSIVE, exit_status
from chaos.experiments.execute import run_campaign
from chaos.nemesis import FAULTS

FAILOVER: list[tuple[str, dict[str, Any]]] = [("failover", {})]
FAILOVER_ACTS_S = FAULTS["failover"].acts_after_s  # Sentinel's promotion


def _effects(history: Path) -> list[str]:
    return [str(e.value["what"]) for e in h.iter_events(history)
            if e.process == h.NEMESIS and e.f == h.EFFECT]


def test_a_failover_that_splits_the_clients_after_the_run_ended_did_nothing(
    tmp_path: Path,
) -> None:
    short = run_campaign(Campaign("lua", faults=FAILOVER, duration_s=1.5, seed=2), tmp_path)
    assert short.verdict.coverage["failover"].fired == 1
    assert short.verdict.coverage["failover"].effective == 0
    # Inconclusive — or, when a loaded machine let a lease lapse (a fresh clone's CI), soft
    # beside it, and data when a write was lost in that overlap (the lease's known limit, no
    # fencing): never hard. Either way the failover's lack of effect is said, and the gate is
    # not green.
    assert short.verdict.verdict in (INCONCLUSIVE, "soft", "data"), short.verdict.explanations
    assert short.verdict.hard_violations == 0, short.verdict.explanations
    assert [why for why in short.verdict.inconclusive_reasons if why.startswith("failover")]
    assert exit_status(short.verdict, "hard") == EXIT_INCONCLUSIVE
    assert not _effects(short.run_dir / "history.jsonl")


def test_a_failover_given_time_to_act_splits_the_clients_and_says_so(tmp_path: Path) -> None:
    """Twice the promotion's usual time: a loaded machine's Sentinel may take longer, and the
    run stops at its first hard violation anyway."""
    duration_s = 1.5 + 2 * FAILOVER_ACTS_S
    outcome = run_campaign(Campaign("lua", faults=FAILOVER, duration_s=duration_s, seed=2,
                                    stop_on_first=True), tmp_path)
    assert outcome.verdict.coverage["failover"].effective == 1
    (effect,) = _effects(outcome.run_dir / "history.jsonl")
    assert "the others were moved to" in effect
