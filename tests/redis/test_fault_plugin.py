"""A fault is one class: defined here alone, registered, and the checker explains its effect.

``WipeKeys`` (FLUSHALL on every data node while the lock is held) exists only in this module.
It declares ``loses-keys``; the checker, which knows no fault by name, must then blame it for
the overlap it causes — by its name, read from the history.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chaos import history as h
from chaos.campaign import Campaign
from chaos.checker import check_file
from chaos.experiments.execute import Outcome, run_campaign
from chaos.nemesis.fault import FAULTS, Fault, Heal, Target, register, wait_for_holder
from chaos.workload.harness import WorkloadEnv


class WipeKeys(Fault):
    name = "wipe-keys"
    summary = "FLUSHALL every data node while a client holds the lock"
    effects = frozenset({h.LOSES_KEYS})

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {"duration_ms": 0}

    def aim(self, env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        return Target(client=wait_for_holder(env, rng, acquired_within_ms=5.0))

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        for node in env.topology.nodes:
            with node.client() as conn:
                conn.flushall()
        return lambda: None


@pytest.fixture
def wipe_keys() -> Iterator[str]:
    register(WipeKeys)
    try:
        yield WipeKeys.name
    finally:
        del FAULTS[WipeKeys.name]


def _wipe_while_held(fault: str, out: Path) -> Outcome:
    """lua under the fault, holders working long enough for it to land while they hold."""
    campaign = Campaign(
        lock="lua", faults=[(fault, {})], clients=3, duration_s=3.0, ttl_ms=500, work_ms=300,
        stop_on_first=True,
    )
    return run_campaign(campaign, out)


def test_a_fault_defined_in_a_test_is_explained_by_its_declared_effect(
    wipe_keys: str, tmp_path: Path
) -> None:
    outcome = _wipe_while_held(wipe_keys, tmp_path)
    started = [
        e for e in h.read_history(outcome.run_dir / "history.jsonl")
        if e.process == h.NEMESIS and e.f == h.START
    ]  # fmt: skip
    assert started and started[0].value["effects"] == [h.LOSES_KEYS]
    hard = [v for v in outcome.verdict.violations if v.kind == "hard"]
    assert hard, outcome.verdict.explanations[:3]
    assert hard[0].cause == wipe_keys
    assert f"{wipe_keys} " in hard[0].explanation and "did not survive it" in hard[0].explanation
    assert check_file(outcome.run_dir / "history.jsonl") == outcome.verdict


def test_the_same_history_without_the_effect_is_not_blamed_on_the_fault(
    wipe_keys: str, tmp_path: Path
) -> None:
    """The explanation comes from the declared effect, not from the fault's name."""
    history = _wipe_while_held(wipe_keys, tmp_path).run_dir / "history.jsonl"
    events = h.read_history(history)
    for event in events:
        if event.process == h.NEMESIS and event.f == h.START:
            event.value = {**event.value, "effects": []}
    stripped = tmp_path / "stripped.jsonl"
    h.write_history(stripped, events)
    causes = {v.cause for v in check_file(stripped).violations if v.kind == "hard"}
    assert causes and wipe_keys not in causes


def test_a_fault_without_effects_is_refused() -> None:
    class Vague(Fault):
        name = "vague"
        summary = "declares nothing"

        def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
            return lambda: None

    with pytest.raises(ValueError, match="effects"):
        register(Vague)
    assert "vague" not in FAULTS
