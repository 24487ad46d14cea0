"""Pause-injection points: "before your next DEL during a release, stop this process".

Works for any lock without touching its code: every redis-py connection a client process
makes uses ``InjectingConnection`` (or its Sentinel-managed twin), which consults the
process-wide ``injector`` before sending each command. The worker tells the injector which
operation it is in (acquire, release, extend), so a point can name both the command and the
operation: ``PausePoint("DEL", op="release")`` fires on the DEL of ``get-then-del``'s release,
not on any other DEL. A lock that sends its own commands (a driver process) reaches the same
injector through its ``LockContext.pause_points`` (the worker hands it to ``build_context``).

An operation's commands are those its own thread sends, and those a thread it started sends
on the lock's keys while it runs (``Injector.op_of_write``): a Redlock that talks to its
masters from a thread pool (pottery's) sends every ``SET`` from a pool thread, and a point
naming ``acquire SET`` must stop it there. A thread that was already running when the
operation began (a watchdog started by the acquire before) stays background.

A pipeline (a ``MULTI`` … ``EXEC`` transaction included) is one write: redis-py packs its
commands together and sends them at once. Every command in it is counted and recorded, and a
point naming any of them fires before that write — before the whole pipeline, never between
two of its commands (the server receives them together; a transaction applies as one). So
``PausePoint("ZADD", op="acquire")`` stops a lock whose acquire is two transactions (Redis in
Action's fair semaphore) before the second, the one with its ``ZADD``.

Actions:
  ``pause`` — the process SIGSTOPs itself (every thread freezes, watchdogs included, like a
  stop-the-world GC); the harness sends SIGCONT after ``duration_ms``;
  ``sleep`` — only the calling thread sleeps (a slow caller; background threads keep going);
  ``crash`` — the process SIGKILLs itself (e.g. between SETNX and EXPIRE).

Watches (``Watch``) are the network faults' evidence, armed the same way: "tell me when this
client next sends a command to one of these addresses". A network fault acts on a client's
links, and it does something to the lock only when a command of that client crosses a faulted
link while it is on; Toxiproxy cannot say so (its byte counters count a connection only when
it closes), the client's own connections can. The first command to a watched address writes
one ``effect`` event and disarms the watch. The harness starts and ends a watch at once, even
while the client is stopped: a shared array (``WATCH_SLOTS`` per client process, written by
the harness) holds, per watch, its serial while it is live and the nodes whose link is
faulted already (a bit each, set as each link's toxic goes on), until the heal begins. A
command counts only if its node's bit was live both before it left and once it had gone out:
it crossed that link while it was faulted. So does a command that left before, whose reply
was still awaited while the fault was on its link (``Injector.check_awaited``, from the
worker's control thread), for a fault that holds replies (``Watch.holds_replies``: lost,
delayed downstream, cut): the first command a ``reply-lost`` met was often such a one, its
acquire sent a millisecond before the watch went live and its reply never back.
A lock that sends its own commands may send nothing on a link it knows is cut (Redisson fails
a command on a closed channel before writing it): an operation of it that ends in an error
while a watch on every link of the client is live (``Injector.failed``) met the fault too, as
does a command it sent on its own, outside any operation, and reported just after (a
watchdog's renewal: ``Injector.sent_in_background``).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Mapping, MutableSequence, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import redis

ACTIONS = ("pause", "sleep", "crash")
# Commands that write a lock's key: what an acquire sent with them says which nodes, keys and
# values the new holder counted on (``Injector.written``), whatever the lock calls its key.
WRITES = frozenset({"SET", "SETNX", "GETSET", "SETEX", "PSETEX", "HSET", "HSETNX", "HINCRBY",
                    "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL"})
Written = dict[str, tuple[list[str], list[str]]]  # "host:port" -> (keys, values)
# One script call, two ways to send it: a library picks EVAL or EVALSHA per connection and per
# moment (the NOSCRIPT fallback; ioredis sends EVAL the first time on a socket, EVALSHA after,
# and decides only as it writes), so a pause point naming either fires on both.
SCRIPT_CALLS = {"EVALSHA": "EVAL", "EVALSHA_RO": "EVAL_RO"}
BACKGROUND = "background"  # the operation of a command sent outside acquire/release/extend
WATCH_SLOTS = 8  # watches one client process can have at once (network faults on its links)
# A lock that sends its own commands (a driver) announces them only when asked: in the first
# operations of each kind each process makes, always, so that its history says which commands
# each operation sends (the audit's warm-up learned nothing of a driver's without it), and
# after those only while a point or a watch waits.
LEARNING_OPS = 5
# ... and in every one after those until one of its kind succeeded, up to this many: which
# commands an operation sends only when it fails is told by the first that succeeded while
# announced. Five redsync clients contend in the warm-up: under load, a client's first five
# acquires all failed in each process (five masters split two, two and one: nobody's quorum;
# then the hot retry loop), no acquire that succeeded was announced, and the release that
# redsync sends when it misses the quorum passed as part of every acquire.
LEARNING_UNTIL_OK_OPS = 200
ERROR_WORDS = 80  # characters of a library's error an effect quotes (they run to paragraphs)
# The ``awaited`` key of a driver's request in flight (one at a time per process): its last
# announced command awaits its replies from nodes the driver does not name.
DRIVER_REQUEST = -1
MAX_WATCHED_NODE = 61  # a node's bit must fit a signed 64-bit mask: a watch names n0…n61
# How a client met a watched fault: an ``effect`` event's ``how`` (``Crossing.how``; its
# ``what`` says the same in words, ``Watch.describe``). Which one a firing's first crossing is
# depends on timing: a command sent as the fault went on, one sent a moment before whose reply
# the fault held, an operation that failed on the cut link. What a firing may report is the
# set its watch admits (``Watch.admits``), never one of them.
SENT = "sent"  # a command left over a faulted link
REFUSED = "refused"  # a connection over a faulted link was refused
AWAITED = "awaited"  # a command's reply was awaited over a faulted link once the fault was on
FAILED = "failed"  # an operation of a lock that sends its own commands ended in an error


@dataclass(frozen=True)
class PausePoint:
    """Fire ``action`` before the next ``command`` sent (during ``op``, if given).

    ``command="*"`` matches any command, ``EVAL`` and ``EVALSHA`` match each other
    (``SCRIPT_CALLS``); ``nth`` counts commands within one operation, so
    ``PausePoint("*", op="acquire", nth=2)`` fires between the first and second round trip of
    an acquire (between SETNX and EXPIRE, for ``setnx-expire``).
    """

    command: str
    action: str = "pause"
    duration_ms: float = 0.0
    op: str | None = None
    nth: int = 1
    fault: str = ""  # the id of the fault that armed it: its pause-point event names it

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"pause-point action must be one of {ACTIONS}, not {self.action!r}")

    def matches(self, command: str, op: str | None, count: int) -> bool:
        return (
            (self.command == "*" or _script_call(self.command) == _script_call(command))
            and (self.op is None or self.op == op)
            and (self.nth <= 1 or count == self.nth)
        )


@dataclass(frozen=True)
class Crossing:
    """What a client did that met a watched fault: ``command`` went to ``address`` (None:
    unknown; ``command`` empty: a connection there was refused), or its reply was ``awaited``
    there while the fault went on, or — ``error`` — the operation ``command`` of a lock that
    sends its own commands ended in that error (its library may have sent nothing)."""

    command: str
    address: str | None = None
    awaited: bool = False
    error: str = ""

    @property
    def how(self) -> str:
        """``SENT``, ``REFUSED``, ``AWAITED`` or ``FAILED``."""
        if self.error:
            return FAILED
        if self.awaited:
            return AWAITED
        return SENT if self.command else REFUSED


def _first_words(error: str) -> str:
    """``error`` cut at a word within ``ERROR_WORDS`` characters."""
    return error if len(error) <= ERROR_WORDS else error[:ERROR_WORDS].rsplit(" ", 1)[0] + "…"


@dataclass(frozen=True)
class Watch:
    """Report the first command sent to one of ``nodes`` (address ``host:port`` -> node
    index) while the watch is live there: what shows that fault ``fault`` (``name``) did
    something. ``everywhere``: the fault is on every link of the client, so a command whose
    address is unknown (a driver's announcement names only the command) counts once every
    link is faulted. Live while the shared ``slot`` holds ``serial`` (``-serial`` before the
    fault is on, 0 once it heals), for the nodes whose bit the mask beside it has."""

    fault: str
    name: str
    nodes: dict[str, int] = field(hash=False)
    everywhere: bool
    slot: int
    serial: int
    # Whether the fault acts on replies on their way back (a reply lost or delayed
    # downstream, a link cut): a command whose reply was awaited while it was on met it.
    holds_replies: bool = False

    @property
    def admits(self) -> frozenset[str]:
        """The ``Crossing.how`` of each crossing this watch can report (``admitted``)."""
        return admitted(self.holds_replies, self.everywhere)

    def bit(self, address: str | None) -> int:
        """The mask bit a command to ``address`` needs live (None: every node's)."""
        if address is None:
            return sum(1 << i for i in self.nodes.values())
        return 1 << self.nodes[address]

    def describe(self, client: str, met: Crossing) -> str:
        """What ``client`` did that met this fault (``met``), in words."""
        nodes = list(self.nodes.values())
        index = self.nodes.get(met.address) if met.address is not None else (
            nodes[0] if len(nodes) == 1 else None)
        on = f"while {self.name} was on"
        how = met.how
        if how == FAILED:
            return f"{client}'s {met.command} failed {on} ({_first_words(met.error)})"
        if how == AWAITED:
            node = f" from n{index}" if index is not None else ""
            return f"{client} awaited the reply to {met.command}{node} {on}"
        node = f" to n{index}" if index is not None else ""
        did = f"sent {met.command}" if how == SENT else "could not connect"
        return f"{client} {did}{node} {on}"


def admitted(holds_replies: bool, everywhere: bool) -> frozenset[str]:
    """What a watch can report (``Watch.admits``): a command sent and a connection refused
    over a watched link, always; a reply awaited there once the fault was on, when the fault
    holds replies (``Watch.holds_replies``: ``check_awaited``); an operation's error, when it
    watches every link of the client (a driver's error names no link: ``Injector.failed``)."""
    return frozenset({SENT, REFUSED} | ({AWAITED} if holds_replies else set())
                     | ({FAILED} if everywhere else set()))  # fmt: skip


class Injector:
    """Process-wide: the armed points, and the operation the worker is currently in (its
    thread's, or a thread it started: ``op_of_write``).

    ``on_fire`` is called (with the point) just before the action is taken: the worker uses it
    to write a ``pause-point`` event and to ask the harness for a SIGCONT. ``on_new_command``
    is called the first time each command is sent in each operation (``background`` outside
    any, or from another thread: a watchdog's renewals): the worker records it, so the
    history says which commands the lock's acquire, release and extend send (its surface) and
    a pause point that names a command the lock never sends can say so. A command first sent
    in the same write (a pipeline) as another one new there names it (``with``): a point
    before either fires before that one write, so the audit aims at one of them. The worker
    asks, once an operation succeeded, which of its commands no operation of its kind that
    succeeded had sent before (``succeeded``), and records those too: a command never
    recorded so is one the lock sends only when the operation fails; and which it sent again,
    or left out, of those an earlier one had sent (``recurring``): a command always left out
    after the first is one the lock sends once.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._armed: list[PausePoint] = []
        self.current_op: str | None = None
        self._op_thread: int | None = None  # the thread that began ``current_op``
        self._sent_in_op = 0
        self.on_fire: Callable[[PausePoint], None] = lambda point: None
        self.on_new_command: Callable[[str, str, str | None], None] = (
            lambda op, command, with_: None)
        self._seen: set[tuple[str, str]] = set()
        self._in_op: dict[str, None] = {}  # the commands the current (or last) operation sent
        self._succeeded: set[tuple[str, str]] = set()  # sent in an operation that succeeded
        # The lock's name: a write whose arguments hold it touches the lock's keys
        # (``touches``). The threads alive when the current operation began: one of those
        # (a watchdog the last acquire started) is not the operation's (``op_of_write``).
        self.lock_name = ""
        self._before_op: frozenset[threading.Thread] = frozenset()
        self._threads = threading.local()  # per thread: ``helper``, ``background`` (flags)
        # Whether every command of the current operation is seen (``recurring``), and per
        # kind the commands the observed operations that succeeded sent, in first-seen order.
        self._observed = False
        self._sent_by_kind: dict[str, dict[str, None]] = {}
        self._told: set[tuple[str, str, bool]] = set()  # what ``recurring`` said already
        self._begun: dict[str, int] = {}  # operations of each kind begun (``announcing``)
        self._ok_kinds: set[str] = set()  # kinds of operation that succeeded (``announcing``)
        self.written: Written = {}  # by the current (or last) acquire, per node address
        # Watches by slot, and what the command path looks up: the watched addresses, and
        # whether a watch takes a command of unknown address (``Watch.everywhere``).
        # Shared with the harness: each watch's serial, then each watch's mask of live nodes.
        self.slots: MutableSequence[int] = [0] * (2 * WATCH_SLOTS)
        self.on_crossed: Callable[[Watch, Crossing], None] = lambda watch, met: None
        self._watches: dict[int, Watch] = {}
        # Commands whose reply a connection awaits (by connection), with the live watches
        # before each left: what ``check_awaited`` reads.
        self._awaited: dict[int, tuple[str, str | None, Mapping[int, int]]] = {}
        self._watched: frozenset[str] = frozenset()
        self._everywhere = False
        self.watching = False  # the command path's one test when nothing is watched

    def arm(self, point: PausePoint) -> None:
        with self._lock:
            self._armed.append(point)

    def disarm_all(self) -> None:
        with self._lock:
            self._armed.clear()

    @property
    def armed(self) -> list[PausePoint]:
        with self._lock:
            return list(self._armed)

    @property
    def announcing(self) -> bool:
        """Whether a command sent now may matter to the harness (a driver then announces its
        commands): a point or a watch is armed, or the operation under way is one of the
        first ``LEARNING_OPS`` of its kind (its commands are the lock's surface), or of the
        first ``LEARNING_UNTIL_OK_OPS`` while none of its kind succeeded (what it sends only
        when it fails is told by the first that succeeds)."""
        op = self.current_op
        begun = self._begun.get(op, 0) if op is not None else 0
        learning = op is not None and (begun <= LEARNING_OPS or (
            op not in self._ok_kinds and begun <= LEARNING_UNTIL_OK_OPS))
        return learning or bool(self._armed or self._watches)

    def watch(self, watch: Watch) -> None:
        """Arm ``watch`` (it replaces any older one in its slot)."""
        with self._lock:
            self._watches[watch.slot] = watch
            self._index()

    def unwatch(self, serial: int) -> None:
        with self._lock:
            self._watches = {s: w for s, w in self._watches.items() if w.serial != serial}
            self._index()

    def _index(self) -> None:
        self._watched = frozenset(a for w in self._watches.values() for a in w.nodes)
        self._everywhere = any(w.everywhere for w in self._watches.values())
        self.watching = bool(self._watches)

    def live(self) -> dict[int, int]:
        """The watches live now, by serial, with their masks of live nodes (what a command
        about to leave may report)."""
        slots = self.slots
        return {w.serial: slots[WATCH_SLOTS + w.slot] for w in list(self._watches.values())
                if slots[w.slot] == w.serial}

    def crossed(self, command: str, address: str | None, live: Mapping[int, int],
                error: str = "") -> None:
        """``command`` went to ``address`` (None: unknown; ``command`` empty: a connection
        there was refused; ``error``: the operation ``command`` ended in it), and ``live`` were
        the live watches before it left: each of those it matches that is still live there
        reports it (``on_crossed``) and is disarmed, and a matching watch the harness ended
        is forgotten."""
        if address in self._watched if address is not None else self._everywhere:
            slots, met = self.slots, Crossing(command, address, error=error)
            with self._lock:
                matching = [w for w in self._watches.values()
                            if (address in w.nodes if address is not None else w.everywhere)]
                hit = [w for w in matching if met.how in w.admits
                       and _on(live.get(w.serial, 0), w.bit(address))
                       and slots[w.slot] == w.serial
                       and _on(slots[WATCH_SLOTS + w.slot], w.bit(address))]
                for w in matching:
                    if w in hit or slots[w.slot] not in (w.serial, -w.serial):
                        del self._watches[w.slot]
                self._index()
            for w in hit:
                self.on_crossed(w, met)

    def awaiting(self, connection: int, command: str, address: str,
                 live: Mapping[int, int]) -> None:
        """``connection`` sent ``command`` to ``address`` (``live``: the live watches before it
        left) and awaits its reply. Every command, watched or not: a watch may arrive while it
        waits. (One dict store: atomic, no lock on the command path.)"""
        self._awaited[connection] = (command, address, live)

    def answered(self, connection: int) -> None:
        """``connection`` has its reply (or gave up on it)."""
        self._awaited.pop(connection, None)

    def check_awaited(self) -> None:
        """Each command still awaiting its reply now, from a node where a watch that holds
        replies is live and was not when it left, reports it (``on_crossed``, awaited) and
        disarms the watch: the fault went on while the reply was on its way back."""
        if not (self.watching and self._awaited):
            return
        slots, hits = self.slots, []
        with self._lock:
            for command, address, before in list(self._awaited.values()):  # a copy, atomic
                for w in [w for w in self._watches.values() if AWAITED in w.admits and (
                          w.everywhere if address is None else address in w.nodes)]:
                    bit = w.bit(address)
                    if (slots[w.slot] == w.serial and _on(slots[WATCH_SLOTS + w.slot], bit)
                            and not _on(before.get(w.serial, 0), bit)):
                        hits.append((w, command, address))
                        del self._watches[w.slot]
            self._index()
        for w, command, address in hits:
            self.on_crossed(w, Crossing(command, address, awaited=True))

    def begin(self, op: str) -> None:
        """The worker enters an operation (commands are counted per operation)."""
        self._before_op = frozenset(threading.enumerate())
        self.current_op, self._sent_in_op, self._op_thread = op, 0, threading.get_ident()
        self._in_op = {}
        self._begun[op] = self._begun.get(op, 0) + 1
        self._observed = self.announcing  # what a driver is asked (``DriverLock._request``)
        if op == "acquire":
            self.written = {}

    def note_write(self, address: str, command: str, args: tuple[object, ...]) -> None:
        """Remember the keys and values a write command of an acquire carried to ``address``
        (EVAL's keys are its KEYS, every other argument a possible value)."""
        words = [_text(arg) for arg in args]
        if command.startswith(("EVAL", "FCALL")):
            count = int(words[1]) if len(words) > 1 and words[1].isdigit() else 0
            keys, values = words[2 : 2 + count], words[2 + count :]
        else:
            keys, values = words[:1], words[1:]
        known_keys, known_values = self.written.setdefault(address, ([], []))
        known_keys += [key for key in keys if key not in known_keys]
        known_values += [value for value in values if value not in known_values]

    def end(self) -> None:
        self.current_op, self._op_thread = None, None
        self._awaited.pop(DRIVER_REQUEST, None)  # a driver's request has its answer

    def succeeded(self, op: str) -> list[str]:
        """The last operation, ``op``, succeeded: the commands it sent that no ``op`` that
        succeeded had sent before (each is returned once per process)."""
        self._ok_kinds.add(op)
        new = [command for command in self._in_op if (op, command) not in self._succeeded]
        self._succeeded.update((op, command) for command in new)
        return new

    def recurring(self, op: str) -> list[tuple[str, bool]]:
        """The last operation, ``op``, succeeded: for each command it or an earlier operation
        of its kind that succeeded sent, not said before, whether it sent it again (True) or
        left it out (False). Only for an operation whose every command was seen (a driver
        announces them only while asked: ``announcing`` when it began). A command every
        later operation left out is one the lock sends once per process — a probe of the
        server, a script it loads — never a point the audit must reach
        (``chaos.experiments.surface``): a JVM lock's first extend probes a command the
        server rejects and falls back, and a point before the probe waited for ever."""
        if not self._observed:
            return []
        earlier = self._sent_by_kind.setdefault(op, {})
        said = [(command, command in self._in_op) for command in earlier]
        earlier.update(self._in_op)
        new = [told for told in said if (op, *told) not in self._told]
        self._told.update((op, *told) for told in new)
        return new

    def touches(self, commands: Sequence[Sequence[object]]) -> bool:
        """Whether any of ``commands`` (each its name, then its arguments) names the lock: one
        of its keys (``redlock:<name>``, ``<name>:fence``: any key derived from its name), a
        script's KEYS, a channel of it."""
        name = self.lock_name
        if not name:
            return False
        raw = name.encode()
        return any(raw in bytes(arg) if isinstance(arg, bytes | memoryview) else name in str(arg)
                   for args in commands for arg in list(args)[1:])

    def op_of_write(self, touched: Callable[[], bool] | None) -> str | None:
        """The operation a write from the calling thread belongs to: its own, or the one under
        way when a thread it started sends on the lock's keys (``touched``: whether the write
        names them; None, unknown). A Redlock on a thread pool sends every command from a
        pool thread: taken for background, its surface was "background SET, EVALSHA, SCRIPT"
        and a pause point aimed at its acquire never fired. A thread already running when the
        operation began is not the operation's: a watchdog renewing while its holder acquires
        again (nested, in the audit's warm-up), counted as the acquire's, put EVAL in the
        acquire's surface, and the audit aimed at a command the acquire never sends (2 loaded
        audits in 35). Nor is one that ever sent outside an operation, nor a write of no key
        of the lock (a pool thread's ``SCRIPT LOAD``)."""
        op = self.current_op
        if threading.get_ident() == self._op_thread:
            return op
        flags = self._threads
        if op is None:
            flags.background = True  # it works on its own: a watchdog, a late reply's reader
            return None
        if touched is None or getattr(flags, "background", False):
            return None
        if not getattr(flags, "helper", False):
            if threading.current_thread() in self._before_op:
                return None
            flags.helper = True  # started while the operation ran: its helper from now on
        return op if touched() else None

    def before_command(self, command: str) -> None:
        """A command a driver announces, right before it sends it (to a node it does not
        say: only a watch on ``everywhere`` takes it). Its request then awaits its replies
        until it is answered (``end``): a fault that holds replies and went on every link
        meanwhile met it (``check_awaited``). node-redlock's release, sent before the last of
        five links had its reply-lost toxic, waited out the fault and failed at its heal; the
        audit said "reply-lost had no effect on the lock in any run"."""
        self.before_write((command,))
        live = self.live()
        if self.watching:
            self.crossed(command, None, live)
        self._awaited[DRIVER_REQUEST] = (command, None, live)

    def failed(self, op: str, error: str) -> None:
        """An operation ``op`` of a lock that sends its own commands ended in ``error``: each
        watch on every link of this client that is live now reports it and is disarmed. The
        library may have sent nothing (it knew the link was gone), so no command crossed it,
        but the fault is what the operation met."""
        if self.watching:
            self.crossed(op, None, self.live(), error=error)

    def sent_in_background(self, command: str) -> None:
        """A lock that sends its own commands sent ``command`` outside any operation (a
        driver's watchdog renewal), a moment ago: it is the lock's background surface, and a
        watch on every link of the client that is live now takes it (a command sent a moment
        before the watch went live counts too: the report's trip, a millisecond, against a
        fault on for a tenth of a second or more). No point fires: the command has gone."""
        self._record(BACKGROUND, command, None)
        if self.watching:
            self.crossed(command, None, self.live())

    def _record(self, op: str, command: str, with_: str | None) -> bool:
        """Whether ``op`` sends ``command`` for the first time: then it is recorded
        (``on_new_command``), beside ``with_`` if it came in the same write."""
        seen = (op, command)
        if seen in self._seen:
            return False
        self._seen.add(seen)
        self.on_new_command(op, command, with_)
        return True

    def before_write(self, commands: Sequence[str],
                     touched: Callable[[], bool] | None = None) -> str | None:
        """Before one write of ``commands``: a single command, or a pipeline's, which reach
        the server together. Each is counted and recorded in its turn, as the operation's it
        belongs to (``op_of_write``: ``touched``, whether the write names the lock's keys);
        the first armed point any of them matches (at its own count) fires once, before the
        whole write. Returns that operation (None: background)."""
        point = None
        op = self.op_of_write(touched)
        first_new = None  # the first command new in this write: those after it came with it
        for command in commands:
            if op is not None:
                self._sent_in_op += 1
                self._in_op[command] = None
            if self._record(op or BACKGROUND, command, first_new):
                first_new = first_new or command
            if point is None and self._armed:  # the hot path: nothing armed, no lock taken
                point = self._take(command, op, self._sent_in_op if op is not None else 1)
        if point is None:
            return op
        self.on_fire(point)
        if point.action == "pause":
            _signal_self(signal.SIGSTOP)
        elif point.action == "sleep":
            time.sleep(point.duration_ms / 1000)
        else:
            _signal_self(signal.SIGKILL)
        return op

    def _take(self, command: str, op: str | None, count: int) -> PausePoint | None:
        """The first armed point ``command`` (the ``count``-th of its operation ``op``)
        matches, disarmed: a point fires once."""
        with self._lock:
            point = next((p for p in self._armed if p.matches(command, op, count)), None)
            if point is not None:
                self._armed.remove(point)
            return point


def _on(mask: int, bits: int) -> bool:
    return mask & bits == bits


def _signal_self(sig: int) -> None:
    """This process, and its process group when it leads one (a client with a lock driver)."""
    if os.getpgrp() == os.getpid():
        os.killpg(os.getpid(), sig)
    else:
        os.kill(os.getpid(), sig)


injector = Injector()


def _script_call(command: str) -> str:
    return SCRIPT_CALLS.get(command, command)


def _text(arg: object) -> str:
    return arg.decode(errors="replace") if isinstance(arg, bytes) else str(arg)


def _command_name(args: tuple[object, ...]) -> str:
    name = args[0] if args else b""
    if isinstance(name, bytes):
        name = name.decode()
    return str(name).split(" ", 1)[0].upper()


class InjectingConnection(redis.Connection):
    """A redis-py connection that passes every command by the injector first: one at a time
    (``send_command``), or a pipeline's all at once (``pack_commands``, which redis-py calls
    right before it sends them in one write; a pause point matching any of them stops the
    client before that write, not inside it).

    Commands redis-py sends on its own while connecting (``CLIENT SETINFO``, ``HELLO``…) are
    not the lock's and are not counted. Sentinel-managed pools combine this class with
    ``SentinelManagedConnection`` (first: its ``connect`` and ``read_response`` call these).

    While a watch is armed, a write that went out (``send_packed_command``, whatever became
    of it: a reset or a timeout is the fault at work), or a connection refused (a partition:
    the command never leaves), is reported to the injector with this connection's address.
    Every command that went out is the injector's ``awaiting`` until its reply is read or the
    connection closes (``check_awaited``).
    """

    _handshaking = False
    _sending = ""  # the first command of the write under way: what a watch reports
    _live: Mapping[int, int] = MappingProxyType({})  # the watches live when it was to leave

    def connect(self) -> None:
        if self._sock is not None or not injector.watching:  # the hot path: one test
            super().connect()
            return
        live = injector.live()
        try:
            super().connect()
        except redis.ConnectionError:
            injector.crossed("", f"{self.host}:{self.port}", live)
            raise

    def send_packed_command(self, command: object, check_health: bool = True) -> None:
        lock_command = bool(self._sending) and not self._handshaking
        address = f"{self.host}:{self.port}" if lock_command else ""
        try:
            super().send_packed_command(command, check_health)
            if lock_command:  # it went out: its reply is awaited
                injector.awaiting(id(self), self._sending, address, self._live)
        finally:
            if lock_command:
                if injector.watching and self._live:
                    injector.crossed(self._sending, address, self._live)
                self._sending, self._live = "", MappingProxyType({})

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().read_response(*args, **kwargs)
        finally:
            injector.answered(id(self))

    def disconnect(self, *args: Any) -> None:
        injector.answered(id(self))  # a closed connection awaits nothing
        super().disconnect(*args)

    def on_connect(self) -> None:
        self._handshaking = True
        try:
            super().on_connect()
        finally:
            self._handshaking = False

    def send_command(self, *args: object, **kwargs: object) -> None:
        if not self._handshaking:
            self._before_write([args])
        super().send_command(*args, **kwargs)

    def pack_commands(self, commands: Sequence[Sequence[object]]) -> list[bytes]:
        if not self._handshaking:
            self._before_write([tuple(args) for args in commands])
        packed: list[bytes] = super().pack_commands(commands)
        return packed

    def _before_write(self, commands: list[tuple[object, ...]]) -> None:
        names = [_command_name(args) for args in commands]
        op = injector.before_write(names, lambda: injector.touches(commands))
        self._sending = names[0] if names else ""
        if injector.watching:
            self._live = injector.live()
        if op == "acquire":
            for command, args in zip(names, commands, strict=True):
                if command in WRITES:
                    injector.note_write(f"{self.host}:{self.port}", command, args[1:])
