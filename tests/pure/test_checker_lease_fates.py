"""Leases the lock gave up, left out of reach, or kept on purpose (docs/history-format.md,
"Leases the lock gave up, lost or kept"): an extend whose completion says ``value.lease``
``revoked`` or ``invalidated`` ends its hold there, and a revoked lease claims no validity
from that extend's invocation on; a release that ``kept`` its key makes no unavailability of
the stretch it kept it for. Each test is a history the checker misread before."""

from __future__ import annotations

from test_checker_support import History

from chaos.history import INVALIDATED, KEPT, LEASE, REVOKED


def lost(h: History, p: str, ms: float, done: float, fate: str, *, outcome: str = "fail",
         error: str | None = None) -> History:
    """``p``'s extend invoked at ``ms``, answered at ``done`` with the lease's ``fate``."""
    token = h.tokens[p]
    h.add(ms, "invoke", p, "extend", token=token)
    extra = {} if error is None else {"error": error}
    return h.add(done, outcome, p, "extend", token=token, value={LEASE: fate}, **extra)


def test_a_revoked_lease_ends_the_hold_and_the_next_holder_overlaps_nothing() -> None:
    """c1's extend at 50 ms came back revoked at 52 ms (its library deleted the key); c2 took
    the lock at 60 ms, inside c1's old lease (200 ms). Before: c1 still held, hard."""
    h = History().acquire("c1", 0)
    lost(h, "c1", 50, 52, REVOKED)
    verdict = h.acquire("c2", 60).release("c2", 150).check()
    assert verdict.verdict == "ok", verdict.explanations
    assert verdict.counts["extend_fail"] == 1


def test_a_revoked_lease_claims_nothing_from_its_extends_invocation() -> None:
    """The key may have gone at any instant after the extend was sent: c2 granted while the
    answer was on its way overlaps c1, but not within c1's lease: soft, not hard."""
    h = History().acquire("c1", 0)
    lost(h, "c1", 50, 70, REVOKED)
    verdict = h.acquire("c2", 60).release("c2", 150).check()
    assert verdict.hard_violations == 0 and verdict.soft_violations == 1, verdict.explanations
    [soft] = verdict.violations
    assert soft.expires_s["c1"] == 0.05


def test_a_renewal_racing_the_revoking_extend_does_not_revive_the_lease() -> None:
    h = History().acquire("c1", 0)
    h.add(50, "invoke", "c1", "extend", token=h.tokens["c1"])
    h.renew("c1", 55, 300)  # a watchdog's renewal, sent while the extend was out
    h.add(70, "fail", "c1", "extend", token=h.tokens["c1"], value={LEASE: REVOKED})
    verdict = h.acquire("c2", 60).release("c2", 150).check()
    assert verdict.hard_violations == 0, verdict.explanations


def test_an_invalidated_lease_ends_the_hold_but_keeps_its_deadline() -> None:
    """Nothing more can be sent for it, so c1 let go at the answer (65 ms): c2 granted after
    it overlaps nobody. c2 granted while the answer was on its way (60 ms) met c1 inside its
    still-valid lease: hard, as for any extend that did not extend."""
    h = History().acquire("c1", 0)
    lost(h, "c1", 50, 55, INVALIDATED)
    assert h.acquire("c2", 60).release("c2", 150).check().verdict == "ok"
    h = History().acquire("c1", 0)
    lost(h, "c1", 50, 65, INVALIDATED, outcome="info", error="TimeoutError: timed out")
    verdict = h.acquire("c2", 60).release("c2", 150).check()
    assert verdict.hard_violations == 1 and verdict.counts["extend_info"] == 1


def test_a_fate_of_another_token_or_outside_an_extend_ends_nothing() -> None:
    h = History().acquire("c1", 0)
    h.add(50, "invoke", "c1", "extend", token="someone-else")
    h.add(52, "fail", "c1", "extend", token="someone-else", value={LEASE: REVOKED})
    assert h.acquire("c2", 60).release("c1", 120).check().hard_violations == 1


def blocked_after_kept(kept_ms: float | None) -> History:
    """c1 releases at 100 ms with its key kept (until ``kept_ms``, or its lease's deadline
    when None); c2 fails to acquire from 110 ms every 10 ms until 700 ms, then gets it."""
    h = History(ttl_ms=100).acquire("c1", 0, lease=900)
    h.add(100, "invoke", "c1", "release", token=h.tokens["c1"])
    until = {} if kept_ms is None else {"valid_until": 1_000_000_000_000 + int(kept_ms * 1e6)}
    h.add(101, "ok", "c1", "release", token=h.tokens["c1"], value={LEASE: KEPT}, **until)
    for ms in range(110, 700, 10):
        h.attempt("c2", ms, ms + 1)
    return h.acquire("c2", 705).release("c2", 750)


def test_a_release_that_kept_its_key_is_not_an_outage_while_it_keeps_it() -> None:
    """Kept until 650 ms: the failures before are the lock doing what it said; after it, 50 ms
    of them is no outage. Kept until its lease's deadline (900 ms, past c2's grant): none."""
    assert blocked_after_kept(650).check().liveness_violations == 0
    assert blocked_after_kept(None).check().liveness_violations == 0
    # the same history without the keeping: 6 TTLs of failures while nobody held it
    h = History(ttl_ms=100).acquire("c1", 0, lease=900).release("c1", 100, 101)
    for ms in range(110, 700, 10):
        h.attempt("c2", ms, ms + 1)
    assert h.acquire("c2", 705).check().liveness_violations == 1


def test_failures_after_the_kept_key_ran_out_still_count() -> None:
    """Kept only until 150 ms: from then to 700 ms is 5.5 TTLs of failures: liveness."""
    verdict = blocked_after_kept(150).check()
    assert verdict.liveness_violations == 1
    [outage] = verdict.violations
    assert outage.start_s == 0.15


def test_a_kept_release_removed_no_key_and_is_not_a_foreign_release() -> None:
    """c2's release kept its key, and its answer came back after c1 acquired; c3 then
    overlaps c1: the explanation must not blame c2's release, in flight across c1's acquire
    (it deleted nothing). Before, it read "c2 released c1's lock"."""
    h = History().acquire("c2", 0, lease=50)
    h.add(10, "invoke", "c2", "release", token=h.tokens["c2"])
    h.add(70, "ok", "c2", "release", token=h.tokens["c2"], value={LEASE: KEPT},
          valid_until=1_000_000_000_000 + 50_000_000)
    h.acquire("c1", 60).acquire("c3", 100).release("c3", 150)
    [hard] = h.release("c1", 160).check().violations
    assert hard.cause != "foreign-release" and "c2" not in hard.explanation, hard.explanation
