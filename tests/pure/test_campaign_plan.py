"""The pure parts of campaigns: bad input refused in one line before anything starts, the
layout a lock and its faults choose, fault overrides, and seeded schedules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chaos.campaign import Campaign, choose_layout
from chaos.cli import main
from chaos.errors import UsageError
from chaos.nemesis import FAULTS, generate, parse_faults


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--lock", "redlock", "--faults", "failover"], "needs a master with replicas"),
        (["--lock", "lua", "--faults", "failover", "--topology", "standalone"], "sentinel"),
        (["--lock", "lua", "--faults", "bogus"], "unknown fault 'bogus'"),
        (["--lock", "lua", "--faults", "latency:fast"], "key=value"),
        (["--lock", "nope"], "unknown lock 'nope'"),
        (["--lock", "lua", "--ttl-ms", "0"], "--ttl-ms"),
        (["--lock", "lua", "--clients", "0"], "--clients"),
        (["--lock", "lua", "--fail-on", "bad"], "--fail-on"),
        (["--lock", "redlock", "--nodes", "2"], "redlock"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert main(["run", *args, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not any(tmp_path.iterdir())  # nothing started, nothing written


def test_layout_follows_the_lock_and_the_faults() -> None:
    assert choose_layout(Campaign("redlock")).nodes == 5
    assert choose_layout(Campaign("lua", parse_faults("failover"))).kind == "sentinel"
    assert choose_layout(Campaign("lua", parse_faults("crash-restart-aof"))).persistence == (
        "aof-always"
    )
    layout = choose_layout(Campaign("lua", parse_faults("latency")))
    assert (layout.kind, layout.nodes, layout.persistence) == ("standalone", 1, "none")


def test_parse_faults_reads_overrides() -> None:
    assert parse_faults("latency, client-crash:command=*:nth=2:op=acquire") == [
        ("latency", {}),
        ("client-crash", {"command": "*", "nth": 2, "op": "acquire"}),
    ]
    with pytest.raises(UsageError):
        parse_faults("latency:=3")


fault_names = st.lists(st.sampled_from(sorted(FAULTS)), min_size=1, max_size=4, unique=True)


@given(names=fault_names, seed=st.integers(0, 2**32), duration=st.floats(1, 60))
def test_same_seed_same_schedule(names: list[str], seed: int, duration: float) -> None:
    faults: list[tuple[str, dict[str, Any]]] = [(name, {}) for name in names]
    first = generate(faults, seed=seed, duration_s=duration, ttl_ms=200)
    assert first == generate(faults, seed=seed, duration_s=duration, ttl_ms=200)
    assert first.events, "a run always gets at least one fault"
    assert all(0 < e.at_s < duration for e in first.events)
    times = [e.at_s for e in first.events]
    assert times == sorted(times)
    assert {e.fault for e in first.events} <= set(names)


def test_different_seeds_give_different_schedules() -> None:
    faults: list[tuple[str, dict[str, Any]]] = [("latency", {}), ("partition", {})]
    schedules = {
        json.dumps(generate(faults, seed=s, duration_s=20, ttl_ms=200).to_json())
        for s in range(10)
    }
    assert len(schedules) == 10


@given(names=fault_names, seed=st.integers(0, 2**32))
def test_faults_in_order_take_turns_in_the_order_given(names: list[str], seed: int) -> None:
    """``--faults-in-order``: the faults come round robin in the order ``--faults`` lists
    them (a point armed before the fault that makes the lock reach it), each round whole."""
    faults: list[tuple[str, dict[str, Any]]] = [(name, {}) for name in names]
    events = generate(faults, seed=seed, duration_s=600, ttl_ms=200, in_order=True).events
    assert [e.fault for e in events[:2 * len(names)]] == names * 2
