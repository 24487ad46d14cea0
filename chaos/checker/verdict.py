"""The checker's answer: what went wrong, how badly, and why, as data a report can draw.

Kinds of violation, from least to most severe:

* ``soft`` — two clients held the lock at once (or a semaphore's holders more permits than
  it has), but never within their leases: the known limit of leases without fencing;
* ``fairness`` — a lock that claims to grant waiters in the order they asked granted one
  ahead of a client that was already waiting (``chaos.checker.fairness``);
* ``liveness`` — nobody could acquire for far longer than the TTL although nobody held it,
  or a semaphore's permits leaked (``chaos.checker.leaks``);
* ``data`` — acknowledged writes are missing from the resource at the end;
* ``hard`` — the lock broke its own promise: two clients held the lock at once (an exclusive
  hold and another; valid leases more permits than the capacity), both within the validity
  the lock claimed; or a lock that renews its leases let one lapse while its
  holder ran (``chaos.checker.renewals``).

A liveness outage that lasted to the end of the run, far past the TTL, is a lock wedged for
good (``cause: wedged``, ``chaos.checker.liveness``): still a liveness violation, but one that
fails every gate, whatever ``--fail-on`` says (``reaches``). Bounded unavailability passes the
default gate; a lock nobody can take again must not.

``verdict`` is the most severe kind found; if there is none, ``inconclusive`` when the run
did not exercise the lock (``inconclusive_reasons`` says why: ``chaos.checker.exercised``)
or a checker rule raised instead of judging (``rule_errors``), else ``ok``. A violation is
evidence whatever else happened, so it always wins the verdict; but a run whose violations all
fall below the gate passes only if it tested what it was asked to and every rule judged it
(``exit_status``).

Exit statuses of the commands that judge a run: ``exit_status``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from chaos.checker.coverage import FaultCoverage
from chaos.errors import UsageError

INCONCLUSIVE = "inconclusive"
# Verdicts by severity: inconclusive (nothing found, but nothing tested either) sits between
# ok and the least violation.
RANK = {"ok": 0, INCONCLUSIVE: 1, "soft": 2, "fairness": 3, "liveness": 4, "data": 5, "hard": 6}
VIOLATION_KINDS = ("soft", "fairness", "liveness", "data", "hard")  # least severe first

EXIT_OK = 0
EXIT_VIOLATION = 1  # a violation at or above --fail-on
EXIT_USAGE = 2  # bad input (chaos.cli)
EXIT_INCONCLUSIVE = 3  # the run did not exercise the lock (unless --allow-inconclusive)

# The cause of a liveness outage that lasted to the end of the run, far past the TTL: the lock
# wedged for good, which fails every gate (``reaches``).
WEDGED = "wedged"


class Violation(msgspec.Struct, kw_only=True):
    """One violation; times in seconds since the run started.

    ``cause`` (overlaps) is ``foreign-release``, ``in-flight-release``, ``lease-expired``,
    ``overwrote``, ``unexplained`` or the name of the fault blamed (one that loses keys, moves
    a client's clock or splits the master); (hard, one client) ``not-renewed`` for a renewing
    lock's lease that lapsed while its holder ran, ``dead-watchdog`` for one whose watchdog
    never renewed again once a fault healed; (liveness) ``wedged`` for an outage that lasted
    to the end of the run, far past the TTL (it fails every gate), ``self-deadlock``,
    ``gave-up`` or ``leaked-permits`` for the findings of docs/history-format.md's "Liveness"
    and "Leaked permits", else none; (fairness) ``overtaken``. A semaphore's excess of permits
    takes the overlaps' causes, or ``raced`` (its last acquire was under way across another's
    grant). ``expires_s`` is each
    holder's lease deadline in effect when the overlap began (None: no deadline).
    ``both_valid_*`` bound the first stretch in which both leases were valid (hard violations
    only).
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

    @property
    def wedged(self) -> bool:
        """A lock wedged for good: it fails every gate (``reaches``)."""
        return self.cause == WEDGED


class LockErrors(msgspec.Struct, kw_only=True):
    """The exceptions of one lock operation (``acquire``, ``release``, ``extend``) that were
    not Redis or connection errors: bugs in the lock. Each was judged as an indeterminate
    outcome (sound for the checker); they are counted here so that nobody misses them."""

    op: str
    count: int
    error: str  # the first one, "Type: message"
    process: str  # who raised it first
    at_s: float  # when
    traceback: str | None = None  # its traceback, when the history has it


class RuleError(msgspec.Struct, kw_only=True):
    """A checker rule (``chaos.checker.rules``) that raised instead of judging: the run's
    violations of its kinds were not looked for, so the verdict cannot pass (``exit_status``).
    A bug in lockchaos, not in the lock."""

    rule: str
    kinds: list[str]  # what it would have found
    error: str  # "Type: message"
    traceback: str

    @property
    def reason(self) -> str:
        """The inconclusive reason it gives: what was not looked for, and why."""
        return (f"the checker's rule {self.rule} failed ({self.error}): "
                f"{' and '.join(self.kinds)} violations were not looked for")


class Verdict(msgspec.Struct, kw_only=True):
    """The whole answer. ``lost_writes``/``lost_write_ids`` are None when the history has no
    final read to judge them by; ``notes`` says what could not be judged and why.

    ``inconclusive_reasons`` are the sentences behind an ``inconclusive`` verdict; beside
    violations, what the run asked for and the lock never met (a fault without effect, an
    extend that never ran: ``chaos.checker.exercised.untested``); empty when the run tested
    all it asked. ``lock_unusable`` is the one among them that means the lock never started in
    any client (its factory failed in all of them): bad input, not a finding. The last
    fields have defaults so that a ``verdict.json`` written before them still loads.

    ``rule_errors`` are the checker's rules that raised (``RuleError``); each also gives an
    inconclusive reason. It is left out of ``verdict.json`` when no rule raised (``UNSET``), so a
    verdict reads the same as before rules could fail."""

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
    lock_errors: list[LockErrors] = []
    inconclusive_reasons: list[str] = []
    lock_unusable: str | None = None
    coverage: dict[str, FaultCoverage] = {}  # per fault name: fired, had an effect, time on
    rule_errors: list[RuleError] | msgspec.UnsetType = msgspec.UNSET

    @property
    def inconclusive(self) -> bool:
        return self.verdict == INCONCLUSIVE

    @property
    def wedged(self) -> bool:
        """Whether the lock wedged for good (a violation of cause ``wedged``): the verdict
        fails every gate."""
        return any(v.wedged for v in self.violations)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready builtins (what ``verdict.json`` holds)."""
        result: dict[str, Any] = msgspec.to_builtins(self)
        return result


def fails(verdict: Verdict, fail_on: str) -> bool:
    """Whether ``verdict`` has a violation at least as severe as the kind ``fail_on``, or a
    lock wedged for good (which fails every gate).

    An inconclusive verdict has no violation: whether it fails a gate is ``exit_status``'s
    question (the search, the explorer and stop-on-first look for violations only)."""
    if fail_on not in RANK or fail_on == INCONCLUSIVE:
        kinds = ", ".join(VIOLATION_KINDS)
        raise ValueError(f"unknown violation kind {fail_on!r}; expected one of {kinds}")
    return reaches(verdict.verdict, fail_on, wedged=verdict.wedged)


def check_fail_on(fail_on: str, option: str = "--fail-on") -> str:
    """``fail_on`` if it names a violation kind; else ``UsageError`` (one line) naming them."""
    if fail_on not in VIOLATION_KINDS:
        raise UsageError(
            f"{option} must be one of {', '.join(VIOLATION_KINDS)} (got {fail_on!r})"
        )
    return fail_on


def reaches(kind: str, fail_on: str, *, wedged: bool = False) -> bool:
    """Whether a violation (or verdict) of ``kind`` fails a run that fails on ``fail_on``
    ("ok" and "inconclusive" never do, whatever ``fail_on`` says: see ``exit_status``); a
    ``wedged`` one (a lock wedged for good, ``WEDGED``) fails every gate."""
    return kind in VIOLATION_KINDS and (wedged or RANK[kind] >= RANK[fail_on])


def exit_status(verdict: Verdict, fail_on: str, *, allow_inconclusive: bool = False) -> int:
    """The exit status of a command that judged a run: ``EXIT_VIOLATION`` for a violation at
    or above ``fail_on``, or a lock wedged for good; ``EXIT_INCONCLUSIVE`` for a run that did
    not exercise the lock or did not test all it asked for (violations below the gate and a
    fault that had no effect), unless allowed — whatever ``fail_on`` says, a gate must not go
    green on what was not tested; ``EXIT_INCONCLUSIVE`` too, allowed or not, when a checker
    rule raised (its violations were not looked for: a broken rule never makes a run green);
    else ``EXIT_OK``."""
    if fails(verdict, fail_on):
        return EXIT_VIOLATION
    if verdict.rule_errors or (verdict.inconclusive_reasons and not allow_inconclusive):
        return EXIT_INCONCLUSIVE
    return EXIT_OK
