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
from chaos.nemesis.fault import FAULTS

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
    """``"latency,client-crash:command=EXPIRE:op=acquire"`` → names with parameter overrides,
    each checked against what its fault takes (``Fault.check_params``): ``UsageError`` for an
    unknown fault, key, or a value it cannot apply, before anything starts."""
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
        FAULTS[name].check_params(overrides)
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
    faults: list[tuple[str, dict[str, Any]]], *, seed: int, duration_s: float, ttl_ms: int,
    in_order: bool = False,
) -> Schedule:
    """Faults drawn in turn (round robin from a seeded shuffle, or in the order given:
    ``in_order``) until the run is over.

    Every fault asked for gets its turn: when the first round would not fit in the run at the
    usual quiet gaps (a short run with several faults), the gaps of that round shrink (to
    ``MIN_GAP_SHARE`` of theirs at most) — a fault that never fires tested nothing, and the
    checker calls such a run inconclusive. The draws are the same either way, so a schedule
    that fits is exactly what it always was."""
    rng = random.Random(seed)
    if not faults:
        return Schedule(seed, ())
    order = list(faults)
    if not in_order:
        rng.shuffle(order)
    first_at = rng.uniform(*FIRST_AT_S)
    bound = 10_000  # bounded in count as well as by the run's duration
    draws: list[tuple[str, dict[str, Any], float]] = []  # fault, params, gap after it (s)

    def draw() -> None:
        name, overrides = order[len(draws) % len(order)]
        params = {**FAULTS[name].params(rng, ttl_ms), **overrides}
        draws.append((name, params, rng.uniform(*GAP_TTLS) * ttl_ms / 1000))

    for _ in order:
        draw()
    squeeze = _first_round_squeeze(draws, first_at, duration_s)
    events: list[FaultEvent] = []
    at = first_at
    while at < duration_s and len(events) < bound:
        if len(events) == len(draws):
            draw()
        name, params, gap = draws[len(events)]
        events.append(FaultEvent(round(at, 3), name, params))
        scale = squeeze if len(events) <= len(order) else 1.0
        at += float(params.get("duration_ms", 0)) / 1000 + gap * scale
    return Schedule(seed, tuple(events))


MIN_GAP_SHARE = 0.1
LAST_START_SHARE = 0.8  # the first round's last fault starts before this share of the run


def _first_round_squeeze(draws: list[tuple[str, dict[str, Any], float]], first_at: float,
                         duration_s: float) -> float:
    """The factor on the first round's gaps that lets its last fault start within
    ``LAST_START_SHARE`` of the run (1.0 when it already does)."""
    before_last = draws[:-1]
    busy = sum(float(params.get("duration_ms", 0)) / 1000 for _, params, _ in before_last)
    gaps = sum(gap for _, _, gap in before_last)
    if not gaps or first_at + busy + gaps < LAST_START_SHARE * duration_s:
        return 1.0
    room = LAST_START_SHARE * duration_s - first_at - busy
    return max(MIN_GAP_SHARE, min(1.0, room / gaps))
