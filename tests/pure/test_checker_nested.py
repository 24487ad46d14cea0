"""Nested holds (a reentrant lock's holder acquiring again): the outer hold goes on until the
outermost release, so a lock that an inner release frees is caught granting it twice."""

from __future__ import annotations

from test_checker_support import History, at

from chaos.checker import Verdict


def reentered(*, frees: bool) -> History:
    """c1 acquires (lease until 210 ms), acquires again nested at 20 ms (the lock re-arms:
    lease until 220 ms), releases the inner grant at 70 ms and the outer at 90 ms. A lock whose
    inner release ``frees`` it lets c2 in at 75 ms (and c1's outer release finds the key gone);
    a reentrant one keeps refusing c2 until c1's outer release."""
    h = History().acquire("c1", 10).nest("c1", 21, invoked=20).release("c1", 70, 71)
    if frees:
        h.acquire("c2", 75).release("c1", 90, outcome="fail")
    else:
        h.attempt("c2", 74, 75).release("c1", 90).acquire("c2", 95)
    return h.release("c2", 150).final_read(300, [])


def test_a_lock_freed_by_the_inner_release_is_granted_twice_hard() -> None:
    verdict = reentered(frees=True).check()
    assert verdict.verdict == "hard" and verdict.hard_violations == 1
    (violation,) = verdict.violations
    assert violation.processes == ["c1", "c2"] and violation.cause == "inner-release"
    assert (violation.start_s, violation.end_s) == (0.075, 0.09)
    assert (violation.both_valid_from_s, violation.both_valid_until_s) == (0.075, 0.09)
    assert violation.expires_s == {"c1": 0.22, "c2": 0.275}  # c1's: the nested grant's
    assert ("c1's inner release at 0.070 s freed the lock its outer hold still had; c2 "
            "acquired it at 0.075 s") in violation.explanation
    assert verdict.counts["holds"] == 2 and verdict.counts["reacquired"] == 1


def test_a_reentrant_lock_that_keeps_it_for_the_outer_hold_is_ok() -> None:
    verdict = reentered(frees=False).check()
    assert verdict.verdict == "ok" and verdict.violations == []
    assert verdict.counts["holds"] == 2 and verdict.counts["reacquired"] == 1
    assert verdict.counts["lock_cycles"] == 2  # c1's outer release ends its one cycle


def test_the_nested_grant_renews_the_outer_lease() -> None:
    """c1's own lease ran out at 210 ms; its nested grant at 150 ms vouched for it until
    350 ms, so c2's grant at 260 ms after the inner release still meets a valid lease."""
    h = History().acquire("c1", 10).nest("c1", 150).release("c1", 250).acquire("c2", 260)
    verdict = h.release("c1", 280).release("c2", 300).check()
    (violation,) = verdict.violations
    assert violation.kind == "hard" and violation.cause == "inner-release"
    assert violation.expires_s["c1"] == 0.35


def test_an_inner_release_after_the_lease_ran_out_is_a_lapse_not_the_cause() -> None:
    h = History().acquire("c1", 10).nest("c1", 20, lease=100).release("c1", 150)
    verdict = h.acquire("c2", 160).release("c1", 170).release("c2", 200).check()
    (violation,) = verdict.violations
    assert violation.kind == "soft" and violation.cause == "lease-expired"


def test_an_inner_release_that_returned_false_freed_nothing() -> None:
    h = History().acquire("c1", 10).nest("c1", 20).release("c1", 70, 71, outcome="fail")
    verdict = h.acquire("c2", 75).release("c1", 90).release("c2", 150).check()
    (violation,) = verdict.violations
    assert violation.kind == "hard" and violation.cause == "unexplained"


def test_an_extend_of_the_inner_grant_moves_the_clients_deadline() -> None:
    h = History().acquire("c1", 10).nest("c1", 20)
    inner = h.events[-1].token
    h.add(200, "invoke", "c1", "extend", token=inner)
    h.add(201, "ok", "c1", "extend", token=inner, valid_until=at(600))
    h.release("c1", 300).acquire("c2", 500).release("c1", 550).release("c2", 560)
    (violation,) = h.check().violations
    assert violation.kind == "hard" and violation.expires_s["c1"] == 0.6


def test_an_unmarked_acquire_while_holding_still_ends_the_hold() -> None:
    """A history whose acquires carry no depth is read as before: a grant to a client that
    holds ends its hold (``reacquire``) and starts a new one."""
    h = History().acquire("c1", 10).acquire("c1", 20).release("c1", 70).acquire("c2", 75)
    verdict = h.release("c1", 90).release("c2", 150).check()
    assert verdict.verdict == "ok"
    assert verdict.counts["holds"] == 3 and verdict.counts["reacquired"] == 1


def test_a_nested_grant_of_a_lock_with_shared_holds_is_a_permit_of_its_own() -> None:
    """A read-write lock grants its reader a second read lease of its own, which its extends
    renew and its release gives back, not the first one's: the nested grant ends the first
    hold (as an unmarked one does), so c2 writing once c1's first lease ran out (at 200 ms)
    is no violation, although c1's inner lease was extended to 400 ms."""
    h = History(ttl_ms=None, start=False)
    h.add(0, "info", "harness", "start", value={
        "lock": "test-rw", "ttl_ms": 200, "clients": ["c1", "c2"], "seed": 1,
        "capacity": None, "modes": ["exclusive", "shared"]})
    read = {"mode": "shared", "permits": 1}
    h.add(0, "invoke", "c1", "acquire", value=read)
    h.add(0, "ok", "c1", "acquire", token="r1", valid_until=at(200))
    h.add(50, "invoke", "c1", "acquire", value={**read, "depth": 2})
    h.add(50, "ok", "c1", "acquire", token="r2", valid_until=at(250))
    h.add(150, "invoke", "c1", "extend", token="r2")
    h.add(150, "ok", "c1", "extend", token="r2", valid_until=at(400))
    h.add(250, "invoke", "c1", "release", token="r2").add(250, "ok", "c1", "release")
    h.add(260, "invoke", "c2", "acquire", value={"mode": "exclusive", "permits": 1})
    h.add(260, "ok", "c2", "acquire", token="w1", valid_until=at(460))
    h.add(270, "invoke", "c1", "release", token="r1").add(270, "ok", "c1", "release")
    verdict = h.add(300, "invoke", "c2", "release").add(300, "ok", "c2", "release").check()
    assert verdict.hard_violations == 0, verdict.explanations
    assert verdict.counts["holds"] == 3 and verdict.counts["reacquired"] == 1


def test_a_renewing_locks_lapse_ended_by_a_nested_grant_says_so() -> None:
    """c1's lease ran out at 200 ms with no renewal; its nested acquire at 500 ms is what
    shows it was running (and re-armed the lease): the lapse runs until then."""
    h = History()
    h.events[0].value["renews"] = True
    h.acquire("c1", 0).nest("c1", 500).release("c1", 550).release("c1", 600)
    (violation,) = h.check().violations
    assert violation.cause == "not-renewed" and (violation.start_s, violation.end_s) == (0.2, 0.5)
    assert "went on holding the lock until it acquired again at 0.500 s" in violation.explanation



def nested_grant_back_at(ms: float) -> Verdict:
    """c2 holds (its lease runs to 100 ms) and acquires nested at 10 ms, granted at ``ms``
    with a lease to 305 ms; it releases that inner grant at 150 ms, and c3 takes the lock at
    151 ms while c2's outer hold goes on (c2's outer release at 160 ms finds the key gone)."""
    h = History().acquire("c2", 0, lease=100).nest("c2", ms, invoked=10, lease=295)
    h.release("c2", 150).acquire("c3", 151).release("c2", 160, outcome="fail")
    return h.release("c3", 200).final_read(300, []).check()


def test_a_nested_grant_after_the_lease_ran_out_vouches_only_for_its_level() -> None:
    """lua-retry-busy's audit warm-up (kept, seed 1): c2's nested acquire spun until c2's own
    key expired, and got a new key. Read as a re-entry, the new key's lease was the outer
    hold's too, and c3's grant was hard. The lock is not reentrant, and the outer lease had
    run out: soft, and no nested grant is counted."""
    verdict = nested_grant_back_at(110)
    (violation,) = verdict.violations
    assert violation.kind == "soft" and violation.cause == "lease-expired"
    assert verdict.counts["reacquired"] == 0


def test_a_nested_grant_that_came_back_in_time_still_reenters() -> None:
    """Back at 90 ms, before the outer lease ran out: the lock let its holder in, so its lease
    is the hold's, and the inner release that freed the key caused a hard overlap."""
    verdict = nested_grant_back_at(90)
    (violation,) = verdict.violations
    assert violation.kind == "hard" and violation.cause == "inner-release"
    assert verdict.counts["reacquired"] == 1
