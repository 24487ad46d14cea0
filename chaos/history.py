"""The event log every run produces and every checker reads.

One JSON object per line, Jepsen-style: an operation is an ``invoke`` followed by its
completion from the same process: ``ok`` (it happened), ``fail`` (it certainly did not) or
``info`` (indeterminate: it may or may not have happened). Single ``info`` events carry
things that are not operations: nemesis faults, crashes, pause points, run start and end.

Timestamps are ``time.monotonic_ns()`` (CLOCK_MONOTONIC), the one clock every process on the
machine shares, so events written by different worker processes are comparable. Wall clocks
are never used: the nemesis jumps them.

Every process appends to the same file with one unbuffered ``O_APPEND`` write per event, so
a crash loses at most the line being written, and lines never interleave. Lines are *not*
guaranteed to be in timestamp order across processes (two processes may stamp and write in
opposite orders); within one process they are.

See ``docs/history-format.md`` for the full vocabulary.
"""

from __future__ import annotations

import os
import threading
import time
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import msgspec

# Event types.
INVOKE = "invoke"
OK = "ok"
FAIL = "fail"
INFO = "info"

# Processes that are not clients.
NEMESIS = "nemesis"
HARNESS = "harness"

# Client operations.
ACQUIRE = "acquire"
RELEASE = "release"
EXTEND = "extend"
RENEW = "renew"
READ = "read"
WRITE = "write"

# Single info events.
START = "start"  # harness: run parameters; nemesis: a fault begins
STOP = "stop"  # nemesis: a fault ends
CRASH = "crash"  # a client process died (killed); its id may be reused by a fresh process
PAUSE_POINT = "pause-point"  # a client reached an armed pause-injection point
LOCK_UNUSABLE = "lock-unusable"  # a client's lock factory failed: that client never ran
LOCK_READY = "lock-ready"  # a client's lock started; value: what it can do ({"extend": bool})
COMMAND = "command"  # a client sent a Redis command for the first time in an operation: the
# lock's surface, value {"op": "release", "command": "EVAL"} ("background" outside any
# operation), with "with": "MULTI" when it was first sent in one write after a command new there;
# again with "ok": true the first time an operation that succeeded sent it
EFFECT = "effect"  # what a fault did to the lock, by whoever saw it: value {"id", "what"}
# (+ "how", of a network fault's: chaos.workload.inject.SENT, REFUSED, AWAITED or FAILED)
DROPPED = "dropped"  # nemesis: bytes a fault dropped on one client's link to a node, counted by
# Toxiproxy between value.since and the event's time: value {"id", "client", "node", "since",
# "requests", "replies"} (chaos.nemesis.link_faults.DropCounter)
STALL = "stall"  # a client process did not run from value {"since": t} to the event's time
# (chaos.workload.stalls): paused, or not scheduled by an overloaded machine
# A thread this late (a wake-up, or a write of its event) lost that stretch: well above a loaded
# machine's usual scheduling delay (a few ms), well below the tolerance a lapse is judged with.
MIN_STALL_MS = 50.0
FINAL_READ = "final-read"  # harness: the resource's final state (type ok)
# harness: the lock's key at the end, per node where it exists, its PTTL in ms (-1: no expiry):
# value {"key": name, "pttl": {"n0": -1}} (type ok); a key the lock names otherwise is not seen
FINAL_KEY = "final-key"
END = "end"  # harness: the run is over

# The modes of a hold (an acquire invoke's ``value.mode``; absent: exclusive, a mutex's): an
# exclusive hold excludes every other; shared holds coexist, their ``permits`` counted
# against the run's ``capacity`` (its start event's; absent: 1).
EXCLUSIVE = "exclusive"
SHARED = "shared"

STALE_TOKEN = "stale-token"  # error of a resource access rejected by fencing
GAVE_UP = "gave-up"  # error of a failed acquire whose lock waited out its own acquire timeout

# What became of a lease beyond its operation's outcome, by the lock's own account: an
# extend's ``fail``/``info`` or a release's ``ok`` with ``value: {"lease": …}``
# (docs/history-format.md, "Leases the lock gave up, lost or kept").
LEASE = "lease"
REVOKED = "revoked"  # extend: the lock gave the lease up (deleted its key); valid no more
INVALIDATED = "invalidated"  # extend: nothing more can be sent for it; its key stays till expiry
KEPT = "kept"  # release: released, the key kept on purpose until ``valid_until`` (or the deadline)

# What a fault does, as its nemesis ``start`` event declares it (``effects``). The checker
# reasons about these, never about fault names, so a new fault that declares them is
# explained without a change to the checker (docs/history-format.md).
LOSES_KEYS = "loses-keys"  # a key the lock wrote may be gone once it starts or stops
SPLITS_MASTER = "splits-master"  # while it is on, two masters may each grant the lock
STALLS_CLIENT = "stalls-client"  # its target client cannot act (paused, slowed) for a while
KILLS_CLIENT = "kills-client"  # its target client's process dies
MOVES_CLOCK = "moves-clock"  # a wall clock (a server's or a client's) jumps
DISTURBS_NETWORK = "disturbs-network"  # delays, cuts or resets its target's links
STALLS_SERVER = "stalls-server"  # a server stops answering for a while
RESTARTS_SERVER = "restarts-server"  # a server process dies and starts again
FORGETS_SCRIPTS = "forgets-scripts"  # a server forgets its cached scripts (EVALSHA: NOSCRIPT);
# no key is lost, so it never explains an overlap
EFFECTS = (
    LOSES_KEYS,
    SPLITS_MASTER,
    STALLS_CLIENT,
    KILLS_CLIENT,
    MOVES_CLOCK,
    DISTURBS_NETWORK,
    STALLS_SERVER,
    RESTARTS_SERVER,
    FORGETS_SCRIPTS,
)


# How a fault's start event says its effect on the lock is seen (``evidence``; the checker's
# fault coverage): ``activity`` — it was on while its target client (a server fault: any
# client) held the lock or was acquiring it; ``reported`` — only an event naming its id says
# it did something (a pause point reached, a slow critical section begun, a holder's key on a
# killed node: an ``effect``, ``pause-point`` or ``crash`` event), because being armed or
# firing at an idle moment does nothing to the lock.
ACTIVITY = "activity"
REPORTED = "reported"
EVIDENCE = (ACTIVITY, REPORTED)


class Event(msgspec.Struct, omit_defaults=True, kw_only=True):
    """One line of the history.

    ``valid_until`` is the monotonic deadline (ns) up to which the lease the lock granted is
    valid by the lock's own claim: acquire-invoke time + the validity the lock reported.
    ``fence`` is a fencing token (a number that grows with every grant) where the lock has one.
    ``bug`` marks an indeterminate outcome (``info``) whose exception was not a Redis or
    connection error: a bug in the lock, which the verdict counts and shows. ``traceback`` is
    the exception's traceback, written on a client process's first such error of each
    operation (and on ``lock-unusable``): enough to show, not one per event.
    """

    t: int
    type: str
    process: str
    f: str
    token: str | None = None
    valid_until: int | None = None
    fence: int | None = None
    value: Any = None
    error: str | None = None
    bug: bool | None = None
    traceback: str | None = None


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Event)


def now() -> int:
    """The history clock: monotonic nanoseconds, shared by all processes on this machine."""
    return time.monotonic_ns()


class HistoryWriter:
    """Appends events to a history file; safe to share across processes (one per process).

    Each event is one ``os.write`` on an ``O_APPEND`` descriptor, so it reaches the file as
    soon as it happens and concurrent writers never split each other's lines.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()

    def append(self, event: Event) -> Event:
        os.write(self._fd, _encoder.encode(event) + b"\n")
        return event

    def log(self, type: str, process: str, f: str, **fields: Any) -> Event:
        """Stamp and append an event now; returns it.

        Stamping and writing happen under one lock, so the events of one process (whatever
        thread logs them: a watchdog's renewals, say) reach the file in time order — which
        lets the checker stream the file instead of sorting it."""
        with self._lock:
            event = self.append(Event(t=now(), type=type, process=process, f=f, **fields))
            written = now()
            if written - event.t >= MIN_STALL_MS * 1e6 and f != STALL:
                # The write held the thread that logged (a watchdog logging its renewal)
                # while a loaded machine's write-back throttled it: that process lost the
                # stretch to us, as to a GC pause. The stall watcher, which only waits, never
                # sees it (CI: a renewal 420 ms late, no stall, "watchdog did not renew").
                self.append(Event(t=written, type=INFO, process=process, f=STALL,
                                  value={"since": event.t}))
            return event

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class HistoryError(ValueError):
    """The history cannot be read (not a history, or corrupt before its last line)."""


def decode_line(line: bytes) -> Event:
    return _decoder.decode(line)


def iter_events(path: str | os.PathLike[str]) -> Iterator[Event]:
    """Events in file order. A truncated last line (a crash mid-write, or a write under way
    in a history still being written) is skipped with a warning; a bad line anywhere else
    raises ``HistoryError`` naming the line. Reading stops at the first line with no newline:
    the file's end as it was, for a reader polling a live run — read on, the rest of that
    line, appended meanwhile, came back as a line of its own, and the torn one was "not a
    history event" (a test waiting for a pause point, in a fresh clone's CI)."""
    with open(path, "rb") as fh:
        pending: tuple[int, bytes] | None = None
        for number, line in enumerate(fh, 1):
            if pending is not None:
                yield _decode_or_raise(*pending)
            pending = (number, line) if line.strip() else None
            if not line.endswith(b"\n"):
                break
        if pending is not None:
            number, line = pending
            try:
                yield decode_line(line)
            except (msgspec.DecodeError, msgspec.ValidationError):
                if line.endswith(b"\n"):
                    raise HistoryError(f"{path}: line {number} is not a history event") from None
                warnings.warn(
                    f"{path}: ignoring truncated last line {number}", stacklevel=2
                )


def _decode_or_raise(number: int, line: bytes) -> Event:
    try:
        return decode_line(line)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise HistoryError(f"line {number} is not a history event: {exc}") from None


def read_history(path: str | os.PathLike[str]) -> list[Event]:
    """All events sorted by time (stable, so same-instant events keep file order)."""
    events = list(iter_events(path))
    events.sort(key=lambda e: e.t)
    return events


def write_history(path: str | os.PathLike[str], events: Iterable[Event]) -> None:
    """Write a whole history at once (tests, synthetic benchmarks, replays)."""
    with open(path, "wb") as fh:
        for event in events:
            fh.write(_encoder.encode(event) + b"\n")
