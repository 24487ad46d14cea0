"""A renewing lock that lets a lease lapse while its holder ran: hard (chaos.checker.renewals).

Hand-built histories; times in ms since the run start (tests/pure/test_checker_support.py). A lease
is 200 ms (the TTL), so a watchdog renewal is tolerated up to 250 ms past its deadline (the
tolerance's floor; one TTL would be 200 ms).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from test_checker_support import History, at

from chaos.checker import exit_status


def renewing(**options: object) -> History:
    """A history whose start event declares a lock that renews its leases by itself."""
    h = History(**options)  # type: ignore[arg-type]
    h.events[0].value["renews"] = True
    return h


def dead_watchdog(h: History) -> History:
    """c1 acquires at 0, its watchdog renews once at 60 ms (until 260 ms) and never again;
    c1 works on and releases at 700 ms."""
    return h.acquire("c1", 0).renew("c1", 60, until=260).release("c1", 700)


def lapses(h: History) -> list[str]:
    return [v.explanation for v in h.check().violations if v.cause == "not-renewed"]


def test_a_lapse_while_the_holder_ran_is_hard_and_says_so():
    verdict = dead_watchdog(renewing()).check()
    assert verdict.verdict == "hard"
    (v,) = verdict.violations
    assert (v.kind, v.cause, v.processes) == ("hard", "not-renewed", ["c1"])
    assert (v.start_s, v.end_s) == (0.26, 0.7)
    assert v.explanation.startswith(
        "hard: c1's watchdog did not renew for 640 ms while c1 ran and its links were up: "
        "its lease from its renewal at 0.060 s ran out at 0.260 s, and c1 went on holding "
        "the lock until it released it at 0.700 s."
    )
    assert verdict.first_hard_violation_s == 0.26
    assert exit_status(verdict, "hard") == 1  # the default gate fails on it


def test_the_overlap_it_lets_in_stays_soft_next_to_it():
    h = dead_watchdog(renewing()).acquire("c2", 300).release("c2", 400)
    kinds = sorted((v.kind, v.cause) for v in h.check().violations)
    assert kinds == [("hard", "not-renewed"), ("soft", "lease-expired")]


def test_a_lock_that_does_not_declare_renewals_is_never_held_to_them():
    h = dead_watchdog(History()).acquire("c2", 300).release("c2", 400)
    assert h.check().verdict == "soft"


def test_a_paused_holder_excuses_the_lapse():
    h = renewing().fault("f1", "client-pause", 100, 600, target={"client": "c1"})
    assert dead_watchdog(h).check().verdict == "ok"


def test_a_pause_point_reached_excuses_the_lapse():
    assert lapses(dead_watchdog(renewing().pause_point("c1", 150, "EVAL", "sleep"))) == []


def test_a_crashed_holder_is_not_judged():
    h = renewing().acquire("c1", 0).renew("c1", 60, until=260).crash("c1", 700)
    assert lapses(h) == []


def test_a_hold_still_open_at_the_end_is_not_judged():
    assert lapses(renewing().acquire("c1", 0).renew("c1", 60, until=260).read("c2", 700)) == []


def test_the_holders_links_cut_excuse_it_another_clients_do_not():
    cut = renewing().fault("f1", "partition", 100, 300, target={"client": "c1", "nodes": ["n1"]})
    assert lapses(dead_watchdog(cut)) == []
    other = renewing().fault("f1", "partition", 100, 300, target={"client": "c2", "nodes": ["n1"]})
    assert len(lapses(dead_watchdog(other))) == 1


def test_a_fault_on_the_servers_excuses_it():
    h = renewing().fault("f1", "server-pause", 100, 300, target={"nodes": ["n1"]})
    assert lapses(dead_watchdog(h)) == []


def test_a_fault_after_the_lapse_does_not_excuse_it():
    h = renewing().fault("f1", "client-pause", 400, 600, target={"client": "c1"})
    assert len(lapses(dead_watchdog(h))) == 1


def test_a_renewal_late_by_less_than_a_ttl_is_tolerated():
    h = renewing().acquire("c1", 0).renew("c1", 60, until=260).renew("c1", 450, until=650)
    assert lapses(h.release("c1", 840)) == []


def test_a_renewal_later_than_that_is_a_lapse_even_though_renewals_resumed():
    h = renewing().acquire("c1", 0).renew("c1", 60, until=260).renew("c1", 560, until=760)
    (text,) = lapses(h.release("c1", 700))
    assert "did not renew for 500 ms" in text and "until its next renewal at 0.560 s" in text


def test_a_holder_the_machine_did_not_run_is_not_a_dead_watchdog():
    """Its watchdog renews the moment its process runs again: the tolerance counts only the
    time the holder ran (in CI, beside five JVMs starting, a holder's process did not run
    for 514 ms, and the renewal it sent when it did was called a dead watchdog)."""
    late = renewing().acquire("c1", 0).renew("c1", 60, until=260)
    assert len(lapses(late.renew("c1", 610, until=810).release("c1", 900))) == 1
    stalled = renewing().acquire("c1", 0).renew("c1", 60, until=260).stall("c1", 70, 600)
    assert lapses(stalled.renew("c1", 610, until=810).release("c1", 900)) == []


def test_a_stall_moves_the_tolerance_only_by_its_own_length():
    """A stall is no pause of the watchdog's own: one that never renews again is still dead
    once the holder ran a tolerance past its deadline."""
    h = renewing().acquire("c1", 0).renew("c1", 60, until=260).stall("c1", 100, 200)
    assert len(lapses(h.release("c1", 700))) == 1  # 260 + 250 + 100 < 700
    h = renewing().acquire("c1", 0).renew("c1", 60, until=260).stall("c1", 100, 200)
    assert lapses(h.release("c1", 600)) == []


def test_a_stall_that_straddles_the_end_of_the_tolerance_moves_it_by_all_its_length():
    """The end (260 + 250 = 510 ms) moves by the whole stall that began before it (to 910):
    the renewal sent at 905, when the process ran again, was in time."""
    h = renewing().acquire("c1", 0).renew("c1", 60, until=260).stall("c1", 500, 900)
    assert lapses(h.renew("c1", 905, until=1105).release("c1", 1200)) == []
    h = renewing().acquire("c1", 0).renew("c1", 60, until=260).stall("c1", 500, 900)
    assert len(lapses(h.renew("c1", 915, until=1115).release("c1", 1200))) == 1


def test_a_lease_that_ran_out_while_the_machine_did_not_run_its_holder_says_so():
    h = renewing().acquire("c1", 0).stall("c1", 100, 500).acquire("c2", 300)
    verdict = h.release("c2", 400).release("c1", 600).check()
    assert verdict.verdict == "soft"
    assert ("c1 was stalled: its process did not run for 400 ms from 0.100 s, and no fault "
            "stopped it") in verdict.violations[0].explanation


def test_one_violation_per_client_counting_its_lapses():
    h = renewing()
    for start in (0, 1000, 2000):
        h.acquire("c1", start).release("c1", start + 500)
    (text,) = lapses(h)
    assert "(3 of c1's leases lapsed like this in all)" in text


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=800), min_size=1, max_size=8))
def test_flagged_exactly_when_a_renewal_came_more_than_the_tolerance_late(gaps):
    """Renewals (and the release) ``gaps`` ms apart, each renewing for the 200 ms TTL: the
    hold is flagged iff some gap exceeds 200 + 250 ms."""
    h = renewing().acquire("c1", 0, lease=200)
    t = 0
    for gap in gaps[:-1]:
        t += gap
        h.renew("c1", t, until=t + 200)
    h.release("c1", t + gaps[-1])
    assert bool(lapses(h)) == any(gap > 200 + 250 for gap in gaps)


def test_a_lease_that_reached_its_holder_late_is_not_held_against_the_watchdog():
    """The acquire's reply came back 150 ms into its 200 ms lease (an overloaded machine): a
    watchdog renewing every TTL/3 finds the key gone; with 140 ms left it would not have."""
    late = renewing().acquire("c1", 150, invoked=0).release("c1", 650)
    assert lapses(late) == []
    in_time = renewing().acquire("c1", 60, invoked=0).release("c1", 650)
    assert len(lapses(in_time)) == 1


def test_a_renewal_sent_in_time_whose_answer_came_late_is_not_held_against_it():
    """Sent at 250 ms (before the 260 ms deadline), answered at 500 ms: an overloaded server
    or proxy, not a watchdog that stopped."""
    h = renewing().acquire("c1", 0).renew("c1", 60, until=260)
    h.add(500, "ok", "c1", "renew", token=h.tokens["c1"], valid_until=at(450),
          value={"invoked": at(250)})
    assert lapses(h.release("c1", 600)) == []


def test_a_renewal_given_up_in_time_is_not_held_against_it_one_sent_late_is():
    for sent, flagged in ((250, False), (560, True)):
        h = renewing().acquire("c1", 0).renew("c1", 60, until=260)
        h.add(sent + 10, "fail", "c1", "renew", token=h.tokens["c1"],
              value={"invoked": at(sent)})
        assert bool(lapses(h.release("c1", 700))) == flagged


def test_at_a_short_ttl_a_stall_of_the_machine_is_not_a_dead_watchdog():
    """At the audit's explore TTL (50 ms) a sound reentrant-watchdog client, both its threads,
    stood still 164 ms on an overloaded machine, and its watchdog renewed the moment it ran
    again (kept audit, 2026-11-26): within the 250 ms floor. One 300 ms late is a lapse."""
    for late, flagged in ((164, False), (300, True)):
        h = renewing(ttl_ms=50).acquire("c1", 0, lease=50).renew("c1", 15, until=65)
        h.add(65 + late + 5, "fail", "c1", "renew", token=h.tokens["c1"],
              value={"invoked": at(65 + late)})
        assert bool(lapses(h.release("c1", 65 + late + 30))) == flagged


def test_a_nested_grant_that_did_not_reenter_lapses_on_its_own_lease():
    """c1's nested acquire came back at 250 ms, after its 200 ms lease had run out: a new
    key, whose lease (to 460 ms) nothing renewed while c1 held it until its inner release at
    800 ms. Its own lease lapsed, and the explanation says which one and what ended it."""
    h = renewing().acquire("c1", 0).nest("c1", 250, invoked=10, lease=450)
    (text,) = lapses(h.release("c1", 800).release("c1", 810))
    assert ("its lease from its nested grant at 0.250 s ran out at 0.460 s, and c1 went on "
            "holding the lock until it released its nested grant at 0.800 s") in text


def test_a_lapse_names_the_extends_that_began_and_ended_it():
    """A renewing lock's holder may extend too (Redisson's watchdog lock has both): a lease
    the holder's extend gave, or one its next extend ended, is not called a renewal."""
    h = renewing().acquire("c1", 0).extend("c1", 50, until=250).extend("c1", 600, until=800)
    (text,) = lapses(h.release("c1", 700))
    assert ("its lease from its extend at 0.050 s ran out at 0.250 s, and c1 went on holding "
            "the lock until it extended it at 0.600 s") in text, text


# -- a dead watchdog: renewals that never came back once a fault healed -------------------
# At a 200 ms TTL and the client's 0.5 s socket timeout, a holder may run 200 + 500 + 250 ms
# with its links up after a heal before a watchdog that never renewed again is dead.


def reset_on_c1(h: History, start: float = 100, stop: float = 300) -> History:
    return h.fault("f1", "reset", start, stop, target={"client": "c1", "nodes": [0]})


def dead_watchdogs(h: History) -> list[str]:
    return [v.explanation for v in h.check().violations if v.cause == "dead-watchdog"]


def test_a_watchdog_that_never_renewed_after_a_fault_healed_is_dead_and_hard():
    """c1's renewal at 60 ms is its last: the reset from 100 to 300 ms cut the next one, and
    c1 works on with its links up until it releases at 2 s."""
    h = reset_on_c1(renewing()).acquire("c1", 0).renew("c1", 60, until=260)
    verdict = h.release("c1", 2000).check()
    (v,) = verdict.violations
    assert (v.kind, v.cause, v.processes) == ("hard", "dead-watchdog", ["c1"])
    assert (v.start_s, v.end_s, v.faults) == (0.3, 2.0, ["f1"])
    assert v.explanation == (
        "hard: c1's watchdog never renewed after reset f1 healed at 0.300 s, though c1 ran for "
        "1.700 s with its links up: its lease from its renewal at 0.060 s ran out at 0.260 s, "
        "and c1 went on holding the lock until it released it at 2.000 s. A renewal a fault "
        "cut must be followed by renewals once the links are back, or by the watchdog saying "
        "the lease is gone: a lock that renews its leases must renew them for as long as its "
        "holder runs.")
    assert verdict.first_hard_violation_s == 0.3
    assert exit_status(verdict, "hard") == 1  # the default gate fails on it


def test_renewals_that_come_back_once_the_link_is_back_are_a_live_watchdog():
    h = reset_on_c1(renewing()).acquire("c1", 0).renew("c1", 60, until=260)
    h.renew("c1", 350, until=550).renew("c1", 420, until=620)
    t = 420
    while t < 1900:
        t += 66
        h.renew("c1", t, until=t + 200)
    assert h.release("c1", 2000).check().violations == []


def test_a_watchdog_that_said_the_lease_was_gone_is_the_leases_end():
    """Once the link is back, its renewal finds the key expired and gives the lease up
    (validity 0: Redisson's driver and node-semaphore's say so): not a dead watchdog; nor is
    one that gave up on the fault's own error and said so."""
    for sent in (380, 150):
        h = reset_on_c1(renewing()).acquire("c1", 0).renew("c1", 60, until=260)
        h.add(sent + 5, "fail", "c1", "renew", token=h.tokens["c1"],
              value={"invoked": at(sent)})
        assert dead_watchdogs(h.release("c1", 2000)) == [], sent


def test_a_renewal_the_fault_cut_is_no_answer():
    """A renewal that raised (a ``renew`` ``fail`` with an ``error``: python-redis-lock's
    renewer, reported by its adapter, then dead) shows the watchdog alive at that instant,
    not the lease's end: the holder's 950 ms count from the heal, or from such a renewal sent
    after it."""
    def raised(h: History, sent: float) -> History:
        return h.add(sent + 5, "fail", "c1", "renew", token=h.tokens["c1"],
                     value={"invoked": at(sent)}, error="ConnectionError: reset by peer")
    for sent, release, flagged in ((150, 2000, True), (1200, 2000, False), (1000, 2000, True)):
        h = reset_on_c1(renewing()).acquire("c1", 0).renew("c1", 60, until=260)
        found = dead_watchdogs(raised(h, sent).release("c1", release))
        assert bool(found) == flagged, (sent, found)


def test_a_lease_an_extend_revoked_is_not_a_dead_watchdog():
    h = reset_on_c1(renewing()).acquire("c1", 0).renew("c1", 60, until=260)
    h.add(1900, "invoke", "c1", "extend", token=h.tokens["c1"])
    h.add(1901, "fail", "c1", "extend", token=h.tokens["c1"], value={"lease": "revoked"})
    assert dead_watchdogs(h) == []


def test_a_holder_that_did_not_run_long_enough_after_the_heal_is_not_judged():
    """950 ms with its links up after the heal: the first renewal after a heal may wait for
    a renewal in flight to time out (0.5 s) and a renewal period (a TTL at most)."""
    for release, flagged in ((1200, False), (1300, True)):
        h = reset_on_c1(renewing()).acquire("c1", 0).renew("c1", 60, until=260)
        assert bool(dead_watchdogs(h.release("c1", release))) == flagged, release


def test_a_longer_socket_timeout_waits_longer():
    h = reset_on_c1(renewing()).acquire("c1", 0).renew("c1", 60, until=260)
    h.events[0].value["socket_timeout_s"] = 2.0
    assert dead_watchdogs(h.release("c1", 2000)) == []


def test_the_time_its_process_did_not_run_does_not_count():
    h = reset_on_c1(renewing()).acquire("c1", 0).renew("c1", 60, until=260).stall("c1", 400,
                                                                                  1500)
    assert dead_watchdogs(h.release("c1", 2000)) == []


def test_counted_from_the_last_fault_that_touched_the_holder():
    """A second reset from 1 s to 1.5 s: the holder ran 500 ms with its links up after it."""
    h = reset_on_c1(renewing()).fault("f2", "reset", 1000, 1500,
                                      target={"client": "c1", "nodes": [0]})
    h.acquire("c1", 0).renew("c1", 60, until=260)
    assert dead_watchdogs(h.release("c1", 2000)) == []
    assert len(dead_watchdogs(reset_on_c1(renewing()).acquire("c1", 0).renew(
        "c1", 60, until=260).release("c1", 2000))) == 1


def test_after_a_pause_point_too():
    h = renewing().pause_point("c1", 150, "EVAL", "sleep").acquire("c1", 0)
    (text,) = dead_watchdogs(h.renew("c1", 60, until=260).release("c1", 2000))
    assert text.startswith("hard: c1's watchdog never renewed after c1 reached pause-point "
                           "EVAL (sleep) at 0.150 s, though c1 ran for 1.850 s"), text


def test_a_fault_on_another_client_is_an_unexcused_lapse_not_a_dead_watchdog():
    h = renewing().fault("f1", "reset", 100, 300, target={"client": "c2", "nodes": [0]})
    verdict = h.acquire("c1", 0).renew("c1", 60, until=260).release("c1", 2000).check()
    assert [v.cause for v in verdict.violations] == ["not-renewed"]
