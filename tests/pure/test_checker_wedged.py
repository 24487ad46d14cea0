"""A lock wedged for good (chaos.checker.liveness ``wedged``): an outage that lasted to the end
of the run, far past the TTL, stays a liveness violation but fails every gate; bounded
unavailability stays a liveness violation below the default gate.

Hand-built histories; times in ms since the run start (tests/pure/test_checker_support.py), a
200 ms TTL: wedged takes 10 TTLs and 2 s of failed attempts, counted while no fault was on.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from junitparser import JUnitXml
from rich.console import Console
from test_checker_support import History

from chaos.checker import VIOLATION_KINDS, check_file, exit_status, fails
from chaos.report import write_run_reports
from chaos.report.summary import print_summary


def key(h: History, ms: float, **pttl: int) -> History:
    """The harness's read of the lock's key at the end (``final-key``)."""
    return h.add(ms, "ok", "harness", "final-key", value={"key": "lockchaos:lock", "pttl": pttl})


def refused(h: History, since: float, until: float) -> History:
    """c1 and c3 try every 20 ms from ``since`` to ``until``, and are refused every time."""
    t = since
    while t < until:
        h.attempt("c1", t, t + 1).attempt("c3", t + 2, t + 3)
        t += 20
    return h


def crashed_mid_acquire(until: float = 3000) -> History:
    """c2 crashes between its SETNX and its EXPIRE (a pause point that crashes) at 161 ms;
    nobody acquires again until ``until``; before it, two lock cycles (one is too few to judge
    a run by)."""
    h = History().acquire("c3", 10).release("c3", 50).acquire("c1", 60).release("c1", 100)
    h.add(150, "invoke", "c2", "acquire").pause_point("c2", 160, "EXPIRE", "crash")
    return refused(h.crash("c2", 161), 170, until)


def test_a_lock_nobody_acquired_again_to_the_end_is_wedged_and_fails_every_gate() -> None:
    verdict = key(crashed_mid_acquire(), 3000, n0=-1).final_read(3001, []).check()
    (v,) = verdict.violations
    assert (verdict.verdict, v.kind, v.cause) == ("liveness", "liveness", "wedged")
    assert verdict.wedged and verdict.liveness_violations == 1
    assert v.explanation.startswith(
        "liveness, wedged for good: nobody acquired for the last 2.9 s of the run (15× the "
        "200 ms TTL) after c2 crashed in its acquire at 0.161 s right after reaching "
        "pause-point EXPIRE (crash): its key lockchaos:lock has no expiry. No client held the "
        "lock from 0.170 s to 2.993 s (2.823 s, 14× the 200 ms TTL) while 284 acquire "
        "attempts failed; the last holder c1 released it at 0.100 s"), v.explanation
    for fail_on in VIOLATION_KINDS:
        assert fails(verdict, fail_on) and exit_status(verdict, fail_on) == 1, fail_on


def test_a_crashed_holder_whose_key_never_expires_is_named() -> None:
    h = refused(History().acquire("c2", 10, lease=None).crash("c2", 50), 60, 3000)
    verdict = key(h, 3000, n0=-1).final_read(3001, []).check()
    assert verdict.wedged
    assert ("nobody acquired for the last 3.0 s of the run (15× the 200 ms TTL) after c2 "
            "crashed holding the lock at 0.050 s: its key lockchaos:lock has no expiry."
            ) in verdict.explanations[0]


@pytest.mark.parametrize(("pttl", "said"), [
    ({}, ""),  # not there: a key the lock names otherwise (a prefix), or none at all
    ({"n0": 1200}, ": its key lockchaos:lock was still there when the run ended, 1200 ms from "
                   "expiring"),
])
def test_what_the_key_was_at_the_end_is_said_only_as_it_was_read(
        pttl: dict[str, int], said: str) -> None:
    verdict = key(crashed_mid_acquire(), 3000, **pttl).final_read(3001, []).check()
    assert verdict.wedged
    assert f"pause-point EXPIRE (crash){said}. No client" in verdict.explanations[0]
    assert "no expiry" not in verdict.explanations[0]


def test_a_shorter_outage_to_the_end_is_bounded_unavailability() -> None:
    """1.5 s (7 TTLs): a liveness violation, below the default gate."""
    verdict = crashed_mid_acquire(until=1700).final_read(1701, []).check()
    (v,) = verdict.violations
    assert (v.kind, v.cause, verdict.wedged) == ("liveness", None, False)
    assert v.explanation.startswith("liveness: no client held the lock from 0.170 s")
    assert exit_status(verdict, "hard") == 0 and exit_status(verdict, "liveness") == 1


def test_an_outage_somebody_ended_is_not_wedged_however_long() -> None:
    h = crashed_mid_acquire().acquire("c3", 3100).release("c3", 3150)
    verdict = h.final_read(3200, []).check()
    (v,) = verdict.violations
    assert (v.kind, v.cause) == ("liveness", None) and exit_status(verdict, "hard") == 0


def test_time_a_fault_was_on_does_not_count() -> None:
    """A partition of every client from 0.2 s to 2 s: refusals to 3 s came for 1 s while no
    fault was on, which a bounded outage can last; to 4.1 s, for 2.1 s: wedged."""
    for until, found in ((3000, False), (4100, True)):
        h = History().fault("f1", "partition", 200, 2000, target={"client": "*", "nodes": [0]})
        h.acquire("c1", 10).release("c1", 100)
        h.add(150, "invoke", "c2", "acquire").pause_point("c2", 160, "EXPIRE", "crash")
        verdict = refused(h.crash("c2", 161), 170, until).final_read(until + 1, []).check()
        assert verdict.wedged == found, (until, verdict.explanations)


def test_the_floor_holds_at_a_short_ttl() -> None:
    """At a 50 ms TTL, 10 TTLs is 0.5 s: a wedged lock still takes 2 s of refusals."""
    def run(until: float) -> bool:
        h = History(ttl_ms=50).acquire("c1", 10, lease=50).release("c1", 40)
        h.add(50, "invoke", "c2", "acquire").crash("c2", 55)
        return refused(h, 60, until).final_read(until + 1, []).check().wedged
    assert not run(1500) and run(2200)


def test_reports_say_wedged(tmp_path: Path) -> None:
    """The terminal's verdict line, report.html's header and junit.xml's failure say it; the
    default gate fails the run's test case."""
    key(crashed_mid_acquire(), 3000, n0=-1).final_read(3001, []).save(tmp_path / "history.jsonl")
    verdict = check_file(tmp_path / "history.jsonl")
    (tmp_path / "verdict.json").write_text(json.dumps(verdict.to_dict()))
    write_run_reports(tmp_path)
    assert "wedged for good: fails every gate" in (tmp_path / "report.html").read_text()
    ((case,),) = [list(suite) for suite in JUnitXml.fromfile(str(tmp_path / "junit.xml"))]
    (failure,) = case.result
    assert failure.type == "liveness (wedged for good)"
    assert failure.message.startswith("liveness, wedged for good: nobody acquired")
    console = Console(record=True, width=200)
    print_summary(verdict, console)
    assert console.export_text().startswith(
        "verdict: liveness, wedged for good (fails every gate)\n")
