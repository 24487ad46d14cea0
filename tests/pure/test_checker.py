"""The checker on hand-built histories: every kind of violation, its edges and its words."""

from __future__ import annotations

import json
import random

import pytest
from test_checker_support import History, at

from chaos.checker import check, fails


def only(verdict, kind):
    [violation] = [v for v in verdict.violations if v.kind == kind]
    return violation


# -- mutual exclusion ----------------------------------------------------------------------


def test_sequential_holds_are_ok():
    h = History()
    for i, p in enumerate(["c1", "c2", "c3", "c1"]):
        h.acquire(p, i * 100 + 10).release(p, i * 100 + 90)
    verdict = h.final_read(500, []).check()
    assert verdict.verdict == "ok"
    assert verdict.violations == [] and verdict.explanations == []
    assert verdict.counts["acquire_ok"] == 4 and verdict.counts["release_ok"] == 4
    assert verdict.lock == "test-lock" and verdict.ttl_ms == 200


def test_touching_holds_do_not_overlap():
    verdict = History().acquire("c1", 0).release("c1", 100).acquire("c2", 100).check()
    assert verdict.verdict == "ok"


def test_one_nanosecond_of_overlap_counts():
    h = History().acquire("c1", 0).acquire("c2", 100).release("c1", 100.000001)
    assert h.check().hard_violations == 1


def test_both_leases_valid_is_hard():
    verdict = History().acquire("c1", 0).acquire("c2", 50).release("c1", 120).check()
    assert verdict.verdict == "hard"
    v = only(verdict, "hard")
    assert v.processes == ["c1", "c2"]
    assert (v.start_s, v.end_s) == (0.05, 0.12)
    assert (v.both_valid_from_s, v.both_valid_until_s) == (0.05, 0.12)
    assert v.expires_s == {"c1": 0.2, "c2": 0.25}
    assert verdict.first_hard_violation_s == 0.05
    assert v.explanation.startswith("hard: c1 and c2 both held the lock from 0.050 s to 0.120 s")
    assert "The lock granted c2 while c1's key should still have existed" in v.explanation
    assert v.cause == "unexplained"


def test_expired_earlier_lease_is_soft():
    h = History().acquire("c1", 0, lease=100).acquire("c2", 150).release("c1", 180)
    verdict = h.check()
    assert verdict.verdict == "soft"
    v = only(verdict, "soft")
    assert v.cause == "lease-expired"
    assert "c1's lease expired at 0.100 s while c1 still held it" in v.explanation
    assert "its work outran the lease" in v.explanation
    assert verdict.first_hard_violation_s is None


@pytest.mark.parametrize(("lease", "kind"), [(150, "soft"), (150.000001, "hard")])
def test_deadline_is_exclusive(lease, kind):
    """Valid at t means t < deadline: a lease ending exactly when the other starts is out."""
    verdict = History().acquire("c1", 0, lease=lease).acquire("c2", 150).check()
    assert verdict.verdict == kind


def test_later_lease_expired_before_the_overlap_is_soft():
    """c2 acquired with a lease that had already run out (a slow acquire)."""
    h = History().acquire("c1", 0, lease=1000).acquire("c2", 300, invoked=0, lease=200)
    assert h.check().verdict == "soft"


def test_renew_moves_the_deadline():
    base = History().acquire("c1", 0, lease=100)
    renewed = History().acquire("c1", 0, lease=100).renew("c1", 50, until=300)
    for h in (base, renewed):
        h.acquire("c2", 200).release("c1", 250)
    assert base.check().verdict == "soft"
    assert renewed.check().verdict == "hard"


def test_expiry_reported_is_the_deadline_in_effect_when_the_overlap_began():
    h = History().acquire("c1", 0, lease=100).renew("c1", 150, until=400).acquire("c2", 150)
    v = only(h.check(), "hard")
    assert v.expires_s == {"c1": 0.4, "c2": 0.35}
    assert "c1 acquired at 0.000 s (lease until 0.400 s)" in v.explanation


def test_renew_of_another_token_is_ignored():
    h = History().acquire("c1", 0, lease=100).renew("c1", 50, until=300, token="stale")
    assert h.acquire("c2", 200).check().verdict == "soft"


def test_renew_from_another_process_is_ignored():
    h = History().acquire("c1", 0, lease=100)
    h.renew("c2", 50, until=300, token=h.tokens["c1"])
    assert h.acquire("c2", 200).check().verdict == "soft"


def test_extend_ok_takes_the_token_of_its_invoke():
    h = History().acquire("c1", 0, lease=100).extend("c1", 60, until=400)
    assert h.acquire("c2", 200).check().verdict == "hard"


def test_failed_extend_does_not_move_the_deadline():
    h = History().acquire("c1", 0, lease=100).extend("c1", 60, until=400, outcome="fail")
    assert h.acquire("c2", 200).check().verdict == "soft"


def test_extend_after_the_lease_lapsed_is_valid_from_then_on():
    h = History().acquire("c1", 0, lease=100).acquire("c2", 120, lease=200)
    h.extend("c1", 150, until=400).release("c1", 500)
    v = only(h.check(), "hard")
    assert (v.start_s, v.both_valid_from_s, v.both_valid_until_s) == (0.12, 0.15, 0.32)


def test_an_overlap_made_hard_by_an_extend_is_explained_by_that_extend_first():
    """An owner-less extend (a ``SET key token XX``, a plain ``PEXPIRE``): c1's lease ran out,
    c3 took the lock, and c1's extend re-armed c3's key as c1's. What broke exclusion is that
    extend, named before how c1's key went."""
    h = History().acquire("c1", 3000, lease=279).acquire("c3", 3290, lease=200)
    h.extend("c1", 3481, until=3681).release("c1", 3600).release("c3", 3700)
    v = only(h.check(), "hard")
    assert v.cause == "foreign-extend"
    assert v.explanation == (
        "hard: c1 and c3 both held the lock from 3.290 s to 3.600 s, both leases valid from "
        "3.481 s to 3.490 s. c1 acquired at 3.000 s (lease until 3.279 s); c3 acquired at "
        "3.290 s (lease until 3.490 s). c1's extend at 3.481 s succeeded although c3 had held "
        "the lock since 3.290 s: the extend does not check whose key it extends. Before it, "
        "c1's lease expired at 3.279 s while c1 still held it (no pause is recorded for c1: its "
        "work outran the lease).")


def test_a_renewal_or_a_nested_grant_that_made_it_hard_is_named_so():
    renewed = History().acquire("c1", 0, lease=100).acquire("c2", 120, lease=200)
    renewed.renew("c1", 150, until=350).release("c1", 400).release("c2", 410)
    v = only(renewed.check(), "hard")
    assert v.cause == "foreign-renewal"
    assert ("c1's renewal at 0.150 s succeeded although c2 had held the lock since 0.120 s: "
            "the renewal does not check whose key it renews. Before it, c1's lease expired "
            "at 0.100 s") in v.explanation
    nested = History().acquire("c1", 0, lease=100).acquire("c2", 120, lease=200)
    nested.nest("c1", 150, lease=200).release("c1", 300).release("c1", 400).release("c2", 410)
    v = only(nested.check(), "hard")
    assert v.cause == "foreign-reentry"
    assert ("c1's nested acquire at 0.150 s succeeded although c2 had held the lock since "
            "0.120 s: the nested acquire does not check whose key it re-enters") in v.explanation


def test_an_extend_under_a_split_or_after_a_lost_key_is_not_blamed():
    """Two masters (a failover under way), or a key that a fault lost and may have brought
    back: the extend may have found its own key there, and the explanation stays the fault's."""
    for effect in ("splits-master", "loses-keys"):
        h = History().fault("f1", "a-fault", 110, 200, effects=[effect])
        h.acquire("c1", 0, lease=100).acquire("c2", 120, lease=200)
        v = only(h.extend("c1", 150, until=400).release("c1", 500).check(), "hard")
        assert v.cause != "foreign-extend" and "does not check" not in v.explanation, effect


def test_missing_valid_until_falls_back_to_invoke_plus_ttl():
    soft = History(ttl_ms=200).acquire("c1", 5, invoked=0, lease=None).acquire("c2", 210)
    hard = History(ttl_ms=200).acquire("c1", 5, invoked=0, lease=None).acquire("c2", 190)
    assert soft.check().verdict == "soft"
    assert hard.check().verdict == "hard"


def test_no_deadline_and_no_ttl_means_unbounded():
    verdict = History(ttl_ms=None).acquire("c1", 0, lease=None).acquire("c2", 10_000).check()
    assert verdict.verdict == "hard"
    assert only(verdict, "hard").expires_s["c1"] is None
    assert "lease until no deadline" in verdict.explanations[0]
    assert any("liveness was not judged" in note for note in verdict.notes)


def test_indeterminate_acquire_never_holds():
    h = History().attempt("c1", 0, 5, outcome="info", error="TimeoutError").acquire("c2", 10)
    verdict = h.check()
    assert verdict.verdict == "ok"
    assert verdict.counts["acquire_info"] == 1


@pytest.mark.parametrize("outcome", ["ok", "fail", "info"])
def test_hold_ends_at_release_invoke_whatever_its_outcome(outcome):
    h = History().acquire("c1", 0).release("c1", 100, 300, outcome=outcome).acquire("c2", 150)
    assert h.check().verdict == "ok"


def test_holder_that_never_releases_holds_to_the_end():
    h = History().acquire("c1", 0, lease=100).acquire("c2", 500).release("c2", 600)
    h.add(900, "info", "harness", "end")
    verdict = h.check()
    v = only(verdict, "soft")
    assert (v.start_s, v.end_s) == (0.5, 0.6)
    h2 = History().acquire("c1", 0, lease=100).acquire("c2", 500)
    h2.add(900, "info", "harness", "end")
    v2 = only(h2.check(), "soft")
    assert v2.end_s == 0.9
    assert "to the end of the history (0.900 s)" in v2.explanation


def test_crash_ends_the_hold_and_the_id_can_be_reused():
    h = History().acquire("c1", 0).crash("c1", 50).acquire("c2", 60).release("c2", 100)
    h.acquire("c1", 100).release("c1", 150)
    verdict = h.check()
    assert verdict.verdict == "ok"
    assert verdict.counts["crashes"] == 1


def test_crash_of_another_process_does_not_end_a_hold():
    h = History().acquire("c1", 0).crash("c3", 50).acquire("c2", 60)
    assert h.check().verdict == "hard"


def test_each_overlapping_pair_is_reported_once():
    h = History().acquire("c1", 0, lease=1000).acquire("c2", 10, lease=1000)
    h.acquire("c3", 20, lease=1000).release("c1", 100).release("c2", 100).release("c3", 100)
    verdict = h.check()
    assert verdict.hard_violations == 3
    pairs = sorted(tuple(v.processes) for v in verdict.violations)
    assert pairs == [("c1", "c2"), ("c1", "c3"), ("c2", "c3")]


def test_reacquire_by_the_same_process_is_not_an_overlap():
    assert History().acquire("c1", 0).acquire("c1", 50).release("c1", 80).check().verdict == "ok"


def test_input_order_does_not_matter():
    h = History().acquire("c1", 1, lease=100, invoked=0).acquire("c2", 150, invoked=149)
    h.release("c1", 200, 201).release("c2", 250, 251).write("c2", 240, "c2:1", 241)
    h.final_read(300, [])
    shuffled = list(h.events)
    random.Random(7).shuffle(shuffled)
    assert check(shuffled).to_dict() == h.check().to_dict()


# -- explanations: how the earlier holder's key went away ------------------------------------


def foreign_release_history():
    """c3's lease runs out while it is paused; c1 acquires; c3 wakes up and its release
    (DEL without an owner check) deletes c1's key; c2 acquires while c1 still holds."""
    h = History().acquire("c3", 0, lease=100).acquire("c1", 150, lease=300)
    h.release("c3", 200, 201).acquire("c2", 210, lease=300)
    return h.release("c1", 300).release("c2", 400)


def test_explains_a_release_of_someone_elses_key():
    verdict = foreign_release_history().check()
    hard = only(verdict, "hard")
    assert hard.processes == ["c1", "c2"]
    assert hard.cause == "foreign-release"
    assert "c3 released c1's lock at 0.201 s" in hard.explanation
    assert "c3's own lease had expired at 0.100 s" in hard.explanation
    soft = only(verdict, "soft")  # c3 itself overlapped c1 after its lease ran out
    assert soft.processes == ["c3", "c1"] and soft.cause == "lease-expired"


def test_a_release_in_flight_across_the_acquire_is_named_but_not_as_certain():
    h = History().acquire("c3", 0, lease=100).release("c3", 100, 160)
    h.acquire("c1", 150, lease=300).acquire("c2", 210)
    v = only(h.check(), "hard")
    assert v.cause == "in-flight-release"
    assert "c3 released c1's lock: c3's release, invoked at 0.100 s" in v.explanation
    assert "still in flight when c1 acquired and returned true at 0.160 s" in v.explanation


def test_a_release_that_returned_before_the_holder_acquired_is_not_the_cause():
    h = History().acquire("c3", 0, lease=100).release("c3", 100, 140)
    h.acquire("c1", 150, lease=300).acquire("c2", 210)
    assert only(h.check(), "hard").cause == "unexplained"


def test_a_stale_release_that_returned_while_the_holder_was_acquiring_is_named():
    """c3's DEL (its lease long gone) and c1's SET NX both in flight: on a loaded machine the
    DEL's reply reaches c3 before the SET's reaches c1, yet the DEL ran after the SET."""
    h = History().acquire("c3", 0, lease=100).acquire("c1", 180, invoked=150, lease=300)
    h.release("c3", 160, 170).acquire("c2", 250)
    v = only(h.check(), "hard")
    assert (v.processes, v.cause) == (["c1", "c2"], "in-flight-release")
    assert "c3 released c1's lock: c3's release, invoked at 0.160 s" in v.explanation


def test_a_live_release_that_returned_while_the_holder_was_acquiring_is_not_the_cause():
    """c3 still held a valid lease when it released: c1's SET NX could only succeed once
    that DEL had removed c3's own key, so the DEL is not how c1's key went away."""
    h = History().acquire("c3", 0, lease=300).acquire("c1", 180, invoked=150, lease=300)
    h.release("c3", 160, 170).acquire("c2", 250)
    assert only(h.check(), "hard").cause == "unexplained"


def test_a_release_whose_lease_ran_out_in_flight_while_the_holder_was_acquiring_is_named():
    """del-release's audit in a fresh clone's CI: every process stood still 160 ms; c3's
    lease ran out while its DEL was in flight, c1's SET NX took the lock, then the DEL ran
    and removed c1's key — the reply to c3 arrived first. It read "unexplained"."""
    h = History().acquire("c3", 0, lease=165).acquire("c1", 180, invoked=150, lease=300)
    h.release("c3", 160, 170).acquire("c2", 250)
    v = only(h.check(), "hard")
    assert (v.processes, v.cause) == (["c1", "c2"], "in-flight-release")
    assert ("c3 released c1's lock: c3's release, invoked at 0.160 s, was still in flight "
            "while c1's acquire was and returned true at 0.170 s (c3's own lease expired at "
            "0.165 s, while its release was in flight") in v.explanation


def test_a_lapsed_lease_is_named_before_a_release_that_outlived_its_own_in_flight():
    """The same release, but c1's lease then ran out before c2 acquired: that is certain,
    the release a hypothesis (a fresh clone's CI: an owner-less extend's run read "c1
    released c2's lock" where c2's lease had expired while it was paused)."""
    h = History().acquire("c3", 0, lease=165).acquire("c1", 180, invoked=150, lease=50)
    h.release("c3", 160, 170).acquire("c2", 250).release("c1", 260)
    v = only(h.check(), "soft")
    assert (v.processes, v.cause) == (["c1", "c2"], "lease-expired")


def test_a_key_losing_fault_is_preferred_to_a_release_in_flight():
    """An uncertain release is weaker evidence than a fault that wipes keys in the gap."""
    h = History().acquire("c3", 0, lease=100).release("c3", 100, 160)
    h.acquire("c1", 150, lease=300).fault("f1", "crash-restart", 180, 185)
    h.acquire("c2", 210)
    assert only(h.check(), "hard").cause == "crash-restart"


@pytest.mark.parametrize("fault", ["failover", "clock-jump", "crash-restart-delayed"])
def test_explains_a_key_losing_fault(fault):
    h = History().fault("f2", fault, 40, 60, target={"nodes": ["n1"]}, params={"delta_s": 30})
    h.acquire("c1", 0, lease=500).acquire("c2", 100).release("c1", 200)
    v = only(h.check(), "hard")
    assert v.cause == fault
    assert f"{fault} f2 began at 0.040 s, after c1 acquired and before c2 did" in v.explanation
    assert f"Faults active: {fault} f2 on n1 delta_s=30 (0.040 s to 0.060 s)" in v.explanation
    assert v.faults == ["f2"]


def test_foreign_release_is_preferred_to_a_fault():
    h = foreign_release_history().fault("f9", "failover", 205)
    assert only(h.check(), "hard").cause == "foreign-release"


def test_a_grant_during_a_failover_is_split_brain():
    h = History().fault("f1", "failover", 10, 900).acquire("c1", 100, lease=500)
    h.acquire("c2", 200).release("c1", 300).release("c2", 400)
    v = only(h.check(), "hard")
    assert v.cause == "failover"
    assert "failover f1 was under way when c2 acquired" in v.explanation
    assert "split brain" in v.explanation


def test_a_release_during_a_failover_is_not_taken_for_a_foreign_release():
    """With two masters, c3's release returning true may have removed c3's own key on the
    other master: the failover, not the release, is what the history can vouch for."""
    h = foreign_release_history().fault("f9", "failover", 100, 900)
    assert only(h.check(), "hard").cause == "failover"


def test_a_fault_outside_the_window_is_not_the_cause():
    h = History().fault("f2", "failover", 120, 130).acquire("c1", 0, lease=500)
    h.acquire("c2", 100).release("c1", 200)
    v = only(h.check(), "hard")
    assert v.cause == "unexplained"
    assert "failover f2" in v.explanation  # still listed as active during the overlap


def test_explains_an_expiry_by_a_client_pause():
    h = History().fault("f1", "client-pause", 50, 400, target={"client": "c1"})
    h.acquire("c1", 0, lease=100).acquire("c2", 200).release("c1", 400)
    v = only(h.check(), "soft")
    assert "c1's lease expired at 0.100 s while c1 still held it (c1 was stalled: " \
           "client-pause f1 on c1 (0.050 s to 0.400 s))" in v.explanation


def test_a_pause_aimed_at_another_client_does_not_explain_the_expiry():
    h = History().fault("f1", "client-pause", 50, 400, target={"client": "c3"})
    h.acquire("c1", 0, lease=100).acquire("c2", 200)
    assert "no pause is recorded for c1" in only(h.check(), "soft").explanation


def test_explains_an_expiry_by_a_pause_point():
    h = History().acquire("c1", 0, lease=100).pause_point("c1", 90, "DEL", "sleep")
    h.acquire("c2", 200).release("c1", 300)
    assert "pause-point DEL (sleep) at 0.090 s" in only(h.check(), "soft").explanation


def test_fault_without_stop_lasts_to_the_end():
    h = History().fault("f1", "partition", 10, target="c1").acquire("c1", 0).acquire("c2", 50)
    h.add(70, "info", "harness", "end")
    assert "partition f1 on c1 (0.010 s to the end)" in only(h.check(), "hard").explanation


# -- liveness -------------------------------------------------------------------------------


def blocked(until: float, *, ttl_ms: float = 100) -> History:
    """c1 releases at 50 ms; then failed attempts every 10 ms from 100 ms to ``until``."""
    h = History(ttl_ms=ttl_ms).acquire("c1", 0).release("c1", 50)
    ms = 100
    while ms + 10 <= until:
        h.attempt("c2", ms, ms + 10)
        ms += 10
    return h


def test_liveness_threshold_is_strict():
    assert blocked(600).check().liveness_violations == 0  # exactly 5 × 100 ms
    verdict = blocked(610).check()
    assert verdict.liveness_violations == 1 and verdict.verdict == "liveness"
    v = only(verdict, "liveness")
    assert (v.start_s, v.end_s, v.failed_acquires) == (0.1, 0.61, 51)
    assert v.explanation.startswith(
        "liveness: no client held the lock from 0.100 s to 0.610 s (0.510 s, 5× the 100 ms TTL)"
        " while 51 acquire attempts failed; the last holder c1 released it at 0.050 s "
        "(the release returned true).")


def test_liveness_factor_is_a_parameter():
    assert blocked(610).check(liveness_factor=6).liveness_violations == 0
    assert blocked(560).check(liveness_factor=4).liveness_violations == 1
    with pytest.raises(ValueError, match="positive"):
        blocked(610).check(liveness_factor=0)


def test_failures_while_someone_holds_are_not_liveness():
    h = History(ttl_ms=100).acquire("c1", 0, lease=100_000)
    for ms in range(10, 2000, 10):
        h.attempt("c2", ms, ms + 5)
    assert h.check().verdict == "ok"


def test_a_hold_in_between_splits_the_outage():
    h = blocked(400)
    h.acquire("c3", 405).release("c3", 410)
    for ms in range(420, 700, 10):
        h.attempt("c2", ms, ms + 10)
    assert h.check().liveness_violations == 0


def test_crash_between_setnx_and_expire_is_explained():
    h = History(ttl_ms=100).acquire("c1", 0).release("c1", 50)
    h.add(60, "invoke", "c2", "acquire").pause_point("c2", 61, "PEXPIRE", "crash").crash("c2", 62)
    h.crash("c2", 63)  # the pool records the death a second time
    h.attempt("c3", 65, outcome="info", error="ConnectionError: reset")
    for ms in range(70, 2000, 10):
        h.attempt("c1", ms, ms + 5)
    verdict = h.check()
    v = only(verdict, "liveness")
    assert v.explanation.startswith("liveness: no client held the lock from 0.070 s to 1.995 s")
    assert "(1.925 s, 19× the 100 ms TTL) while 193 acquire attempts failed" in v.explanation
    assert ("c2's acquire invoked at 0.060 s never completed: c2 crashed at 0.062 s right "
            "after reaching pause-point PEXPIRE (crash)") in v.explanation
    assert v.explanation.count("c2's acquire") == 1  # the second crash record adds nothing
    assert "c3's acquire invoked at 0.065 s was indeterminate (ConnectionError: reset)" \
        in v.explanation
    assert verdict.counts["crashes"] == 2


def test_liveness_after_a_crashed_holder():
    h = History(ttl_ms=100).acquire("c1", 0).pause_point("c1", 40, "DEL", "crash")
    h.crash("c1", 41)
    for ms in range(50, 1000, 10):
        h.attempt("c2", ms, ms + 5)
    v = only(h.check(), "liveness")
    assert "the last holder c1 crashed at 0.041 s right after reaching pause-point DEL (crash)" \
        in v.explanation


# -- data -----------------------------------------------------------------------------------


def test_lost_writes():
    h = History().acquire("c1", 0, lease=50).write("c1", 10, "c1:1")
    h.acquire("c2", 60).write("c2", 70, "c2:1").write("c1", 80, "c1:2").release("c1", 90)
    h.release("c2", 100).acquire("c3", 110).write("c3", 120, "c3:1").release("c3", 130)
    verdict = h.final_read(200, ["c1:1", "c1:2", "c3:1"]).check()
    assert verdict.verdict == "data"
    assert (verdict.lost_writes, verdict.lost_write_ids) == (1, ["c2:1"])
    v = only(verdict, "data")
    assert v.op_ids == ["c2:1"] and v.processes == ["c2"]
    assert v.explanation == (
        "data: 1 acknowledged write is missing from the final read at 0.200 s: c2:1 (by c2, "
        "acknowledged at 0.070 s, while c1 held the lock too).")


def test_lost_write_outside_any_hold_or_after_expiry():
    h = History().write("c1", 5, "c1:0").acquire("c2", 10, lease=20).write("c2", 40, "c2:1")
    h.release("c2", 50)
    v = only(h.final_read(100, []).check(), "data")
    assert "c1:0 (by c1, acknowledged at 0.005 s, while c1 held no lock)" in v.explanation
    assert "c2:1 (by c2, acknowledged at 0.040 s, after c2's lease expired at 0.030 s)" \
        in v.explanation


def test_writes_acknowledged_after_the_final_read_are_not_judged():
    h = History().final_read(100, []).write("c1", 150, "c1:9")
    assert h.check().lost_writes == 0


def test_failed_or_indeterminate_writes_are_not_lost():
    h = History().write("c1", 10, "c1:1", outcome="info", error="timeout")
    h.write("c1", 20, "c1:2", outcome="fail")
    verdict = h.final_read(100, []).check()
    assert verdict.violations == [] and verdict.lost_writes == 0  # (no lock cycle: inconclusive)


def test_stale_accesses_rejected_by_fencing_are_counted_not_violations():
    h = History().acquire("c1", 0).release("c1", 10)
    h.write("c1", 20, "c1:1", outcome="fail", error="stale-token")
    h.read("c1", 30, outcome="fail", error="stale-token")
    h.acquire("c2", 40).release("c2", 50)  # two lock cycles: a run that exercised the lock
    verdict = h.final_read(100, []).check()
    assert verdict.verdict == "ok"
    assert verdict.stale_writes_rejected == 2
    assert verdict.lost_writes == 0


def test_without_a_final_read_lost_writes_are_not_judged():
    verdict = History().write("c1", 10, "c1:1").check()
    assert verdict.lost_writes is None and verdict.lost_write_ids is None
    assert verdict.verdict == "ok"
    assert "the history has no final read: lost writes were not judged" in verdict.notes


def test_many_lost_writes_are_summarised():
    h = History()
    for i in range(8):
        h.write("c1", 10 + i, f"c1:{i}")
    v = only(h.final_read(100, []).check(), "data")
    assert v.explanation.startswith("data: 8 acknowledged writes are missing")
    assert v.explanation.endswith("and 3 more.")
    assert len(v.op_ids) == 8


# -- the verdict ----------------------------------------------------------------------------


def test_verdict_is_the_worst_kind_and_violations_are_worst_first():
    h = blocked(700).acquire("c1", 800, lease=10).acquire("c2", 850).release("c1", 900)
    h.release("c2", 900).write("c3", 950, "c3:1").final_read(1000, [])
    verdict = h.check()
    assert verdict.verdict == "data"
    assert [v.kind for v in verdict.violations] == ["data", "liveness", "soft"]
    h.acquire("c1", 1100).acquire("c2", 1110)
    verdict = h.check()
    assert verdict.verdict == "hard"
    assert [v.kind for v in verdict.violations] == ["hard", "data", "liveness", "soft"]
    assert verdict.explanations == [v.explanation for v in verdict.violations]


@pytest.mark.parametrize(
    ("found", "fail_on", "expected"),
    [("ok", "soft", False), ("soft", "soft", True), ("soft", "liveness", False),
     ("liveness", "liveness", True), ("liveness", "data", False), ("data", "data", True),
     ("data", "hard", False), ("hard", "hard", True), ("hard", "soft", True)],
)
def test_fails_by_rank(found, fail_on, expected):
    histories = {
        "ok": History(),
        "soft": History().acquire("c1", 0, lease=10).acquire("c2", 20),
        "liveness": blocked(700),
        "data": History().write("c1", 1, "c1:1").final_read(2, []),
        "hard": History().acquire("c1", 0).acquire("c2", 20),
    }
    verdict = histories[found].check()
    assert verdict.verdict == found
    assert fails(verdict, fail_on) is expected


def test_fails_rejects_unknown_kinds():
    with pytest.raises(ValueError, match="unknown violation kind"):
        fails(History().check(), "catastrophic")


def test_to_dict_is_json_with_the_documented_fields():
    verdict = foreign_release_history().final_read(500, []).check()
    data = json.loads(json.dumps(verdict.to_dict()))
    for key in ("verdict", "hard_violations", "soft_violations", "liveness_violations",
                "lost_writes", "lost_write_ids", "stale_writes_rejected",
                "first_hard_violation_s", "explanations", "violations", "counts", "ttl_ms",
                "lock", "notes", "duration_s"):
        assert key in data
    assert data["verdict"] == "hard" and data["first_hard_violation_s"] == 0.21
    assert {"kind", "processes", "start_s", "end_s", "explanation", "cause"} <= set(
        data["violations"][0])
    assert data["counts"]["events"] == len(foreign_release_history().events) + 2


def test_times_count_from_the_first_event_without_a_start_event():
    h = History(start=False).acquire("c1", 1000).acquire("c2", 1100)
    verdict = h.check()
    assert only(verdict, "hard").start_s == 0.1
    assert verdict.ttl_ms is None and verdict.lock is None
    assert any("no harness start event" in note for note in verdict.notes)


def test_empty_history_is_ok():
    verdict = check([])
    assert verdict.verdict == "ok" and verdict.counts["events"] == 0


def test_a_release_that_got_no_answer_is_named_as_a_possible_cause():
    """c3's DEL whose reply a fault lost (``info``) ran all the same and removed c1's key:
    the overlap was "unexplained" (del-release's audit in CI, a reply-lost fault on)."""
    h = History().acquire("c3", 0, lease=100).acquire("c1", 150, lease=300)
    h.release("c3", 160, 190, outcome="info").acquire("c2", 250)
    v = only(h.check(), "hard")
    assert (v.processes, v.cause) == (["c1", "c2"], "in-flight-release")
    assert ("c3 may have released c1's lock: c3's release, invoked at 0.160 s, got no answer "
            "(given up at 0.190 s)") in v.explanation


def test_a_live_release_that_got_no_answer_before_the_holder_acquired_is_not_the_cause():
    """c3 released its own valid lease and gave up waiting before c1 acquired: c1's SET NX
    could only succeed once c3's key was gone, so that DEL removed c3's key, not c1's."""
    h = History().acquire("c3", 0, lease=300).release("c3", 100, 120, outcome="info")
    h.acquire("c1", 150, lease=300).acquire("c2", 250)
    assert only(h.check(), "hard").cause == "unexplained"


def test_an_acquire_that_outlasted_its_lease_and_was_granted_is_named():
    """redlock-rs paused before its third SET past the TTL: its first keys expired, c3 took
    the lock, and c2 was granted all the same with a lease for ever (an unsigned validity
    that wrapped). It was "unexplained"."""
    h = History().acquire("c3", 755, lease=178).acquire("c2", 801, invoked=500, lease=10**9)
    v = only(h.release("c3", 808).check(), "hard")
    assert (v.processes, v.cause) == (["c3", "c2"], "acquire-outlasted-lease")
    assert ("c2's acquire, invoked at 0.500 s, took 301 ms, longer than the 200 ms TTL, and the "
            "lock granted it a lease until") in v.explanation


def test_an_outlasted_acquire_whose_lease_no_key_backs_is_named_before_an_overwrite():
    """The redlock crate's audit: every client paused before its last node; c5's losing
    acquire, under way when c3 acquired, failed after it — the hypothesis that it overwrote
    c3's expiry was named, and c2's grant with a lease for ever came second. A lease more
    than two TTLs past its grant rests on no key its acquire set: that is the cause."""
    h = History().attempt("c5", 450, 760).acquire("c3", 755, lease=178)
    h.acquire("c2", 801, invoked=500, lease=10**9)
    v = only(h.release("c3", 808).check(), "hard")
    assert v.cause == "acquire-outlasted-lease"
    within = History().attempt("c5", 450, 760).acquire("c3", 755, lease=178)
    within.acquire("c2", 801, invoked=500, lease=350)
    assert only(within.release("c3", 808).check(), "hard").cause == "overwrote"


def test_a_lock_whose_keys_outlive_the_ttl_is_not_judged_by_it():
    """sherlock with no expiry claims a day on every grant, as its keys would live: an
    acquire of it that took longer than the run's TTL (a pause inside it) was named "took
    longer than the 200 ms TTL … any key it set had expired", of a key meant to live a day.
    A lock's own key lifetime is what its quick grants claim."""
    day = 86_400_000
    h = History().acquire("c3", 2, invoked=1, lease=day).release("c3", 5)
    h.acquire("c1", 350, lease=day).acquire("c2", 400, invoked=20, lease=day)
    v = only(h.check(), "hard")
    assert v.cause != "acquire-outlasted-lease", v.explanation
    assert "longer than" not in v.explanation
    # the same grants with leases the TTL backs: the wrapped claim is still named
    h = History().acquire("c3", 2, invoked=1, lease=200).release("c3", 5)
    h.acquire("c1", 350, lease=200).acquire("c2", 400, invoked=20, lease=day)
    assert only(h.check(), "hard").cause == "acquire-outlasted-lease"


def test_an_earlier_holder_whose_lease_no_key_backs_is_named_before_an_overwrite():
    """The redlock crate's audit, seed 1: c2, paused before its last node, was granted a
    lease for ever 260 ms after it asked; its other keys had expired, and c5 took the lock
    11 ms later. c1's losing acquire, under way across c2's grant, was named instead ("if
    this lock's acquire writes before it knows it won, … overwrote c2's expiry")."""
    h = History().attempt("c1", 432, 697).acquire("c2", 687, invoked=427, lease=10**9)
    v = only(h.acquire("c5", 698, lease=187).release("c2", 739).check(), "hard")
    assert (v.processes, v.cause) == (["c2", "c5"], "acquire-outlasted-lease"), v.explanation
    assert "c2's acquire, invoked at 0.427 s, took 260 ms, longer than the 200 ms TTL" \
        in v.explanation


def test_a_losing_acquire_the_holder_extended_after_is_not_named_an_overwrite():
    """The whole-seconds extend (each extend lost what a truncated PTTL dropped): c1's losing
    acquire had failed 5 ms into c2's hold, c2 extended four times after it, and c3's grant
    while c2's lease was valid read "that losing acquire overwrote c2's expiry". An extend
    invoked after the losing acquire returned wrote c2's expiry again before c3 asked."""
    h = History().attempt("c1", 0, 5).acquire("c2", 3, lease=200)
    for ms in (70, 140, 210, 280):
        h.extend("c2", ms, ms + 400)
    v = only(h.acquire("c3", 300).release("c2", 500).check(), "hard")
    assert v.cause != "overwrote", v.explanation
    # without those extends, the overwrite still fits the times
    h = History().attempt("c1", 0, 5).acquire("c2", 3, lease=600)
    v = only(h.acquire("c3", 300).release("c2", 500).check(), "hard")
    assert v.cause == "overwrote", v.explanation


def test_a_release_of_a_key_the_releasers_extend_took_over_names_the_extend():
    """``SET key token XX`` (broken_locks.extend_sets_anyones_key), a fresh clone's CI: c2's
    extend, invoked just before a pause, answered after it with a lease already past; its
    command wrote c2's token over c1's key, and c2's release then removed it — c3 took the
    lock while c1's lease was valid. The overlap read "c2 released c1's lock": the release
    only removed what the extend had made c2's."""
    h = History().acquire("c2", 0, lease=200)
    h.add(120, "invoke", "c2", "extend", token=h.tokens["c2"])
    h.acquire("c1", 210, lease=500)
    h.add(560, "ok", "c2", "extend", token=h.tokens["c2"], valid_until=at(320))
    h.release("c2", 561, 562).acquire("c3", 563).release("c1", 600, outcome="fail")
    v = only(h.check(), "hard")
    assert (v.processes, v.cause) == (["c1", "c3"], "foreign-extend"), v.explanation
    assert ("c2's extend at 0.560 s succeeded although c1 had held the lock since 0.210 s: "
            "the extend does not check whose key it extends. Before it, c2's lease expired "
            "at 0.200 s; after it, c2's release returned true at 0.562 s, removing c1's key"
            ) in v.explanation
    # a release that got no answer is no "returned true"
    h = History().acquire("c2", 0, lease=200)
    h.add(120, "invoke", "c2", "extend", token=h.tokens["c2"])
    h.acquire("c1", 210, lease=500)
    h.add(560, "ok", "c2", "extend", token=h.tokens["c2"], valid_until=at(320))
    h.release("c2", 561, 562, outcome="info").acquire("c3", 563)
    v = only(h.release("c1", 600, outcome="fail").check(), "hard")
    assert "returned true" not in v.explanation, v.explanation
    # no extend between: the release alone
    h = History().acquire("c2", 0, lease=200).acquire("c1", 210, lease=500)
    h.release("c2", 561, 562).acquire("c3", 563).release("c1", 600, outcome="fail")
    assert only(h.check(), "hard").cause == "foreign-release"


def test_a_live_leases_release_in_flight_across_a_grant_is_no_suspect():
    """A fresh clone's CI: c1's release of a lease still valid for 140 ms was in flight 0.9 ms
    across c2's grant; c2 was then paused past its lease, c3 took the lock, and c2's owner-less
    extend took it back. "Before it, c1 released c2's lock: c1's release … was still in flight
    when c2 acquired": but c1's key stood until its command ran, so c2's SET NX came after
    it. Before it, c2's lease expired."""
    h = History().acquire("c1", 0, lease=340)
    h.add(200, "invoke", "c1", "release", token=h.tokens["c1"])
    h.acquire("c2", 200.8, invoked=200.5, lease=200)
    h.add(200.9, "ok", "c1", "release", token=h.tokens["c1"])
    h.acquire("c3", 406, lease=200).extend("c2", 530, 730).release("c2", 600)
    v = only(h.release("c3", 650, outcome="fail").check(), "hard")
    assert (v.processes, v.cause) == (["c2", "c3"], "foreign-extend"), v.explanation
    assert "Before it, c2's lease expired at 0.401 s while c2 still held it" in v.explanation
    # its lease gone before it returned: its command may have come after c2's SET NX
    h = History().acquire("c1", 0, lease=200.7)
    h.add(200, "invoke", "c1", "release", token=h.tokens["c1"])
    h.acquire("c2", 200.8, invoked=200.5, lease=500)
    h.add(200.9, "ok", "c1", "release", token=h.tokens["c1"])
    v = only(h.acquire("c3", 406, lease=200).check(), "hard")
    assert v.cause == "in-flight-release", v.explanation


def test_an_acquire_quicker_than_the_ttl_is_not_named_so():
    h = History().acquire("c3", 755, lease=178).acquire("c2", 801, invoked=650, lease=300)
    assert only(h.release("c3", 808).check(), "hard").cause == "unexplained"


def test_a_chain_of_releases_that_made_an_overlap_is_named():
    """del-release under load (CI): c3's stale DEL removed c2's key, c4's SET NX took the lock,
    c2's own release removed c4's key and c2 acquired again; both then held it, and the
    overlap read "unexplained" (c2's release was of a live lease, which alone cannot remove
    another's key). Named last, after every other cause."""
    h = History().acquire("c3", 0, lease=50).acquire("c2", 13, lease=200)
    h.release("c3", 64, 64.5).acquire("c4", 67, invoked=64, lease=200)
    h.release("c2", 65, 66).acquire("c2", 66.2, invoked=66, lease=200)
    (v,) = [v for v in h.check().violations if v.processes == ["c2", "c4"]]
    assert v.kind == "hard" and v.cause == "in-flight-release"
    assert "released c4's lock" in v.explanation
