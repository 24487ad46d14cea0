"""What the seed posts, Kleppmann 2016 and the Redis docs claim about each lock, as verdicts.

Each ``Cell`` is a lock, the faults that test the claim, and the verdict the claim predicts.
The test suite runs every cell once; ``bench/truth_table.py`` runs each over many seeds and
reports detection rates. A cell lockchaos cannot reproduce is a finding, not a test to relax.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from chaos.checker import Verdict


def _hard(v: Verdict) -> str | None:
    return None if v.hard_violations > 0 else "expected a hard violation, found none"


def _no_hard(v: Verdict) -> str | None:
    if v.hard_violations:
        return f"expected no hard violation, found {v.hard_violations}"
    return None


def _soft_only(v: Verdict) -> str | None:
    if v.hard_violations or not v.soft_violations:
        return f"expected soft only, found hard={v.hard_violations} soft={v.soft_violations}"
    return None


def _soft_only_with_lost_writes(v: Verdict) -> str | None:
    if problem := _soft_only(v):
        return problem
    return None if v.lost_writes else "expected lost writes, found none"


def _fenced(v: Verdict) -> str | None:
    if problem := _soft_only(v):
        return problem
    if v.lost_writes:
        return f"expected no lost writes behind a fence, found {v.lost_writes}"
    return None if v.stale_writes_rejected else "expected stale accesses rejected, found none"


def _liveness(v: Verdict) -> str | None:
    if v.hard_violations:
        return f"expected a deadlock, not hard violations ({v.hard_violations})"
    return None if v.liveness_violations else "expected a liveness violation, found none"


@dataclass(frozen=True)
class Cell:
    lock: str
    faults: str
    expected: str  # human words, as in the table
    judge: Callable[[Verdict], str | None]  # None when the verdict matches the claim
    source: str
    stop_on: str | None = None  # the violation kind that settles the cell early
    cause: str = ""  # a word the first hard violation's explanation must contain

    @property
    def name(self) -> str:
        return f"{self.lock} × {self.faults}"


CELLS: tuple[Cell, ...] = (
    Cell("del-release", "slow-work", "hard", _hard, "004 wrong release 1", "hard", "released"),
    Cell(
        "get-then-del", "client-pause-at", "hard", _hard, "004 wrong release 2", "hard", "released"
    ),
    Cell("getset-timestamp", "slow-work", "hard", _hard, "004 wrong acquire 2", "hard"),
    Cell(
        "setnx-expire",
        "client-crash:command=*:op=acquire:nth=2",
        "liveness",
        _liveness,
        "004 wrong acquire 1",
        "liveness",
        "crash",
    ),
    Cell("lua", "slow-work", "soft only, lost writes", _soft_only_with_lost_writes, "000/002/004"),
    Cell("lua", "latency,partition,reset,server-pause", "no hard", _no_hard, "000/002/004"),
    Cell("lua", "failover", "hard", _hard, "003 (failover)", "hard", "failover"),
    Cell("fenced", "client-pause", "soft, 0 lost, stale rejected", _fenced, "Kleppmann 2016"),
    Cell("watchdog", "client-pause", "soft, no hard", _soft_only, "003 (watchdog)"),
    Cell(
        "redlock",
        "partition:scope=minority,crash-restart-delayed",
        "no hard",
        _no_hard,
        "003 / Redis docs",
    ),
    Cell("redlock", "crash-restart", "hard", _hard, "Kleppmann 2016", "hard", "crash-restart"),
    Cell(
        "redlock", "clock-jump:offset_ms=600", "hard", _hard, "Kleppmann 2016", "hard", "clock-jump"
    ),
    Cell("redis-py", "slow-work", "soft only", _soft_only, "redis-py Lock"),
)
