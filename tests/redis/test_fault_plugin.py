"""A fault is one class: defined here alone, registered, and the checker explains its effect.

``WipeKeys`` (FLUSHALL on every data node while the lock is held) exists only in this module.
It declares ``loses-keys``; the checker, which knows no fault by name, must then blame it for
the overlap it causes — by its name, read from the history.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from chaos import history as h
from chaos.campaign import Campaign
from chaos.checker import check_file
from chaos.experiments.execute import Outcome, run_campaign
from chaos.nemesis import ScheduledNemesis
from chaos.nemesis.fault import FAULTS, Fault, Heal, Target, register, wait_for_holder
from chaos.nemesis.schedule import FaultEvent, Schedule
from chaos.topology import LocalTopology
from chaos.workload import run_workload
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


@contextmanager
def registered(fault: type[Fault]) -> Iterator[str]:
    """``fault`` in the catalog while the block runs (its name), and out of it after."""
    register(fault)
    try:
        yield fault.name
    finally:
        del FAULTS[fault.name]


@pytest.fixture
def wipe_keys() -> Iterator[str]:
    with registered(WipeKeys) as name:
        yield name


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


class SlowHeal(Fault):
    """A fault whose heal takes far longer than the fault was planned to last (as removing
    toxics from five clients' links does on a loaded machine)."""

    name = "slow-heal"
    summary = "nothing for 100 ms, then a heal of 600 ms"
    effects = frozenset({h.DISTURBS_NETWORK})

    def aim(self, env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        return Target()

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        return lambda: time.sleep(0.6)


def test_after_the_first_round_a_late_heal_still_gets_its_quiet_gap(
    single: LocalTopology, tmp_path: Path
) -> None:
    """Each event is planned 300 ms after the previous one's end; each heal ends 600 ms late.
    The first round's second fault fires as soon as it can (its time has passed); the next
    round's waits its 300 ms after the heal, which would otherwise eat it."""
    path = tmp_path / "history.jsonl"
    with registered(SlowHeal) as name:
        events = tuple(FaultEvent(at_s, name, {"duration_ms": 100}) for at_s in (0.2, 0.6, 1.0))
        run_workload(single, Campaign("lua", duration_s=3.0).workload(), path, clients=2,
                     nemesis=ScheduledNemesis(Schedule(1, events, first_round=2)))
    times = {(e.f, e.value["id"]): e.t for e in h.read_history(path)
             if e.process == h.NEMESIS and e.f in (h.START, h.STOP)}
    quiet_ms = [(times[(h.START, f"f{i + 1}")] - times[(h.STOP, f"f{i}")]) / 1e6 for i in (1, 2)]
    assert quiet_ms[0] < 290 <= quiet_ms[1], quiet_ms
