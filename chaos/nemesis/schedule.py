"""Fault schedules, and the ``--faults`` text they are made of.

A schedule is a list of ``FaultEvent``s, each saying when (seconds after the run starts) which
fault fires with which parameters; ``chaos.nemesis.generator`` makes them (``generate``: same
seed, same schedule). Targets are not in the schedule: they are picked at fire time from the
live run (the current holder…), with an RNG seeded from the same seed, and the history
records them.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from chaos.errors import UsageError
from chaos.nemesis.fault import FAULTS, FaultSpec


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
    # How many leading events are the first round (every fault once): they fire at their
    # times however late a heal ran, as the generator fitted them into the run (a fault that
    # never fires tested nothing); each later one keeps its quiet gap after the previous
    # fault's heal (``ScheduledNemesis``). None: every event is of the first round.
    first_round: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"seed": self.seed, "events": [asdict(e) for e in self.events]}

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=2) + "\n")


def parse_faults(text: str) -> list[FaultSpec]:
    """``"latency,client-crash:command=EXPIRE:op=acquire"`` → names with parameter overrides,
    each checked against what its fault takes (``Fault.check_params``): ``UsageError`` for an
    unknown fault, key, or a value it cannot apply, before anything starts."""
    specs = []
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
        FAULTS[name].check_params(overrides)
        specs.append((name, overrides))
    return specs


def _number(value: str) -> Any:
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value
