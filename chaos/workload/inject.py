"""Pause-injection points: "before your next DEL during a release, stop this process".

Works for any lock without touching its code: every redis-py connection a client process
makes uses ``InjectingConnection`` (or its Sentinel-managed twin), which consults the
process-wide ``injector`` before sending each command. The worker tells the injector which
operation it is in (acquire, release, extend), so a point can name both the command and the
operation: ``PausePoint("DEL", op="release")`` fires on the DEL of ``get-then-del``'s release,
not on any other DEL. A lock that sends its own commands (a driver process) reaches the same
injector through its ``LockContext.pause_points`` (the worker hands it to ``build_context``).

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
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

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


class Injector:
    """Process-wide: the armed points, and the operation the worker is currently in.

    ``on_fire`` is called (with the point) just before the action is taken: the worker uses it
    to write a ``pause-point`` event and to ask the harness for a SIGCONT. ``on_new_command``
    is called the first time each command is sent in each operation (``background`` outside
    any, e.g. a watchdog's renewals): the worker records it, so the history says which
    commands the lock's acquire, release and extend send (its surface) and a pause point that
    names a command the lock never sends can say so.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._armed: list[PausePoint] = []
        self.current_op: str | None = None
        self._sent_in_op = 0
        self.on_fire: Callable[[PausePoint], None] = lambda point: None
        self.on_new_command: Callable[[str, str], None] = lambda op, command: None
        self._seen: set[tuple[str, str]] = set()
        self.written: Written = {}  # by the current (or last) acquire, per node address

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

    def begin(self, op: str) -> None:
        """The worker enters an operation (commands are counted per operation)."""
        self.current_op, self._sent_in_op = op, 0
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
        self.current_op = None

    def before_command(self, command: str) -> None:
        self.before_write((command,))

    def before_write(self, commands: Sequence[str]) -> None:
        """Before one write of ``commands``: a single command, or a pipeline's, which reach
        the server together. Each is counted and recorded in its turn; the first armed point
        any of them matches (at its own count) fires once, before the whole write."""
        point = None
        for command in commands:
            self._sent_in_op += 1
            seen = (self.current_op or BACKGROUND, command)
            if seen not in self._seen:
                self._seen.add(seen)
                self.on_new_command(*seen)
            if point is None and self._armed:  # the hot path: nothing armed, no lock taken
                point = self._take(command, self._sent_in_op)
        if point is None:
            return
        self.on_fire(point)
        if point.action == "pause":
            _signal_self(signal.SIGSTOP)
        elif point.action == "sleep":
            time.sleep(point.duration_ms / 1000)
        else:
            _signal_self(signal.SIGKILL)

    def _take(self, command: str, count: int) -> PausePoint | None:
        """The first armed point ``command`` (the ``count``-th of its operation) matches,
        disarmed: a point fires once."""
        with self._lock:
            point = next((p for p in self._armed if p.matches(command, self.current_op, count)),
                         None)
            if point is not None:
                self._armed.remove(point)
            return point


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
    ``SentinelManagedConnection`` (which overrides neither method).
    """

    _handshaking = False

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
        injector.before_write(names)
        if injector.current_op == "acquire":
            for command, args in zip(names, commands, strict=True):
                if command in WRITES:
                    injector.note_write(f"{self.host}:{self.port}", command, args[1:])
