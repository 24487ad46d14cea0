"""The pure checker: a history in, a verdict out. It never talks to Redis.

``check`` judges events in memory, ``check_file`` a history file (streamed: a file whose
processes each wrote their events in time order is never held in memory whole). ``fails``
turns a verdict into a pass/fail decision for a severity threshold, ``exit_status`` into the
exit status of a gate (inconclusive runs included).

The pipeline: ``scan`` (one pass, per-process bookkeeping) → ``Timeline`` (time-indexed
facts) → ``judge``, which applies each of ``rules.RULES`` (overlaps, renewals, liveness,
data…, each explained; ``lockchaos list --rules``) → ``Verdict``. The semantics are specified
in ``docs/history-format.md``.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from operator import attrgetter

from chaos.checker import judge, scan
from chaos.checker.reader import HistoryReader
from chaos.checker.timeline import Timeline
from chaos.checker.verdict import (
    EXIT_INCONCLUSIVE,
    INCONCLUSIVE,
    VIOLATION_KINDS,
    LockErrors,
    Verdict,
    Violation,
    check_fail_on,
    exit_status,
    fails,
)
from chaos.history import Event, HistoryError

__all__ = [
    "DEFAULT_LIVENESS_FACTOR",
    "EXIT_INCONCLUSIVE",
    "INCONCLUSIVE",
    "VIOLATION_KINDS",
    "LockErrors",
    "Verdict",
    "Violation",
    "check",
    "check_fail_on",
    "check_file",
    "exit_status",
    "fails",
    "read_timeline",
]

DEFAULT_LIVENESS_FACTOR = 5.0  # unavailable for more than 5 × TTL with no holder: liveness

_by_time = attrgetter("t")


def check(events: Iterable[Event], *, liveness_factor: float = DEFAULT_LIVENESS_FACTOR
          ) -> Verdict:
    """The verdict on ``events`` (any order: they are sorted by time, stably)."""
    _require_positive(liveness_factor)
    with _collector_paused():
        timeline = scan.scan(sorted(events, key=_by_time))
        return judge.judge(timeline, liveness_factor=liveness_factor, notes=[])


def check_file(path: str | os.PathLike[str], *,
               liveness_factor: float = DEFAULT_LIVENESS_FACTOR) -> Verdict:
    """The verdict on a history file. Raises ``HistoryError`` if it is not a history (or has
    no events) and ``OSError`` if it cannot be read.

    A truncated last line (a crash mid-write, or a line being written right now: the harness
    checks histories while they grow) is skipped, and said so in the verdict's notes rather
    than with a Python warning, which a caller polling the file would repeat every time.
    """
    _require_positive(liveness_factor)
    reader = HistoryReader(path)
    with _collector_paused():
        timeline = read_timeline(reader)
        if timeline.events == 0:
            raise HistoryError(f"{path}: no events: this is not a history (or it is empty)")
        notes = []
        if reader.skipped_line is not None:
            notes.append(f"ignored the truncated last line {reader.skipped_line}")
        return judge.judge(timeline, liveness_factor=liveness_factor, notes=notes)


def read_timeline(reader: HistoryReader) -> Timeline:
    """The timeline of a history file, streamed when each process's lines are in time order,
    else read whole and sorted. Reports draw holds and leases from it rather than re-deriving
    them from raw events."""
    try:
        return scan.scan(reader.events())
    except scan.OutOfOrder:  # some process's lines are out of order: sort everything
        return scan.scan(sorted(reader.events(), key=_by_time))


def _require_positive(liveness_factor: float) -> None:
    if not liveness_factor > 0:
        raise ValueError(f"liveness_factor must be positive, not {liveness_factor}")


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the (process-wide) cyclic garbage collector for the duration of a check.

    The check allocates millions of small objects and no reference cycles, so reference
    counting frees everything; meanwhile each full collection would traverse the whole
    growing timeline (and, when sorting, every event) for nothing: 40 % of the run time.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
