"""Fire a fault and record it: the one place that writes the nemesis's start and stop events.

The scheduled nemesis (a thread playing a schedule) and the explorer (a fault on/off step)
both go through here, so a fault reads the same in every history: ``start`` (fault, id,
target, params, the effects its class declares, the evidence it can give at that target:
``Fault.evidence_for``) just before it is applied, ``stop`` (id) once it is healed, and a
``stop`` carrying the error when aiming, applying or healing fails. A fault that sees what
it did writes an ``effect`` naming its id (``chaos.nemesis.fault.report_effect``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chaos import history as h
from chaos.nemesis.fault import FAULTS, Heal, Target
from chaos.workload.harness import WorkloadEnv


def fire(
    env: WorkloadEnv, fault_id: str, name: str, params: dict[str, Any], aim: Callable[[], Target]
) -> tuple[Target, Heal]:
    """Aim, record the start, apply; returns the target and the heal. On failure a ``stop``
    with the error is recorded and the exception propagates."""
    fault = FAULTS[name]
    try:
        target = aim()
        target.fault_id = fault_id
        env.history.log(
            h.INFO,
            h.NEMESIS,
            h.START,
            value={
                "fault": name,
                "id": fault_id,
                "target": target.describe(),
                "params": params,
                "effects": sorted(fault.effects),
                "evidence": fault.evidence_for(env, target),
            },
        )
        return target, fault.apply(env, target, params)
    except Exception as exc:
        _stopped_with(env, fault_id, exc)
        raise


def heal(env: WorkloadEnv, fault_id: str, heal: Heal) -> None:
    """Heal and record the stop (with the error, which propagates, if healing fails)."""
    try:
        heal()
    except Exception as exc:
        _stopped_with(env, fault_id, exc)
        raise
    env.history.log(h.INFO, h.NEMESIS, h.STOP, value={"id": fault_id})


def _stopped_with(env: WorkloadEnv, fault_id: str, exc: Exception) -> None:
    env.history.log(h.INFO, h.NEMESIS, h.STOP, value={"id": fault_id, "error": str(exc)})
