"""Pause-injection points: "before your next DEL during a release, stop this process".

Works for any lock without touching its code: every redis-py connection a client process
makes uses ``InjectingConnection`` (or its Sentinel-managed twin), which consults the
process-wide ``injector`` before sending each command. The worker tells the injector which
operation it is in (acquire, release, extend), so a point can name both the command and the
operation: ``PausePoint("DEL", op="release")`` fires on the DEL of ``get-then-del``'s release,
not on any other DEL.

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
from collections.abc import Callable
from dataclasses import dataclass

import redis

ACTIONS = ("pause", "sleep", "crash")


@dataclass(frozen=True)
class PausePoint:
    """Fire ``action`` before the next ``command`` sent (during ``op``, if given).

    ``command="*"`` matches any command; ``nth`` counts commands within one operation, so
    ``PausePoint("*", op="acquire", nth=2)`` fires between the first and second round trip of
    an acquire (between SETNX and EXPIRE, for ``setnx-expire``).
    """

    command: str
    action: str = "pause"
    duration_ms: float = 0.0
    op: str | None = None
    nth: int = 1

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"pause-point action must be one of {ACTIONS}, not {self.action!r}")

    def matches(self, command: str, op: str | None, count: int) -> bool:
        return (
            self.command in ("*", command)
            and (self.op is None or self.op == op)
            and (self.nth <= 1 or count == self.nth)
        )


class Injector:
    """Process-wide: the armed points, and the operation the worker is currently in.

    ``on_fire`` is called (with the point) just before the action is taken: the worker uses it
    to write a ``pause-point`` event and to ask the harness for a SIGCONT.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._armed: list[PausePoint] = []
        self.current_op: str | None = None
        self._sent_in_op = 0
        self.on_fire: Callable[[PausePoint], None] = lambda point: None

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

    def end(self) -> None:
        self.current_op = None

    def before_command(self, command: str) -> None:
        self._sent_in_op += 1
        if not self._armed:  # the hot path: nothing armed, no lock taken
            return
        op, count = self.current_op, self._sent_in_op
        with self._lock:
            point = next((p for p in self._armed if p.matches(command, op, count)), None)
            if point is None:
                return
            self._armed.remove(point)  # one shot
        self.on_fire(point)
        if point.action == "pause":
            os.kill(os.getpid(), signal.SIGSTOP)
        elif point.action == "sleep":
            time.sleep(point.duration_ms / 1000)
        else:
            os.kill(os.getpid(), signal.SIGKILL)


injector = Injector()


def _command_name(args: tuple[object, ...]) -> str:
    name = args[0] if args else b""
    if isinstance(name, bytes):
        name = name.decode()
    return str(name).split(" ", 1)[0].upper()


class InjectingConnection(redis.Connection):
    """A redis-py connection that passes every command by the injector first.

    Commands redis-py sends on its own while connecting (``CLIENT SETINFO``, ``HELLO``…) are
    not the lock's and are not counted. Sentinel-managed pools combine this class with
    ``SentinelManagedConnection`` (which does not override ``send_command``).
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
            injector.before_command(_command_name(args))
        super().send_command(*args, **kwargs)
