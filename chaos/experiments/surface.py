"""A lock's surface, learned by trying: which Redis commands each of its operations sends,
and what it can do — read from a history, never from the lock's code or its name.

The audit starts with a warm-up run (no faults, a couple of seconds, holders extending and
acquiring again while they hold) and reads from its history what the lock is: per operation
the commands its clients announced (``command`` events: the checker's ``Timeline.surface``),
whether it has ``extend`` (``lock-ready``), whether it renews in the background (the run's
start event), whether it lets its own holder in (a nested acquire granted), whether its
leases carry fences; and which commands an operation sent only when it failed (an extend
that found its lease gone and cleaned up after it: those come only when a fault makes the
operation fail, and the audit brings one); and which commands were first sent in one write
(a pipeline) with another: a point before either stops the client before that write, so
the audit aims there once. Its fault phases then aim at each command it learned; the same
reading
of every campaign's history says what the faults and capabilities really exercised
(``Tally``): nested grants, and the pause points reached per operation and command.

An operation's commands are those it sent from whichever thread (its own, or one it started
that wrote the lock's keys: ``chaos.workload.inject.Injector.op_of_write``). Of those, some
are the client's rather than the lock's (``Learned.optional``): connection set-up (go-redis
sends ``HELLO`` through its hook in whatever operation opens a connection), subscriptions (a
waiter's ``SUBSCRIBE`` after a failed ``SET``), script loading, and a command the lock sends
once per process and never again (a probe of the server that it rejected, a script's first
``EVAL`` after ``NOSCRIPT``). Those are shown, and aimed at when the budget allows, but never
a point the audit must reach: a point before go-redis's ``HELLO`` that no campaign reached
called a sound lock inconclusive.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from chaos.checker import read_timeline
from chaos.checker.exercised import RELOADS, acts
from chaos.checker.reader import HistoryReader, value_of
from chaos.history import ACQUIRE, COMMAND, INVOKE, OK, PAUSE_POINT, RELEASE
from chaos.report.audit_page import Declared

# The operations a pause point can name (a ``background`` command — a watchdog's — has none).
POINT_OPS = ("acquire", "release", "extend")
WARM_UP_S = 2.0  # long enough for a few lock cycles with extends and nested acquires
# A warm-up in which the lock granted or released nothing taught nothing of that operation:
# it runs again, twice as long each time, this many times in all (``runner.warm_up``). A
# 5-master Redlock (redsync) with five clients splitting the votes granted nothing in 2 s on
# a loaded two-core machine, and its audit would have aimed at no release at all.
WARM_UP_TRIES = 3
WARM_UP_NEST_DEPTH = 2  # an acquire while holding: a reentrant lock lets its holder in
# Holders' work in the warm-up, in TTLs. A lock that refuses its own holder holds only the
# outer quarters of it (``Worker.hold``): half a TTL then, longer than a renewal period (a
# watchdog renews every TTL/3). At the default (a quarter TTL) a hold lasted an eighth of
# a TTL, no renewal was ever sent, and a user's lock, which declares nothing, was taken for
# one that does not renew.
WARM_UP_WORK_TTLS = 1.0
CRASH = "crash"  # a pause point's action that killed its client
# What a client library sends for itself, by name: never a point the audit must reach
# (``Learned.optional``). Every driver kit skips set-up by name too (SETUP_COMMANDS).
NOT_THE_LOCK = {
    **dict.fromkeys(("HELLO", "AUTH", "SELECT", "CLIENT", "PING", "READONLY", "READWRITE",
                     "INFO", "ECHO", "QUIT", "RESET", "COMMAND"), "connection set-up"),
    **dict.fromkeys(("SUBSCRIBE", "UNSUBSCRIBE", "PSUBSCRIBE", "PUNSUBSCRIBE", "SSUBSCRIBE",
                     "SUNSUBSCRIBE"), "a subscription"),
    **dict.fromkeys(RELOADS, "script loading"),
}
ONCE = "sent once per process, never again (a probe of the server, a script's first load)"


def point_name(op: str, command: str) -> str:
    """How a pause point is named in the audit's tallies: ``release EVAL``."""
    return f"{op} {command}"


@dataclass
class Tally:
    """What one history shows the lock did under the audit: grants, those that carried a
    fence, releases sent, and per ``point_name`` how often a client stopped (``pauses``) or
    crashed (``crashes``) there. (Nested grants are the checker's ``counts.reacquired``:
    only those that re-entered.)"""

    grants: int = 0
    fenced_grants: int = 0
    releases: int = 0
    pauses: dict[str, int] = field(default_factory=dict)
    crashes: dict[str, int] = field(default_factory=dict)

    def add(self, other: Tally) -> None:
        self.grants += other.grants
        self.fenced_grants += other.fenced_grants
        self.releases += other.releases
        for mine, theirs in ((self.pauses, other.pauses), (self.crashes, other.crashes)):
            for name, count in theirs.items():
                mine[name] = mine.get(name, 0) + count


def tally(history: Path) -> Tally:
    """One pass over ``history``: each acquire ``ok`` a grant, fenced or not; each release
    invoked one release; each ``pause-point`` event one stop or crash at its operation and
    command."""
    result = Tally()
    for event in HistoryReader(history).events():
        if event.f == ACQUIRE and event.type == OK:
            result.grants += 1
            result.fenced_grants += event.fence is not None
        elif event.f == RELEASE and event.type == INVOKE:
            result.releases += 1
        elif event.f == PAUSE_POINT:
            point = value_of(event.value) or {}
            name = point_name(str(point.get("op")), str(point.get("command")))
            into = result.crashes if point.get("action") == CRASH else result.pauses
            into[name] = into.get(name, 0) + 1
    return result


class Sending(NamedTuple):
    """How the lock sent its commands, per operation (``how_sent``)."""

    # The commands sent only in operations that failed (or ended unknown): Redis in Action's
    # ``refresh_semaphore`` sends ``MULTI``/``ZREM``/``EXEC`` only when its ``ZADD`` finds
    # the holder's entry gone.
    on_failure: dict[str, list[str]]
    # Each command first sent in one write after another command new there, and that one:
    # the fair semaphore sends ``MULTI``, ``ZREMRANGEBYSCORE``, ``ZINTERSTORE``, ``INCRBY``,
    # ``EXEC`` as one write, and a point before any of them fires before it.
    together: dict[str, dict[str, str]]
    # The commands an operation that succeeded sent, and later ones of its kind that
    # succeeded always left out (``"again": false``, never true): sent once per process.
    once: dict[str, list[str]]


def how_sent(history: Path) -> Sending:
    """One pass over ``history``'s ``command`` events. A client announces each command the
    first time an operation sends it (``with`` the command new before it in the same write,
    if any: the first announcement counts), and again (``"ok": true``) the first time an
    operation that succeeded did: a command never announced so is on the failing way only.
    (Judged by the operation each client first sent a command in, a reentrant lock's release
    ``EVAL`` was: the warm-up's nested holds made each client's first release fail.) And,
    after a later operation of its kind succeeded, whether that one sent it again
    (``"again"``): one no client ever sent again, and some left out, is sent once."""
    sent: dict[tuple[str, str], None] = {}  # first-seen order
    succeeded: set[tuple[str, str]] = set()
    together: dict[str, dict[str, str]] = {}
    again: dict[tuple[str, str], bool] = {}  # True once any client sent it again
    for event in HistoryReader(history).events():
        if event.f != COMMAND:
            continue
        said = value_of(event.value) or {}
        key = op, command = str(said.get("op")), str(said.get("command"))
        if key not in sent and said.get("with"):
            together.setdefault(op, {})[command] = str(said["with"])
        sent[key] = None
        if said.get("ok") is True:
            succeeded.add(key)
        if isinstance(said.get("again"), bool):
            again[key] = again.get(key, False) or said["again"]
    # An operation that never succeeded has no way that succeeds to tell its commands from.
    ops = {op for op, _ in succeeded}
    on_failure: dict[str, list[str]] = {}
    once: dict[str, list[str]] = {}
    for op, command in sent:
        if op in POINT_OPS and op in ops and (op, command) not in succeeded:
            on_failure.setdefault(op, []).append(command)
        elif (op, command) in succeeded and again.get((op, command)) is False:
            once.setdefault(op, []).append(command)
    return Sending(on_failure, together, once)


@dataclass(frozen=True)
class Learned:
    """What the warm-up taught: per operation the commands sent, in first-seen order
    (``background`` for a watchdog's), of those the ones sent only when the operation failed,
    those first sent in one write with another and those sent once per process
    (``how_sent``), what the lock declared or was found to do, and what it was never seen
    to do (``unseen``: it "granted" nothing, or "released" nothing), what it sends then
    unlearned."""

    surface: dict[str, list[str]]
    declared: Declared
    on_failure: dict[str, list[str]] = field(default_factory=dict)
    together: dict[str, dict[str, str]] = field(default_factory=dict)
    once: dict[str, list[str]] = field(default_factory=dict)
    unseen: str | None = None

    def points(self) -> list[tuple[str, str]]:
        """Every (operation, command) a pause point can stop a client before, acquire's
        first: one per write (``writes``)."""
        return [(op, command) for op in POINT_OPS for command in self.writes(op)]

    def optional(self, op: str, command: str) -> str | None:
        """Why a point before ``command`` in ``op`` is shown but never one the audit must
        reach (None: it must): the client library's own command (``NOT_THE_LOCK``), or one
        the lock sends once per process (``ONCE``)."""
        if command in NOT_THE_LOCK:
            return NOT_THE_LOCK[command]
        return ONCE if command in self.once.get(op, []) else None

    def optional_points(self) -> dict[str, dict[str, str]]:
        """Per operation, its optional commands and why (``optional``): what audit.json shows."""
        shown: dict[str, dict[str, str]] = {}
        for op, commands in self.surface.items():
            for command in commands:
                if op in POINT_OPS and (why := self.optional(op, command)) is not None:
                    shown.setdefault(op, {})[command] = why
        return shown

    def writes(self, op: str) -> list[str]:
        """The writes of ``op``, each named by its first command, in first-seen order: its
        commands but for those first sent in one write after another (``together``), as a
        point before them stops the client where a point before that one does."""
        followers = self.together.get(op, {})
        return [command for command in self.surface.get(op, []) if command not in followers]

    def every_time(self, op: str) -> list[str]:
        """The writes ``op`` sends every time it succeeds (``writes``), in first-seen order,
        its act the last: none sent only on demand (``acts``), only when it failed, nor the
        client's own or once (``optional``) — unless nothing else is left."""
        commands = acts(self.writes(op))
        failing = self.on_failure.get(op, [])
        kept = [command for command in commands
                if command not in failing and self.optional(op, command) is None]
        return kept or [command for command in commands if command not in failing] or commands

    def only_on_failure(self, op: str, command: str) -> bool:
        """Whether ``op`` was seen sending ``command`` only when it failed."""
        return command in self.on_failure.get(op, [])


def learn(history: Path, nodes: int | None) -> Learned:
    """What the warm-up's ``history`` says the lock is (``nodes``: the masters it ran on)."""
    timeline = read_timeline(HistoryReader(history))
    seen = tally(history)
    declared = Declared(
        extend=timeline.can_extend,
        # Declared (a bundled lock's INFO), or seen: a user's lock declares nothing, and its
        # watchdog's renewals in the warm-up are what says it renews.
        renews=timeline.params.get("renews") is True or bool(timeline.renewals_sent),
        # A holder let in again is reentrancy only for a mutex (a semaphore with a permit to
        # spare grants its holder another one, and refuses it when none is left, rightly),
        # and only while its lease was valid: a lock that is not reentrant grants a waiting
        # holder a new key once its own has expired (``Level.reentered``).
        reentrant=timeline.mutex and any(
            level.reentered for hold in timeline.holds for level in hold.levels or ()),
        fencing=seen.fenced_grants > 0,
        nodes=nodes,
    )
    sending = how_sent(history)
    return Learned({op: list(commands) for op, commands in timeline.surface.items()}, declared,
                   sending.on_failure, sending.together, sending.once,
                   unseen="granted" if not seen.grants else None if seen.releases else "released")
