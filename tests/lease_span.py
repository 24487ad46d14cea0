"""A lease the machine outlived says nothing about the lock.

The contract tests hold leases of 300 ms, and a few of their assertions hold only while a
lease is alive: the holder's release succeeds, a second client is refused. On two loaded
cores the test process, Redis or Toxiproxy can sit still for longer than that (a fresh clone's
CI once saw a watchdog lock's fresh lease gone between its acquire and its release, a few
commands apart). Such a failure is the machine's, not the lock's — and a lock that really
broke the assertion breaks it in a span far shorter than the lease. ``within_lease`` times
the span: an assertion that fails after the span lasted ``SURE_SHARE`` of the TTL (the part
of a lease every lock here is sure to cover: a watchdog renews every third of it) raises
``MachineStalled`` instead, which pytest-rerunfailures runs again (``--only-rerun
MachineStalled`` in pyproject.toml, two reruns); any other failure stands as it was.

A whole run says the same of itself: each client process records the stretches it did not
run (``stall`` events, chaos/workload/stalls.py). A run in which the machine — no fault, no
pause point — stopped a client for ``SURE_SHARE`` of the TTL or more may have let a sound
lock's lease lapse (soft, and a write lost in the overlap: data) or missed the window a
violation needed; an assertion about its verdict that failed says nothing of the lock
(the landing CI of 51b25a5: a failover test's run ended ``data`` beside a 177 ms stall at a
200 ms TTL). ``machine_stalls`` finds such runs among the histories a test wrote, and the
hook below (tests/conftest.py takes it) turns the test's failed assertion into
``MachineStalled`` when there is one, so the test runs again. A run with a hard violation is
never one: two valid leases at once are evidence whatever the machine did.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from chaos.checker import check_file, read_timeline
from chaos.checker.reader import HistoryReader
from chaos.history import HistoryError

SURE_SHARE = 2 / 3


class MachineStalled(Exception):
    """An assertion about a live lease failed after the machine outlasted the lease."""


@contextmanager
def within_lease(ttl_ms: float, what: str) -> Iterator[None]:
    """Run the block; an ``AssertionError`` after ``SURE_SHARE`` of ``ttl_ms`` becomes
    ``MachineStalled`` (from it, so the assertion is still shown)."""
    started = time.monotonic()
    try:
        yield
    except AssertionError as exc:
        took_ms = (time.monotonic() - started) * 1000
        if took_ms >= SURE_SHARE * ttl_ms:
            raise MachineStalled(
                f"{what} took {took_ms:.0f} ms of a {ttl_ms:g} ms lease: the machine "
                f"outlasted the lease, so the failed assertion says nothing of the lock"
            ) from exc
        raise


def machine_stall(history: Path) -> str | None:
    """How the machine outlasted a lease in the run ``history`` records — a client process
    that did not run, though no fault or pause point stopped it, for ``SURE_SHARE`` of the
    run's TTL or more — or None. None too for a run with a hard violation: two valid leases
    at once are evidence whatever the machine did (a sound lock's hard is a false red this
    suite must see, never run again until it passes)."""
    try:
        timeline = read_timeline(HistoryReader(history))
        if check_file(history).hard_violations:
            return None
    except (HistoryError, OSError):
        return None  # not a history (yet): nothing to say of it
    ttl = timeline.ttl_ns
    if ttl is None:
        return None
    for process, stretches in timeline.stalls.items():
        for since, until in stretches:
            if until - since < SURE_SHARE * ttl:
                continue
            if any(fault.stalls and fault.hits(process)
                   for fault in timeline.faults_during(since, until)):
                continue  # a fault stopped it: what the test is about, maybe
            if timeline.pauses_of(process, since - ttl, until):
                continue  # so did a pause point it reached
            return (f"{process} did not run for {(until - since) / 1e6:.0f} ms of a "
                    f"{ttl / 1e6:g} ms lease, and no fault stopped it ({history})")
    return None


def machine_stalls(root: Path, since: float) -> list[str]:
    """``machine_stall`` of each history under ``root`` written since ``since``
    (``time.time()``)."""
    found = []
    for history in sorted(root.rglob("history.jsonl")):
        try:
            written = history.stat().st_mtime
        except OSError:
            continue  # removed meanwhile
        if written >= since and (stall := machine_stall(history)):
            found.append(stall)
    return found


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """A failed assertion of a test that made a run in which the machine stopped a client
    for most of a lease is ``MachineStalled``: run again, twice at most; any other failure
    stands."""
    started = time.time()
    try:
        return (yield)
    except AssertionError as failed:
        factory = getattr(item.config, "_tmp_path_factory", None)
        stalls = machine_stalls(factory.getbasetemp(), started) if factory else []
        if not stalls:
            raise
        raise MachineStalled(
            f"{'; '.join(stalls[:3])}: the machine outlasted a lease in a run this test "
            "made, so its failed assertion says nothing of the lock"
        ) from failed
