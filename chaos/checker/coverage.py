"""Fault coverage: for each fault of the run, how often it fired, how often it did something
to the lock, how long it was on — so a fault that was asked for but never touched the lock is
visible, and the run that asked for it is not green (``chaos.checker.exercised``).

A firing counts as *effective* by the evidence its start event declares
(``chaos.history.EVIDENCE``), never by its name:

* ``reported``: an event names its id — an ``effect`` (a slow critical section began, a node
  carried a holder's key when it was killed), a ``pause-point`` it armed (a client really
  stopped or crashed there), or a ``crash`` it caused while its client held the lock or was
  acquiring it. Being armed, or killing a client between two attempts, does nothing to the
  lock.
* ``activity`` (and older histories, which declare nothing): while it was on, its target
  client — any client, for a fault aimed at no client (a server's) — held the lock or was
  acquiring it: a paused holder, a holder's links cut or slowed under a command, a clock
  skewed under a client judging expiry, a server stopped under its clients' commands.

Everything comes from the history. No fault is known by name.
"""

from __future__ import annotations

from bisect import bisect_right

import msgspec

from chaos.checker.holds import NEVER
from chaos.checker.timeline import FaultSpan, Timeline

Span = tuple[int, int]  # [from, to] when a client was at the lock (holding or acquiring)


class FaultCoverage(msgspec.Struct, kw_only=True):
    """One fault name's firings in a run."""

    fired: int  # start events
    effective: int  # firings that did something to the lock (see the module docstring)
    active_s: float  # seconds on, summed over firings (open ones count to the history's end)


def coverage(timeline: Timeline) -> dict[str, FaultCoverage]:
    """Per fault name, in the order the faults first fired (call after ``seal``)."""
    if not timeline.faults:
        return {}
    busy = _Busy(timeline)
    killed = {fault_id for fault_id, process, t in timeline.kills if busy.at(process, t, t)}
    result: dict[str, FaultCoverage] = {}
    for fault in timeline.faults:
        entry = result.setdefault(fault.name, FaultCoverage(fired=0, effective=0, active_s=0.0))
        stop = timeline.end if fault.stop >= NEVER else fault.stop
        entry.fired += 1
        entry.active_s = round(entry.active_s + max(stop - fault.start, 0) / 1e9, 6)
        if fault.id in timeline.fault_effects or fault.id in killed:
            entry.effective += 1
        elif not fault.reported:
            entry.effective += _met_the_lock(fault, stop, busy)
    return result


def _met_the_lock(fault: FaultSpan, stop: int, busy: _Busy) -> bool:
    clients = busy.clients if not fault.aims_at_clients else [
        client for client in busy.clients if fault.hits(client)
    ]
    return any(busy.at(client, fault.start, stop) for client in clients)


class _Busy:
    """When each client was at the lock: its holds (from the acquire's invoke to the release's
    invoke, or a crash) and its refused or unanswered acquires, sorted per client."""

    def __init__(self, timeline: Timeline) -> None:
        spans: dict[str, list[Span]] = {}
        for hold in timeline.holds:
            spans.setdefault(hold.process, []).append((hold.invoked, hold.end))
        for process, invoked, failed in zip(timeline.failed_by, timeline.failed_invoked,
                                            timeline.failed_at, strict=True):
            spans.setdefault(process, []).append((invoked, failed))
        for attempt in timeline.unsure_acquires:
            end = attempt.crashed if attempt.crashed is not None else attempt.invoked
            spans.setdefault(attempt.process, []).append((attempt.invoked, end))
        for process_spans in spans.values():
            process_spans.sort()
        self._spans = spans
        self._reach = {p: _running_max([span[1] for span in s]) for p, s in spans.items()}
        self.clients = sorted(spans)

    def at(self, process: str, lo: int, hi: int) -> bool:
        """Whether ``process`` was at the lock at some instant of [lo, hi]."""
        spans = self._spans.get(process)
        if not spans:
            return False
        last = bisect_right(spans, (hi, NEVER))  # spans starting at or before hi
        return last > 0 and self._reach[process][last - 1] >= lo


def _running_max(values: list[int]) -> list[int]:
    out, high = [], -1
    for value in values:
        high = max(high, value)
        out.append(high)
    return out
