"""Fault coverage from a history: fired, hit a holder, time on — for any fault name."""

from __future__ import annotations

from test_checker_support import History

from chaos.checker import scan
from chaos.checker.coverage import FaultCoverage, coverage


def _coverage(history: History) -> dict[str, FaultCoverage]:
    return coverage(scan.scan(history.events))


def test_a_client_fault_hits_when_its_target_holds() -> None:
    h = (History().acquire("c1", 10).fault("f1", "client-pause", 50, 300, target={"client": "c1"})
         .release("c1", 320).fault("f2", "client-pause", 400, 450, target={"client": "c2"})
         .final_read(600, []))  # fmt: skip
    cov = _coverage(h)["client-pause"]
    assert (cov.fired, cov.hit_holder) == (2, 1)
    assert cov.active_s == 0.3  # 250 ms + 50 ms


def test_an_armed_fault_hits_when_its_target_next_holds() -> None:
    h = (History().fault("f1", "slow-work", 10, 10, target={"client": "c2"})
         .acquire("c2", 100).release("c2", 150)
         .fault("f2", "slow-work", 200, 200, target={"client": "c3"})
         .acquire("c3", 700).release("c3", 750)
         .fault("f3", "slow-work", 760, 760, target={"client": "c1"})  # c1 never holds again
         .final_read(800, []))  # fmt: skip
    cov = _coverage(h)["slow-work"]
    assert (cov.fired, cov.hit_holder) == (3, 2)


def test_a_pause_point_reached_is_a_hit() -> None:
    h = (History().fault("f1", "client-pause-at", 10, 300, target={"client": "c1"})
         .pause_point("c1", 100, "DEL").final_read(400, []))  # fmt: skip
    assert _coverage(h)["client-pause-at"].hit_holder == 1


def test_a_server_fault_hits_when_anyone_holds_and_an_unknown_name_counts_too() -> None:
    h = (History().acquire("c3", 10).fault("f1", "my-own-fault", 50, 100, target={"nodes": ["n0"]},
                                           effects=[])
         .release("c3", 120).fault("f2", "my-own-fault", 300, None, target={"nodes": ["n1"]},
                                   effects=[])
         .final_read(500, []))  # fmt: skip
    cov = _coverage(h)["my-own-fault"]
    assert (cov.fired, cov.hit_holder) == (2, 1)
    assert cov.active_s == 0.25  # 50 ms + the open one until the end (200 ms)


def test_a_fault_aimed_at_every_client_hits_whoever_holds() -> None:
    """``client=*`` (arm every client, as the GETSET-overwrite cell does) names no one client."""
    h = (History().fault("f1", "client-pause-at", 10, 300, target={"client": "*"})
         .acquire("c2", 100).release("c2", 150).final_read(400, []))  # fmt: skip
    assert _coverage(h)["client-pause-at"].hit_holder == 1
