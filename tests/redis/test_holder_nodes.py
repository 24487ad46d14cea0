"""Faults find the nodes a holder counted on from what its own connections sent — for any
lock, whatever it names its key and whatever value it stores."""

from __future__ import annotations

from pathlib import Path

from chaos import history as h
from chaos.run.campaign import Campaign, run_campaign


def _targets(history: Path, fault: str) -> list[list[str]]:
    return [
        e.value["target"].get("nodes", [])
        for e in h.iter_events(history)
        if e.process == h.NEMESIS and e.f == h.START and e.value.get("fault") == fault
    ]


def test_crash_restart_targets_the_nodes_a_uuid_under_a_prefixed_key_rests_on(
    tmp_path: Path,
) -> None:
    """Redlock with a bare UUID under ``redlock:<name>``: crash-restart must still take down
    just enough of the holder's quorum (2 of its 3+ nodes on 5) — and so break it."""
    campaign = Campaign(
        lock="tests/prefixed_lock.py:make", faults=[("crash-restart", {})], topology="standalone",
        nodes=5, clients=3, duration_s=8.0, ttl_ms=500, work_ms=300, stop_on_first=True,
    )  # fmt: skip
    outcome = run_campaign(campaign, tmp_path)
    targets = _targets(outcome.run_dir / "history.jsonl", "crash-restart")
    assert targets, "crash-restart never fired"
    # untargeted, the fault would pick among all 5 nodes and kill 1 (5 - 3 + 1 - ...); aimed
    # at a quorum of 3 it kills len(held) - 3 + 1 of them: 1 of 3, 2 of 4, 3 of 5
    assert all(1 <= len(nodes) <= 3 for nodes in targets), targets
    assert outcome.verdict.hard_violations > 0, outcome.verdict.explanations[:3]
    assert outcome.verdict.violations[0].cause == "crash-restart"


def test_only_the_nodes_the_grant_rests_on_are_targeted(tmp_path: Path) -> None:
    """With the key squatted on nodes 3 and 4, a grant rests on nodes 0–2 exactly: to undo
    it, crash-restart takes 1 of those 3 (3 − quorum + 1), never a squatted node. Guessing
    from a token prefix (or picking among all 5) would take 3 of all 5."""
    from prefixed_lock import SQUATTED

    campaign = Campaign(
        lock="tests/prefixed_lock.py:make_squatted", faults=[("crash-restart", {})],
        topology="standalone", nodes=5, clients=3, duration_s=4.0, ttl_ms=500, work_ms=300,
    )  # fmt: skip
    outcome = run_campaign(campaign, tmp_path)
    targets = _targets(outcome.run_dir / "history.jsonl", "crash-restart")
    assert targets, "crash-restart never fired"
    squatted = {f"n{i}" for i in SQUATTED}
    assert all(len(nodes) == 1 and not squatted & set(nodes) for nodes in targets), targets
