"""Faults find the nodes a holder counted on from what its own connections sent — for any
lock, whatever it names its key and whatever value it stores."""

from __future__ import annotations

from pathlib import Path

import pytest
from seeds import first_found

from chaos import history as h
from chaos.campaign import Campaign
from chaos.experiments.execute import Outcome, run_campaign
from chaos.nemesis import aiming
from chaos.workload.harness import WorkloadEnv

QUORUM = 3  # of 5 nodes


def _targets(history: Path, fault: str) -> list[list[str]]:
    return [
        e.value["target"].get("nodes", [])
        for e in h.iter_events(history)
        if e.process == h.NEMESIS and e.f == h.START and e.value.get("fault") == fault
    ]


@pytest.fixture
def found(monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """What each crash-restart learnt its holder's grant rests on (``holder_nodes``, called
    through, in this process where the nemesis runs): empty when it found nothing and fell
    back to picking among all the nodes, untargeted."""
    learnt: list[list[int]] = []
    real = aiming.holder_nodes

    def spy(env: WorkloadEnv, client: str) -> list[int]:
        nodes = real(env, client)
        learnt.append(nodes)
        return nodes

    monkeypatch.setattr(aiming, "holder_nodes", spy)
    return learnt


def _targeted(found: list[list[int]], targets: list[list[str]]) -> list[tuple[set[str], set[str]]]:
    """(the holder's nodes, the nodes hit) of every fire that found the holder's nodes, each
    hitting just enough of them that the rest is no quorum: 1 of 3, 2 of 4, 3 of 5."""
    assert len(found) == len(targets), (found, targets)
    fires = [({f"n{i}" for i in held}, set(hit)) for held, hit in zip(found, targets, strict=True)
             if held]
    assert fires, f"no crash-restart found the holder's nodes: {found}"
    for held, hit in fires:
        assert hit <= held and len(hit) == max(1, len(held) - QUORUM + 1), (held, hit)
    return fires


def test_crash_restart_targets_the_nodes_a_uuid_under_a_prefixed_key_rests_on(
    tmp_path: Path, found: list[list[int]]
) -> None:
    """Redlock with a bare UUID under ``redlock:<name>``: crash-restart must still find the
    nodes the holder's grant rests on, take down just enough of them — and so break it."""
    def run(seed: int) -> Outcome:
        found.clear()  # what this seed's fires found, for _targeted
        campaign = Campaign(
            lock="tests/redis/prefixed_lock.py:make", faults=[("crash-restart", {})],
            topology="standalone", nodes=5, clients=3, duration_s=8.0, ttl_ms=500,
            work_ms=300, stop_on_first=True, seed=seed,
        )  # fmt: skip
        return run_campaign(campaign, tmp_path / f"seed-{seed}")

    outcome = first_found(run, lambda outcome: outcome.verdict.hard_violations > 0)
    _targeted(found, _targets(outcome.run_dir / "history.jsonl", "crash-restart"))
    assert outcome.verdict.hard_violations > 0, outcome.verdict.explanations[:3]
    assert outcome.verdict.violations[0].cause == "crash-restart"


def test_only_the_nodes_the_grant_rests_on_are_targeted(
    tmp_path: Path, found: list[list[int]]
) -> None:
    """With the key squatted on nodes 3 and 4, a grant rests on nodes 0–2 exactly: to undo
    it, crash-restart takes 1 of those 3 (3 − quorum + 1), never a squatted node. Guessing
    from a token prefix (or picking among all 5) would take 3 of all 5."""
    from prefixed_lock import SQUATTED

    campaign = Campaign(
        lock="tests/redis/prefixed_lock.py:make_squatted", faults=[("crash-restart", {})],
        topology="standalone", nodes=5, clients=3, duration_s=4.0, ttl_ms=500, work_ms=300,
    )  # fmt: skip
    outcome = run_campaign(campaign, tmp_path)
    targets = _targets(outcome.run_dir / "history.jsonl", "crash-restart")
    assert targets, "crash-restart never fired"
    fires = _targeted(found, targets)
    squatted = {f"n{i}" for i in SQUATTED}
    assert all(held == {"n0", "n1", "n2"} for held, _ in fires), fires
    assert all(len(nodes) == 1 and not squatted & set(nodes) for nodes in targets), targets
