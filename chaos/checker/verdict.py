"""The checker's answer: what went wrong, how badly, and why, as data a report can draw.

Kinds of violation, from least to most severe:

* ``soft`` — two clients held the lock at once, but never both within their leases: the
  known limit of leases without fencing;
* ``liveness`` — nobody could acquire for far longer than the TTL although nobody held it;
* ``data`` — acknowledged writes are missing from the resource at the end;
* ``hard`` — two clients held the lock at once, both within the validity the lock claimed.

``verdict`` is the most severe kind found, ``ok`` if none.
"""

from __future__ import annotations

from typing import Any

import msgspec

from chaos.errors import UsageError

RANK = {"ok": 0, "soft": 1, "liveness": 2, "data": 3, "hard": 4}
VIOLATION_KINDS = ("soft", "liveness", "data", "hard")  # least severe first


class Violation(msgspec.Struct, kw_only=True):
    """One violation; times in seconds since the run started.

    ``cause`` (overlaps) is ``foreign-release``, ``in-flight-release``, ``lease-expired``,
    ``unexplained`` or the name of the key-losing fault. ``expires_s`` is each holder's lease
    deadline in effect when the overlap began (None: no deadline). ``both_valid_*`` bound the
    first stretch in which both leases were valid (hard violations only).
    """

    kind: str
    processes: list[str]
    start_s: float
    end_s: float
    explanation: str
    cause: str | None = None
    expires_s: dict[str, float | None] = {}
    both_valid_from_s: float | None = None
    both_valid_until_s: float | None = None
    faults: list[str] = []  # ids of the faults active during it
    failed_acquires: int | None = None  # liveness
    op_ids: list[str] = []  # data: the lost writes


class Verdict(msgspec.Struct, kw_only=True):
    """The whole answer. ``lost_writes``/``lost_write_ids`` are None when the history has no
    final read to judge them by; ``notes`` says what could not be judged and why."""

    verdict: str
    lock: str | None
    ttl_ms: float | None
    duration_s: float
    hard_violations: int
    soft_violations: int
    liveness_violations: int
    lost_writes: int | None
    lost_write_ids: list[str] | None
    stale_writes_rejected: int
    first_hard_violation_s: float | None
    explanations: list[str]
    violations: list[Violation]
    counts: dict[str, int]
    notes: list[str]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready builtins (what ``verdict.json`` holds)."""
        result: dict[str, Any] = msgspec.to_builtins(self)
        return result


def fails(verdict: Verdict, fail_on: str) -> bool:
    """Whether ``verdict`` has a violation at least as severe as the kind ``fail_on``."""
    if fail_on not in RANK:
        kinds = ", ".join(VIOLATION_KINDS)
        raise ValueError(f"unknown violation kind {fail_on!r}; expected one of {kinds}")
    return reaches(verdict.verdict, fail_on)


def check_fail_on(fail_on: str, option: str = "--fail-on") -> str:
    """``fail_on`` if it names a violation kind; else ``UsageError`` (one line) naming them."""
    if fail_on not in VIOLATION_KINDS:
        raise UsageError(
            f"{option} must be one of {', '.join(VIOLATION_KINDS)} (got {fail_on!r})"
        )
    return fail_on


def reaches(kind: str, fail_on: str) -> bool:
    """Whether a violation (or verdict) of ``kind`` fails a run that fails on ``fail_on``
    ("ok" never does, whatever ``fail_on`` says)."""
    return RANK[kind] >= max(RANK[fail_on], 1)
