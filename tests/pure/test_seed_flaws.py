"""Issue 13's history facts and explanations, on hand-written histories.

Each history is the smallest one that shows a flaw the seed posts name: a client whose clock
runs ahead (004, flaw 1), a losing GETSET that overwrote the holder's expiry (004, flaw 2), a
nested acquire refused by its own holder (003: a string lock is not reentrant), and waiters
that give up while a dead holder's key lives (002: acquire_timeout must exceed lock_timeout).
The client clock itself, a real process under libfaketime: tests/redis/test_client_clocks.py.
"""

from __future__ import annotations

import pytest
from test_checker_support import History

from chaos.history import GAVE_UP


def test_a_client_whose_clock_ran_ahead_is_named_as_the_cause() -> None:
    h = History()
    h.acquire("c1", 10)
    h.fault("f1", "client-clock", 20, 900, target={"client": "c2"}, params={"skew_ms": 800})
    h.acquire("c2", 50)  # c1's lease runs to 210 ms: both valid from 50 ms
    verdict = h.check()
    assert verdict.hard_violations == 1
    (violation,) = verdict.violations
    assert violation.cause == "client-clock"
    assert "c2's clock ran 800 ms ahead (client-clock f1 from 0.020 s): it judged c1's lock " \
        "expired and took it" in violation.explanation


def test_a_server_clock_jump_is_not_blamed_on_a_client_clock() -> None:
    """clock-jump also moves a clock, but a server's (its target names nodes): without a key
    lost in between, the overlap stays unexplained rather than wrongly blamed on c2's clock."""
    h = History()
    h.acquire("c1", 10)
    h.fault("f1", "clock-jump", 20, 900, target={"client": "c2", "nodes": ["n0"]},
            params={"offset_ms": 800}, effects=["moves-clock"])
    h.acquire("c2", 50)
    (violation,) = h.check().violations
    assert violation.cause == "unexplained"


def test_a_losing_acquire_that_wrote_a_stale_expiry_is_named_as_the_cause() -> None:
    h = History()
    h.add(0, "invoke", "c3", "acquire")  # c3 read an expired value, then stalled
    h.command("c3", 0.5, "acquire", "GETSET")
    h.pause_point("c3", 1, "GETSET")
    h.acquire("c1", 100)
    h.add(150, "fail", "c3", "acquire")  # its GETSET returned c1's value: it lost…
    h.acquire("c2", 220, invoked=215)  # …but c2 found an expiry stamped at 0 ms
    violation = next(v for v in h.check().violations if v.kind == "hard")
    assert violation.cause == "overwrote"
    assert "c3's acquire, invoked at 0.000 s, stalled at pause-point GETSET" in \
        violation.explanation
    assert "a losing GETSET, which writes before it knows it won, overwrote c1's expiry" in \
        violation.explanation


def test_an_overwrite_by_a_script_is_only_a_possibility() -> None:
    """A script's writes cannot be seen (Redisson's acquire checks before it writes): the
    explanation says what the acquire sends and makes the overwrite a condition, not a fact."""
    h = History()
    h.add(0, "invoke", "c3", "acquire")
    h.command("c3", 0.5, "acquire", "EVAL")
    h.acquire("c1", 100)
    h.add(150, "fail", "c3", "acquire")
    h.acquire("c2", 220, invoked=215)
    violation = next(v for v in h.check().violations if v.kind == "hard")
    assert violation.cause == "overwrote"
    assert "if this lock's acquire writes before it knows it won (its acquire sends EVAL), " \
        "that losing acquire overwrote c1's expiry" in violation.explanation


def test_a_quick_failed_acquire_is_not_an_overwrite() -> None:
    """Polling acquires fail in a millisecond all the time: only one invoked more than a TTL
    before the later acquire could have stamped an expiry already past."""
    h = History()
    h.add(95, "invoke", "c3", "acquire")
    h.acquire("c1", 100)
    h.add(101, "fail", "c3", "acquire")
    h.acquire("c2", 150)
    (violation,) = h.check().violations
    assert violation.cause == "unexplained"


def test_a_nested_acquire_refused_by_its_own_holder_is_a_self_deadlock() -> None:
    h = History()
    h.acquire("c1", 10)
    h.add(12, "invoke", "c1", "acquire", value={"depth": 2})
    h.add(13, "fail", "c1", "acquire", value={"depth": 2})
    h.release("c1", 14)
    h.acquire("c2", 20)
    h.add(21, "invoke", "c2", "acquire", value={"depth": 2})
    h.add(22, "fail", "c2", "acquire", value={"depth": 2})
    h.release("c2", 23)
    verdict = h.check()
    assert verdict.verdict == "liveness" and verdict.liveness_violations == 1
    (violation,) = verdict.violations
    assert violation.cause == "self-deadlock" and violation.failed_acquires == 2
    assert violation.processes == ["c1", "c2"]
    assert "c1's nested acquire, invoked at 0.012 s while c1 held the lock (since 0.010 s), " \
        "was refused by its own holder at 0.013 s" in violation.explanation


def test_a_nested_acquire_refused_after_the_lease_ran_out_is_not_a_self_deadlock() -> None:
    """Then someone else may hold the lock: the refusal is not the holder's own doing."""
    h = History()
    h.acquire("c1", 10, lease=200)
    h.add(300, "invoke", "c1", "acquire", value={"depth": 2})
    h.add(301, "fail", "c1", "acquire", value={"depth": 2})
    h.release("c1", 302)
    assert h.check().liveness_violations == 0


def test_a_plain_refusal_while_holding_is_not_a_self_deadlock() -> None:
    """Only acquires the client marked nested count: another tool's history that re-acquires
    without saying so is not judged."""
    h = History()
    h.acquire("c1", 10)
    h.attempt("c1", 12, 13)
    h.release("c1", 14)
    assert h.check().liveness_violations == 0


def test_giving_up_while_a_crashed_holders_key_lives_is_lost_availability() -> None:
    h = History(ttl_ms=4000)
    h.acquire("c1", 10, lease=4000)
    h.crash("c1", 100)
    h.attempt("c2", 50, 2050, error=GAVE_UP)  # behind a live c1 until 100 ms: not counted
    h.attempt("c3", 200, 2200, error=GAVE_UP)  # nobody held it: counted
    h.attempt("c2", 2060, 4010, error=GAVE_UP)  # counted (c3 acquires only at 4020 ms)
    h.acquire("c3", 4020)
    verdict = h.check()
    assert verdict.hard_violations == 0 and verdict.liveness_violations == 1
    (violation,) = verdict.violations
    assert violation.cause == "gave-up" and violation.failed_acquires == 2
    assert violation.explanation.startswith(
        "liveness: c3 gave up waiting for the lock at 2.200 s (its acquire, invoked at "
        "0.200 s, ran out its own acquire timeout) while no client held it"
    )
    assert "not a breach of mutual exclusion" in violation.explanation


def test_giving_up_behind_a_live_holder_is_contention() -> None:
    h = History(ttl_ms=4000)
    h.acquire("c1", 10, lease=4000)
    h.attempt("c2", 50, 2050, error=GAVE_UP)
    h.release("c1", 3000)
    assert h.check().liveness_violations == 0


def test_client_pause_at_takes_a_client_or_every_client() -> None:
    from chaos.errors import UsageError
    from chaos.nemesis import FAULTS

    fault = FAULTS["client-pause-at"]
    fault.check_params({"client": "*", "command": "GETSET", "op": "acquire"})
    fault.check_params({"client": "c2"})
    with pytest.raises(UsageError, match="client must be a client id"):
        fault.check_params({"client": "everyone"})
    clock = FAULTS["client-clock"]
    clock.check_params({"skew_ms": -800, "client": "c2"})
    with pytest.raises(UsageError, match="skew_ms"):
        clock.check_params({"skew_ms": 0})
