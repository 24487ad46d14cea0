"""The checker on runs that did not exercise the lock (``inconclusive``) and on bugs in the lock
(exceptions that are not Redis errors), from hand-built histories: the conditions of
``chaos.checker.exercised``, their sentences, and the exit statuses they lead to."""

from __future__ import annotations

from typing import Any

import pytest
from test_checker_support import History

from chaos.checker import EXIT_INCONCLUSIVE, check_file, exit_status
from chaos.checker.exercised import MIN_LOCK_CYCLES


def cycles(h: History, n: int, start: float = 0) -> History:
    """``n`` clean lock cycles, alternating c1 and c2, 20 ms apart."""
    for i in range(n):
        p = f"c{i % 2 + 1}"
        h.acquire(p, start + i * 20).release(p, start + i * 20 + 10)
    return h


def raised(h: History, f: str, p: str, ms: float, error: str, *, bug: bool = True,
           trace: str | None = None) -> History:
    """An operation that raised: invoke, then ``info`` with the error (as the worker writes)."""
    token = {} if f == "acquire" else {"token": h.tokens.get(p)}
    h.add(ms, "invoke", p, f, **token)
    extra: dict[str, Any] = {"bug": True} if bug else {}
    if trace is not None:
        extra["traceback"] = trace
    return h.add(ms + 1, "info", p, f, error=error, **token, **extra)


def test_two_cycles_in_a_finished_run_are_ok():
    assert MIN_LOCK_CYCLES == 2
    verdict = cycles(History(), 2).final_read(100, []).check()
    assert verdict.verdict == "ok" and verdict.inconclusive_reasons == []
    assert verdict.counts["lock_cycles"] == 2


def test_every_acquire_raising_is_never_acquired_with_the_first_error():
    h = History()
    for i, p in enumerate(["c2", "c1", "c2"]):
        raised(h, "acquire", p, 10 + i * 10, "RuntimeError: boom")
    verdict = h.final_read(100, []).check()
    assert verdict.verdict == "inconclusive"
    assert verdict.inconclusive_reasons == [
        "the lock was never acquired: every acquire raised RuntimeError: boom (c2, first at "
        "0.011 s)"
    ]
    assert exit_status(verdict, "hard") == EXIT_INCONCLUSIVE == 3
    assert exit_status(verdict, "soft") == 3  # whatever --fail-on says
    assert exit_status(verdict, "hard", allow_inconclusive=True) == 0


def test_acquires_that_raise_different_errors_or_are_refused_say_so():
    h = raised(History(), "acquire", "c1", 10, "RuntimeError: boom")
    raised(h, "acquire", "c1", 20, "KeyError: 'x'")
    [reason] = h.final_read(100, []).check().inconclusive_reasons
    assert reason == ("the lock was never acquired: every acquire raised, 2 times (the first: "
                      "RuntimeError: boom, c1 at 0.011 s)")
    refused = History().attempt("c1", 10, 11).attempt("c2", 20, 21).final_read(100, [])
    assert refused.check().inconclusive_reasons == [
        "the lock was never acquired: all 2 attempts were refused: the key was never free"
    ]
    mixed = raised(History().attempt("c1", 10, 11), "acquire", "c2", 20, "RuntimeError: boom")
    assert mixed.final_read(100, []).check().inconclusive_reasons == [
        "the lock was never acquired: 1 attempts were refused and 1 raised (the first: "
        "RuntimeError: boom, c2 at 0.021 s)"
    ]


def test_no_acquire_at_all_names_the_crashes():
    h = History()
    h.add(10, "info", "c1", "crash", error="ConnectionError: refused", value={"at": "start"})
    h.crash("c1", 11)
    [reason] = h.final_read(100, []).check().inconclusive_reasons
    assert reason == ("the lock was never acquired: no client completed an acquire: client "
                      "processes crashed 2 times (ConnectionError: refused, c1 at 0.010 s)")


def test_clients_that_crash_while_they_hold_complete_no_cycle():
    h = History().acquire("c1", 0).crash("c1", 10).acquire("c2", 300).crash("c2", 310)
    [reason] = h.final_read(400, []).check().inconclusive_reasons
    assert reason == "no lock cycle completed in 2 holds: client processes crashed 2 times"


def test_one_cycle_is_too_few():
    verdict = cycles(History(), 1).final_read(100, []).check()
    assert verdict.verdict == "inconclusive"
    assert verdict.inconclusive_reasons == [
        "only 1 lock cycle completed (an acquire, then a release that returned) in 1 holds: "
        "at least 2 are needed to test mutual exclusion"
    ]


def test_releases_that_always_raise_complete_no_cycle():
    h = History().acquire("c1", 0)
    raised(h, "release", "c1", 10, "ValueError: nope", trace="Traceback…\nValueError: nope\n")
    h.acquire("c2", 300)
    raised(h, "release", "c2", 310, "ValueError: nope")
    verdict = h.final_read(400, []).check()
    assert verdict.verdict == "inconclusive"
    assert verdict.inconclusive_reasons == [
        "no lock cycle completed: every release raised ValueError: nope (c1, first at 0.011 s)"
    ]
    [errors] = verdict.lock_errors
    assert (errors.op, errors.count, errors.error, errors.process, errors.at_s) == (
        "release", 2, "ValueError: nope", "c1", 0.011)
    assert errors.traceback == "Traceback…\nValueError: nope\n"
    assert verdict.counts["lock_bugs"] == 2 and verdict.counts["lock_cycles"] == 0


def test_a_lapsed_lease_beside_releases_that_always_raise_is_still_no_cycle():
    """A soft violation (c1's lease lapsed before c2's grant) does not show that a lock whose
    every release raised was tested: below a hard gate the run is not green (it was, exit 0,
    when violations kept only what was asked for and never met)."""
    h = History().acquire("c1", 0, lease=100).acquire("c2", 120)
    raised(h, "release", "c1", 150, "ValueError: nope")
    raised(h, "release", "c2", 300, "ValueError: nope")
    verdict = h.final_read(400, []).check()
    assert verdict.verdict == "soft" and verdict.counts["lock_cycles"] == 0
    assert verdict.inconclusive_reasons == [
        "no lock cycle completed: every release raised ValueError: nope (c1, first at 0.151 s)"
    ]
    assert exit_status(verdict, "hard") == EXIT_INCONCLUSIVE
    assert exit_status(verdict, "soft") == 1


def test_a_violation_wins_over_inconclusive():
    h = History().acquire("c1", 0).acquire("c2", 50)
    raised(h, "release", "c1", 60, "ValueError: nope")
    verdict = h.final_read(100, []).check()
    assert verdict.verdict == "hard" and verdict.inconclusive_reasons == []
    assert [e.op for e in verdict.lock_errors] == ["release"]


def test_a_history_without_its_end_is_not_judged_inconclusive():
    verdict = History().attempt("c1", 10, 11).check()
    assert verdict.verdict == "ok"
    assert any("no end event" in note for note in verdict.notes)


def test_the_factory_failing_in_every_client_is_lock_unusable():
    h = History()  # clients c1, c2, c3
    for i, p in enumerate(["c2", "c1", "c3"]):
        h.add(10 + i, "info", p, "lock-unusable", error="ModuleNotFoundError: No module named "
              "'mmh3'", traceback="Traceback…", value={"at": "start"})
    verdict = h.final_read(100, []).check()
    reason = "the lock factory failed in every client: ModuleNotFoundError: No module named 'mmh3'"
    assert verdict.verdict == "inconclusive"
    assert verdict.inconclusive_reasons == [reason] and verdict.lock_unusable == reason
    assert verdict.counts["lock_unusable"] == 3 and verdict.counts["crashes"] == 0


def test_the_factory_failing_in_some_clients_only_is_judged_on_the_others():
    h = History().add(1, "info", "c3", "lock-unusable", error="OSError: no config")
    verdict = cycles(h, 2, start=10).final_read(100, []).check()
    assert verdict.verdict == "ok" and verdict.lock_unusable is None
    assert verdict.counts["lock_unusable"] == 1


def test_errors_that_are_not_bugs_are_not_counted():
    h = cycles(History(), 2)
    raised(h, "acquire", "c1", 50, "TimeoutError: Timeout reading from socket", bug=False)
    verdict = h.final_read(100, []).check()
    assert verdict.verdict == "ok" and verdict.lock_errors == []
    assert verdict.counts["acquire_info"] == 1 and verdict.counts["lock_bugs"] == 0


def test_the_first_bug_is_the_first_in_time_whatever_the_file_order(tmp_path):
    h = cycles(History(), 2)
    raised(h, "extend", "c2", 80, "TypeError: late", trace="late trace")
    raised(h, "extend", "c1", 60, "AttributeError: early", trace="early trace")
    # Each process's lines are in time order, so the file is streamed in file order.
    verdict = check_file(h.final_read(100, []).save(tmp_path / "h.jsonl"))
    [errors] = verdict.lock_errors
    assert (errors.count, errors.error, errors.traceback) == (2, "AttributeError: early",
                                                              "early trace")


@pytest.mark.parametrize(("found", "fail_on", "allow", "code"), [
    ("ok", "hard", False, 0), ("inconclusive", "hard", False, 3),
    ("inconclusive", "soft", False, 3), ("inconclusive", "hard", True, 0),
    ("hard", "hard", True, 1), ("soft", "hard", False, 0), ("soft", "soft", False, 1),
])
def test_exit_status(found, fail_on, allow, code):
    histories = {
        "ok": cycles(History(), 2),
        "inconclusive": History(),
        "soft": cycles(History().acquire("c1", 0, lease=10).acquire("c2", 20), 2, 300),
        "hard": History().acquire("c1", 0).acquire("c2", 20),
    }
    verdict = histories[found].final_read(100, []).check()
    assert verdict.verdict == found
    assert exit_status(verdict, fail_on, allow_inconclusive=allow) == code
