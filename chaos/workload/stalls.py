"""Stalls: the stretches a client process did not run, though no fault stopped it.

A lock that renews its leases in the background promises that a lease lasts as long as its
holder runs (``chaos.checker.renewals``). A holder that the machine did not run — every thread
of it, for half a second, while five JVMs started beside it on two cores — had a watchdog that
could not renew either, exactly as under a GC pause; the history showed no fault, and the
checker called the watchdog dead: a false hard (``watchdog × client-pause`` in CI: c2's read
took 534 ms on a local Redis, its watchdog first tried 457 ms late, the moment it ran again).

So each client process measures it: a thread that wakes every ``PERIOD_S`` and, woken
``MIN_STALL_MS`` or more late, records a ``stall`` event (``value.since``: when it should have
woken, in the history's clock; the event's time: when it did). The thread cannot tell why
(a SIGSTOP, the scheduler, a page fault with the GIL held): it records what the process lost,
which is what a watchdog in it lost too.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from chaos import history as h
from chaos.history import MIN_STALL_MS

PERIOD_S = 0.01
# Past the run's deadline, the process stops by itself soon (its loop ends there).
GRACE_NS = 5_000_000_000


def watch(history: h.HistoryWriter, client: str, stopping: threading.Event,
          deadline_ns: int) -> threading.Thread:
    """Start a daemon thread recording ``client``'s stalls until ``stopping`` is set or the
    run's ``deadline_ns`` (plus ``GRACE_NS``) passes."""
    thread = threading.Thread(target=_run, args=(history, client, stopping, deadline_ns),
                              name="stalls", daemon=True)
    thread.start()
    return thread


@contextmanager
def watching(history: h.HistoryWriter, client: str, stopping: threading.Event,
             deadline_ns: int) -> Iterator[threading.Thread]:
    """``watch`` for the block; at its end ``stopping`` is set (whatever the block did with
    it: explore's stepped worker leaves it unset) and the watcher joined, which then takes a
    period. Left unset, every client of every explored program waited out the join's bound:
    seed 3's racy semaphore, found in 1 s before the watcher was joined, took 10."""
    thread = watch(history, client, stopping, deadline_ns)
    try:
        yield thread
    finally:
        stopping.set()
        thread.join(timeout=1)


def _run(history: h.HistoryWriter, client: str, stopping: threading.Event,
         deadline_ns: int) -> None:
    end = deadline_ns + GRACE_NS
    # Bounded in count too: one wake-up per period at most until the end.
    for _ in range(int((end - h.now()) / 1e9 / PERIOD_S) + 1):
        due = h.now() + int(PERIOD_S * 1e9)
        stopped = stopping.wait(PERIOD_S)
        woke = h.now()
        # Measured before obeying a stop: a process continued and told to stop at once (the
        # end of a run that paused it) still lost that stretch, and its history says so.
        if woke - due >= MIN_STALL_MS * 1e6 and woke < end:
            history.log(h.INFO, client, h.STALL, value={"since": due})
        if stopped or woke >= end:
            return


__all__ = ["MIN_STALL_MS", "PERIOD_S", "watch", "watching"]
