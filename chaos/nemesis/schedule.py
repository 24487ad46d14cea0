"""Seeded fault schedules: same seed, same schedule.

A schedule is a list of ``FaultEvent``s, each saying when (seconds after the run starts) which
fault fires with which parameters. Targets are not in the schedule: they are picked at fire
time from the live run (the current holder…), with an RNG seeded from the same seed, and the
history records them.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from chaos.errors import UsageError
from chaos.nemesis.faults import FAULTS

FIRST_AT_S = (0.2, 0.6)  # the first fault comes early: faster to a verdict
GAP_TTLS = (2.0, 5.0)  # quiet time between one fault's end and the next one's start


@dataclass(frozen=True)
class FaultEvent:
    at_s: float
    fault: str
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def duration_s(self) -> float:
        return float(self.params.get("duration_ms", 0)) / 1000


@dataclass(frozen=True)
class Schedule:
    seed: int
    events: tuple[FaultEvent, ...]

    def to_json(self) -> dict[str, Any]:
        return {"seed": self.seed, "events": [asdict(e) for e in self.events]}

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=2) + "\n")


def parse_faults(text: str) -> list[tuple[str, dict[str, Any]]]:
    """``"latency,client-crash:command=EXPIRE:op=acquire"`` → names with parameter overrides."""
    faults = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, *pairs = item.split(":")
        if name not in FAULTS:
            known = ", ".join(sorted(FAULTS))
            raise UsageError(f"unknown fault {name!r}; known faults: {known}")
        overrides: dict[str, Any] = {}
        for pair in pairs:
            key, sep, value = pair.partition("=")
            if not sep or not key:
                raise UsageError(f"fault parameter {pair!r} of {name} must look like key=value")
            overrides[key] = _number(value)
        faults.append((name, overrides))
    return faults


def _number(value: str) -> Any:
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def generate(
    faults: list[tuple[str, dict[str, Any]]], *, seed: int, duration_s: float, ttl_ms: int
) -> Schedule:
    """Faults drawn in turn (round robin from a seeded shuffle) until the run is over."""
    rng = random.Random(seed)
    events: list[FaultEvent] = []
    if not faults:
        return Schedule(seed, ())
    order = list(faults)
    rng.shuffle(order)
    at = rng.uniform(*FIRST_AT_S)
    bound = 10_000  # bounded in count as well as by the run's duration
    while at < duration_s and len(events) < bound:
        name, overrides = order[len(events) % len(order)]
        params = {**FAULTS[name].params(rng, ttl_ms), **overrides}
        events.append(FaultEvent(round(at, 3), name, params))
        at += float(params.get("duration_ms", 0)) / 1000 + rng.uniform(*GAP_TTLS) * ttl_ms / 1000
    return Schedule(seed, tuple(events))
