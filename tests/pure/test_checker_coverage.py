"""Fault coverage from a history: fired, had an effect, time on — for any fault name, by the
evidence its start event declares (chaos.checker.coverage)."""

from __future__ import annotations

from test_checker_support import History

from chaos.checker import scan
from chaos.checker.coverage import FaultCoverage, coverage
from chaos.checker.verdict import EXIT_INCONCLUSIVE, EXIT_OK, EXIT_VIOLATION, exit_status


def _coverage(history: History) -> dict[str, FaultCoverage]:
    """In time order, as a history is read (a fault's stop is written with its start)."""
    return coverage(scan.scan(sorted(history.events, key=lambda event: event.t)))


def test_a_client_fault_has_an_effect_when_its_target_holds() -> None:
    h = (History().acquire("c1", 10).fault("f1", "client-pause", 50, 300, target={"client": "c1"})
         .release("c1", 320).fault("f2", "client-pause", 400, 450, target={"client": "c2"})
         .final_read(600, []))  # fmt: skip
    cov = _coverage(h)["client-pause"]
    assert (cov.fired, cov.effective) == (2, 1)
    assert cov.active_s == 0.3  # 250 ms + 50 ms


def test_a_client_fault_has_an_effect_when_its_target_is_acquiring() -> None:
    """Paused while its acquire was in flight (it was refused later): the lock saw it."""
    h = (History().fault("f1", "client-pause", 50, 300, target={"client": "c2"})
         .attempt("c2", 40, 310).final_read(600, []))  # fmt: skip
    assert _coverage(h)["client-pause"].effective == 1


def test_a_reported_fault_counts_only_what_it_reported() -> None:
    """slow-work arms its client's next critical section: only the client's effect event
    (the slow section began) says it did something; a holder meanwhile does not."""
    h = (History().fault("f1", "slow-work", 10, 10, target={"client": "c2"})
         .acquire("c2", 100).effect(101, "f1", "c2 worked 500 ms holding the lock", p="c2")
         .release("c2", 600)
         .fault("f2", "slow-work", 610, 610, target={"client": "c3"})
         .acquire("c3", 700).release("c3", 750)  # c3 never got its slow section
         .final_read(800, []))  # fmt: skip
    cov = _coverage(h)["slow-work"]
    assert (cov.fired, cov.effective) == (2, 1)


def test_bytes_a_network_fault_dropped_count_only_while_their_client_was_at_the_lock() -> None:
    """Toxiproxy's count of what a partition dropped on a client's link is its effect when
    that client had a lock operation in flight then (a request cut, an acquire that will
    fail) — not when it held the lock and worked, its library pinging (f2), nor for another
    client (f3). Lost replies counted once the heal closed their connections are dated from
    the fault's start: an operation in flight any time while it was on (f4)."""
    h = (History()
         .fault("f1", "partition", 10, 200, target={"client": "c1", "nodes": ["n0"]})
         .attempt("c1", 100, 101, outcome="info", error="ConnectionError: reset")
         .dropped(150, "f1", "c1", since=50)
         .acquire("c2", 210)
         .fault("f2", "partition", 220, 400, target={"client": "c2", "nodes": ["n0"]})
         .dropped(300, "f2", "c2", since=250)  # its keep-alive: it holds and works
         .release("c2", 500)
         .fault("f3", "partition", 510, 700, target={"client": "c3", "nodes": ["n0"]})
         .attempt("c1", 600, 601, outcome="info", error="ConnectionError: reset")
         .dropped(650, "f3", "c3", since=590)  # c3's bytes: c3 was not at the lock
         .fault("f4", "reply-lost", 710, 900, target={"client": "c1"})
         .attempt("c1", 750, 800, outcome="info", error="TimeoutError")
         .dropped(905, "f4", "c1", since=710, requests=0, replies=5)  # counted at the heal
         .final_read(1000, []))  # fmt: skip
    assert _coverage(h)["partition"].effective == 1
    assert _coverage(h)["reply-lost"].effective == 1


def test_a_dropped_request_counts_for_an_operation_that_ended_a_moment_before() -> None:
    """Toxiproxy counts a reset connection's bytes a moment after the client saw the reset
    and its operation ended: a reading of that moment dates the drop from after it."""
    h = (History()
         .fault("f1", "reset", 10, 200, target={"client": "c1"})
         .attempt("c1", 100, 101, outcome="info", error="ConnectionError: reset")
         .dropped(160, "f1", "c1", since=110)  # 9 ms after the acquire ended: within slack
         .fault("f2", "reset", 210, 400, target={"client": "c1"})
         .attempt("c1", 300, 301, outcome="info", error="ConnectionError: reset")
         .dropped(380, "f2", "c1", since=340)  # 39 ms after: another operation's, not this
         .final_read(500, []))  # fmt: skip
    assert _coverage(h)["reset"].effective == 1


def test_a_pause_point_counts_for_the_fault_that_armed_it() -> None:
    h = (History().acquire("c1", 5)
         .fault("f1", "client-pause-at", 10, 300, target={"client": "c1"})
         .pause_point("c1", 100, "DEL", fault="f1")
         .fault("f2", "client-pause-at", 310, 600, target={"client": "c1"})
         .pause_point("c1", 400, "DEL")  # armed by no fault (an explorer step, a test)
         .final_read(700, []))  # fmt: skip
    assert _coverage(h)["client-pause-at"].effective == 1


def test_a_kill_counts_only_when_its_client_was_at_the_lock() -> None:
    h = (History().acquire("c1", 10)
         .fault("f1", "client-crash", 50, 50, target={"client": "c1"})
         .crash("c1", 50, fault="f1")
         .fault("f2", "client-crash", 300, 300, target={"client": "c2"})
         .crash("c2", 300, fault="f2")
         .final_read(400, []))  # fmt: skip
    assert _coverage(h)["client-crash"].effective == 1  # c2 was between attempts


def test_a_server_fault_has_an_effect_when_anyone_holds_and_an_unknown_name_counts_too() -> None:
    h = (History().acquire("c3", 10).fault("f1", "my-own-fault", 50, 100, target={"nodes": ["n0"]},
                                           effects=[])
         .release("c3", 120).fault("f2", "my-own-fault", 300, None, target={"nodes": ["n1"]},
                                   effects=[])
         .final_read(500, []))  # fmt: skip
    cov = _coverage(h)["my-own-fault"]
    assert (cov.fired, cov.effective) == (2, 1)
    assert cov.active_s == 0.25  # 50 ms + the open one until the end (200 ms)


def test_a_fault_aimed_at_every_client_meets_whoever_holds() -> None:
    """``client=*`` names no one client: any holder meanwhile counts."""
    h = (History().fault("f1", "client-pause", 10, 300, target={"client": "*"})
         .acquire("c2", 100).release("c2", 150).final_read(400, []))  # fmt: skip
    assert _coverage(h)["client-pause"].effective == 1


def _cycles(h: History, p: str = "c1", start: float = 0) -> History:
    for i in range(3):
        h.acquire(p, start + 10 + 40 * i).release(p, start + 30 + 40 * i)
    return h


def test_a_pause_point_never_reached_says_what_the_lock_sends_instead() -> None:
    """The issue's case: the default point is DEL, and lua's release sends EVAL."""
    h = History()
    h.events[0].value["faults"] = ["client-pause-at"]
    h.command("c1", 1, "acquire", "SET").command("c1", 2, "release", "EVAL")
    h.fault("f1", "client-pause-at", 5, 200, target={"client": "c1"},
            params={"command": "DEL", "op": "release", "duration_ms": 300})
    verdict = _cycles(h).final_read(300, []).check()
    assert verdict.verdict == "inconclusive"
    assert verdict.inconclusive_reasons == [
        "client-pause-at:command=DEL never reached: this lock's release sends EVAL; "
        "try command=EVAL"
    ]


def test_a_script_load_never_reached_says_a_flush_reaches_it_and_is_never_the_advice() -> None:
    """redis-py's release sends EVALSHA, and SCRIPT (LOAD) only after a NOSCRIPT: a point
    there waits for an emptied script cache, and a point the lock never sends is pointed at
    the act, not at the load."""
    def reasons(command: str) -> list[str]:
        h = History()
        h.events[0].value["faults"] = ["client-pause-at"]
        h.command("c1", 1, "acquire", "SET").command("c1", 2, "release", "EVALSHA")
        h.command("c1", 3, "release", "SCRIPT")
        h.fault("f1", "client-pause-at", 5, 200, target={"client": "*"},
                params={"command": command, "op": "release", "duration_ms": 300})
        return _cycles(h).final_read(300, []).check().inconclusive_reasons

    assert reasons("DEL") == [
        "client-pause-at:command=DEL never reached: this lock's release sends EVALSHA, "
        "SCRIPT; try command=EVALSHA"
    ]
    assert reasons("SCRIPT") == [
        "client-pause-at:command=SCRIPT never reached while armed: this lock's release sends "
        "it only after a NOSCRIPT reply, when a node's script cache is empty (a restart, a "
        "failover, SCRIPT FLUSH): a fault that empties it after the point is armed reaches "
        "it (--faults-in-order)"
    ]


def test_a_run_asked_to_extend_that_never_extended_is_inconclusive() -> None:
    h = History()
    h.events[0].value.update(extend_during_work=True, work_ms=0)
    h.add(1, "info", "c1", "lock-ready", value={"extend": True})
    verdict = _cycles(h).final_read(300, []).check()
    assert verdict.verdict == "inconclusive"
    assert "no extend ran" in verdict.inconclusive_reasons[0]


def test_a_renewing_lock_that_never_renewed_is_inconclusive_and_one_that_did_is_not() -> None:
    h = History()
    h.events[0].value["renews"] = True
    verdict = _cycles(h).final_read(300, []).check()
    assert verdict.verdict == "inconclusive"
    assert "no renewal was recorded" in verdict.inconclusive_reasons[0]
    renewed = History()
    renewed.events[0].value["renews"] = True
    _cycles(renewed).renew("c1", 115, 400)
    assert renewed.final_read(300, []).check().verdict == "ok"


def test_a_point_on_a_command_the_lock_sends_but_never_while_armed_says_so() -> None:
    h = History()
    h.events[0].value["faults"] = ["client-pause-at"]
    h.command("c1", 1, "release", "DEL")
    h.fault("f1", "client-pause-at", 5, 200, target={"client": "c2"},
            params={"command": "DEL", "op": "release", "duration_ms": 300})
    (reason,) = _cycles(h).final_read(300, []).check().inconclusive_reasons
    assert reason.startswith("client-pause-at:command=DEL never reached while armed: this "
                             "lock's release sends it")


def test_a_reported_fault_without_effect_says_what_the_lock_sends() -> None:
    """A fault that needs something the lock does not do (script-flush needs EVALSHA) is
    told apart by the lock's surface, named in the reason."""
    h = History()
    h.events[0].value["faults"] = ["script-flush"]
    h.command("c1", 1, "acquire", "SET").command("c1", 2, "release", "EVAL")
    h.fault("f1", "script-flush", 5, 200, target={"nodes": ["n0"]})
    (reason,) = _cycles(h).final_read(300, []).check().inconclusive_reasons
    assert reason.startswith("script-flush fired once and did nothing to the lock")
    assert reason.endswith("it sends acquire SET; release EVAL)")


def test_violations_below_the_gate_do_not_pass_a_run_whose_fault_never_reached_the_lock() -> None:
    """A soft overlap is evidence (the verdict is soft, not inconclusive), but a gate on hard
    must not go green on a run whose only fault never reached the lock: exit 3, saying why;
    at the gate the violation fails it (1), and the reason stays said beside it."""
    h = History()
    h.events[0].value["faults"] = ["client-pause-at"]
    h.command("c1", 1, "acquire", "SET").command("c1", 2, "release", "EVAL")
    h.fault("f1", "client-pause-at", 5, 200, target={"client": "c1"},
            params={"command": "DEL", "op": "release", "duration_ms": 300})
    _cycles(h)
    h.acquire("c1", 300, lease=10).acquire("c2", 320)  # c1's lease lapsed: soft
    verdict = h.final_read(400, []).check()
    assert verdict.verdict == "soft" and not verdict.inconclusive
    assert verdict.inconclusive_reasons == [
        "client-pause-at:command=DEL never reached: this lock's release sends EVAL; "
        "try command=EVAL"
    ]
    assert exit_status(verdict, "hard") == EXIT_INCONCLUSIVE
    assert exit_status(verdict, "hard", allow_inconclusive=True) == EXIT_OK
    assert exit_status(verdict, "soft") == EXIT_VIOLATION
    reached = History()
    reached.events[0].value["faults"] = ["client-pause"]
    _cycles(reached)
    reached.fault("f1", "client-pause", 5, 200, target={"client": "c1"})
    reached.acquire("c1", 300, lease=10).acquire("c2", 320)
    met = reached.final_read(400, []).check()
    assert met.verdict == "soft" and met.inconclusive_reasons == []
    assert exit_status(met, "hard") == EXIT_OK
