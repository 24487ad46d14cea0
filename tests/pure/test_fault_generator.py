"""The one generator of fault timing (``chaos.nemesis.generator``): whatever its choices come
from — a seed (``run``) or Hypothesis (``--search``, ``explore``) — and however its turns go,
what it lays out is one schedule's shape; an explore step's fault takes its parameters from
the same generator. Pure: no processes."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chaos.explore.fault_steps import fault_on_step
from chaos.nemesis import FAULTS, FaultEvent, parse_faults
from chaos.nemesis.generator import (
    FIRST_AT_S,
    GAP_TTLS,
    Choices,
    Drawn,
    Seeded,
    picks,
    rounds,
    switched_on,
    timed,
)

TTL_MS = 200
SPECS = parse_faults("latency,partition:scope=one,client-pause")


def laid_out_like_a_schedule(events: list[FaultEvent], duration_s: float) -> None:
    """The first firing early, each after the previous one's end and at most the longest
    quiet gap, every one within the run."""
    assert events, "a run always gets at least one fault"
    assert FIRST_AT_S[0] <= events[0].at_s <= FIRST_AT_S[1]
    for event, after in itertools.pairwise(events):
        end = event.at_s + event.duration_s
        assert end - 0.001 <= after.at_s <= end + GAP_TTLS[1] * TTL_MS / 1000 + 0.001
    assert all(event.at_s < duration_s for event in events)
    assert all(e.params["scope"] == "one" for e in events if e.fault == "partition")


@settings(database=None, max_examples=50, deadline=None)
@given(data=st.data(), seed=st.integers(0, 2**32), in_order=st.booleans())
def test_every_source_and_every_kind_of_turns_lays_out_a_schedule(
    data: st.DataObject, seed: int, in_order: bool
) -> None:
    sources: list[Choices] = [Seeded(seed), Drawn(data.draw)]
    for choices in sources:
        for turns in (rounds(in_order), picks(12)):
            laid_out_like_a_schedule(
                list(timed(SPECS, choices, turns, ttl_ms=TTL_MS, duration_s=20.0)), 20.0
            )


def test_no_firing_is_rounded_up_to_the_runs_end() -> None:
    """Seed 13626's 17th firing fell at 19.9996 s of a 20 s run: at 20.000 s once rounded to
    the ms a schedule keeps, the moment the run stops (found by the property test above)."""
    events = list(timed(SPECS, Seeded(13626), rounds(), ttl_ms=TTL_MS, duration_s=20.0))
    assert events and all(event.at_s < 20.0 for event in events)


def test_rounds_give_every_fault_a_turn_each_round_and_picks_stop_when_told() -> None:
    events = list(timed(SPECS, Seeded(5), rounds(), ttl_ms=TTL_MS, duration_s=600.0))
    names = [event.fault for event in events]
    for start in range(0, len(names) - 2, 3):
        assert sorted(names[start:start + 3]) == ["client-pause", "latency", "partition"]
    picked = list(timed(SPECS, Seeded(5), picks(2), ttl_ms=TTL_MS, duration_s=600.0))
    assert 1 <= len(picked) <= 2


def test_a_seeded_schedule_is_the_seeds_choices_in_order() -> None:
    """``Seeded`` hands the seed's ``random.Random`` through, draw for draw: the shuffle,
    the first start, then per firing the fault's own parameters and its quiet gap."""
    rng = random.Random(9)
    order = list(SPECS)
    rng.shuffle(order)
    first_at = rng.uniform(*FIRST_AT_S)
    name, overrides = order[0]
    params = {**FAULTS[name].params(rng, TTL_MS), **overrides}
    (first, *_) = timed(SPECS, Seeded(9), rounds(), ttl_ms=TTL_MS, duration_s=20.0)
    assert first == FaultEvent(round(first_at, 3), name, params)


def test_a_fault_switched_on_takes_its_stepping_choices_under_its_overrides() -> None:
    choices = Seeded(1)
    for _ in range(20):
        offset = switched_on(("clock-jump", {}), choices, 1000)["offset_ms"]
        assert offset in (1500, 3000, -1500)  # TTLs((1.5, 3.0, -1.5)) at a 1 s TTL
    told = switched_on(("latency", {"latency_ms": 7}), choices, 1000)
    assert told["latency_ms"] == 7 and told["stream"] in ("downstream", "upstream")
    with pytest.raises(ValueError, match="client-pause is not switched on and off"):
        switched_on(("client-pause", {}), choices, 1000)


def test_an_explore_step_aims_as_its_fault_steps() -> None:
    choices = Seeded(3)
    clients = ["c1", "c2"]
    latency = fault_on_step(choices, ("latency", {}), ref="f1", ttl_ms=TTL_MS,
                            clients=clients, nodes=3)
    assert latency.kind == "fault-on" and latency.client in clients
    assert latency.nodes == tuple(range(len(latency.nodes))) and 1 <= len(latency.nodes) <= 3
    jump = fault_on_step(choices, ("clock-jump", {}), ref="f2", ttl_ms=TTL_MS,
                         clients=clients, nodes=3)
    assert jump.client is None and jump.nodes
    failover = fault_on_step(choices, ("failover", {}), ref="f3", ttl_ms=TTL_MS,
                             clients=clients, nodes=3)
    assert failover.nodes == () and failover.params == {"promote_timeout_ms": 8000}
