"""Fault coverage: for each fault of the run, how often it fired, how often it did something
to the lock, how long it was on — so a fault that was asked for but never touched the lock is
visible, and the run that asked for it is not green (``chaos.checker.exercised``).

A firing counts as *effective* by the evidence its start event declares
(``chaos.history.EVIDENCE``), never by its name:

* ``reported``: an event names its id — an ``effect`` (a slow critical section began, a node
  carried a holder's key when it was killed, a command of the client a network fault hit
  crossed a faulted link while it was on), a ``pause-point`` it armed (a client really
  stopped or crashed there), or a ``crash`` it caused while its client held the lock or was
  acquiring it. Being armed, or killing a client between two attempts, or slowing the links
  of a holder that sends nothing meanwhile, does nothing to the lock.
* ``activity`` (and older histories, which declare nothing): while it was on, its target
  client — any client, for a fault aimed at no client (a server's) — held the lock or was
  acquiring it: a paused holder, a clock skewed under a client judging expiry, a server
  stopped under its clients' commands, and a network fault on a client whose commands the
  harness cannot place on a link (a driver that names no node: ``Fault.evidence_for``).

Everything comes from the history. No fault is known by name.
"""

from __future__ import annotations

from bisect import bisect_right

import msgspec

from chaos.checker.holds import NEVER, Hold
from chaos.checker.timeline import FaultSpan, Timeline, UnsureAcquire


class FaultCoverage(msgspec.Struct, kw_only=True):
    """One fault name's firings in a run."""

    fired: int  # start events
    effective: int  # firings that did something to the lock (see the module docstring)
    active_s: float  # seconds on, summed over firings (open ones count to the history's end)


def effective_ids(timeline: Timeline) -> set[str]:
    """The ids of the firings that did something to the lock (see the module docstring; call
    after ``seal``): what a replay holds each of its steps' faults to doing again."""
    if not timeline.faults:
        return set()
    busy = _Busy(timeline)
    killed = {fault_id for fault_id, process, t in timeline.kills if busy.held(process, t, t)}
    effective = {fault.id for fault in timeline.faults
                 if fault.id in timeline.fault_effects or fault.id in killed}
    undecided = [fault for fault in timeline.faults
                 if fault.id not in effective and not fault.reported]
    return effective | {fault.id for fault in busy.met(undecided)}


def coverage(timeline: Timeline) -> dict[str, FaultCoverage]:
    """Per fault name, in the order the faults first fired (call after ``seal``)."""
    effective = effective_ids(timeline)
    result: dict[str, FaultCoverage] = {}
    for fault in timeline.faults:
        entry = result.setdefault(fault.name, FaultCoverage(fired=0, effective=0, active_s=0.0))
        entry.fired += 1
        entry.active_s = round(entry.active_s + max(_stop(fault, timeline) - fault.start, 0)
                               / 1e9, 6)
        entry.effective += fault.id in effective
    return result


def _stop(fault: FaultSpan, timeline: Timeline) -> int:
    return timeline.end if fault.stop >= NEVER else fault.stop


class _Busy:
    """When clients were at the lock: their holds (from the acquire's invoke to the release's
    invoke, or a crash), their unanswered acquires, and — looked at only for what those leave
    undecided, in one pass over the timeline's arrays — their refused acquires."""

    def __init__(self, timeline: Timeline) -> None:
        self._timeline = timeline
        self._holds: dict[str, list[Hold]] = {}
        for hold in timeline.holds:  # sorted by start
            self._holds.setdefault(hold.process, []).append(hold)
        self._unsure: dict[str, list[UnsureAcquire]] = {}
        for attempt in timeline.unsure_acquires:  # sorted by invoke
            self._unsure.setdefault(attempt.process, []).append(attempt)

    def held(self, process: str, lo: int, hi: int) -> bool:
        """Whether ``process`` held the lock, or was acquiring it (granted or not known), at
        some instant of [lo, hi]."""
        holds = self._holds.get(process, [])  # one after another: their ends never go back
        last = bisect_right(holds, hi, key=lambda hold: hold.invoked)
        if last and holds[last - 1].end >= lo:
            return True
        unsure = self._unsure.get(process, [])  # one after another too
        last = bisect_right(unsure, hi, key=lambda attempt: attempt.invoked)
        return bool(last) and (unsure[last - 1].crashed or unsure[last - 1].invoked) >= lo

    def met(self, faults: list[FaultSpan]) -> list[FaultSpan]:
        """The ``faults`` during which a client they aim at (any, for a server fault) was at
        the lock."""
        timeline = self._timeline
        clients = sorted({*self._holds, *timeline.failed_by,
                          *(attempt.process for attempt in timeline.unsure_acquires)})
        windows = {fault.id: (fault, fault.start, _stop(fault, timeline)) for fault in faults}
        met = [fault for fault, lo, hi in windows.values()
               if any(self.held(c, lo, hi) for c in clients if _aims_at(fault, c))]
        left = [windows[fault.id] for fault in faults if fault not in met]
        if not left:
            return met
        first, last = min(lo for _, lo, _ in left), max(hi for _, _, hi in left)
        for process, invoked, failed in zip(timeline.failed_by, timeline.failed_invoked,
                                            timeline.failed_at, strict=True):
            if failed < first or invoked > last:  # the hot path: outside every window
                continue
            hit = [window for window in left if invoked <= window[2] and failed >= window[1]
                   and _aims_at(window[0], process)]
            if hit:
                met += [fault for fault, _, _ in hit]
                left = [w for w in left if w not in hit]
                if not left:
                    break
        return met


def _aims_at(fault: FaultSpan, client: str) -> bool:
    return fault.hits(client) if fault.aims_at_clients else True
