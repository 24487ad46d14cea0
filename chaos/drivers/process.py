"""One running driver: the process, the threads that read its stdout and stderr, bounded waits.

The driver is a child of the client's worker and in its process group, so ``client-pause``
freezes it too (a real stop-the-world pause for a JVM) and ``client-crash`` kills it; it dies
with its worker even when that one is SIGKILLed (the parent-death signal). Every wait counts
only time the client process was running: a SIGSTOPped client's driver cannot answer. A driver
that exits or writes something that is not the protocol is *broken*: the waiting call raises
``DriverBroken`` with one line saying so (and the stderr line that names the error).
"""

from __future__ import annotations

import contextlib
import os
import queue
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from chaos.drivers.protocol import (
    FromDriver,
    Log,
    ProtocolError,
    Renewed,
    Sent,
    ToDriver,
    decode,
    encode,
    renewal_sent,
)
from chaos.errors import UsageError
from chaos.history import now
from chaos.topology.processes import die_with_parent

_STALL_S = 0.25  # a wait slice longer than this means the process was stopped: not counted
_SLICE_S = 0.05
_SETPRIV = shutil.which("setpriv")


class DriverBroken(Exception):
    """The driver died, hung or wrote something that is not the protocol: a bug in the driver
    (recorded like any other exception of a lock: an indeterminate outcome, one clear line)."""


def _die_with_worker() -> None:
    # Runs in the child between fork and exec: it dies with the worker (even a SIGKILLed one).
    die_with_parent(signal.SIGKILL)


def clock_env(argv: list[str], env: dict[str, str]) -> dict[str, str]:
    """The driver's environment. A client under libfaketime (the ``client-clock`` fault,
    chaos/workload/clocks.py) passes it on, so the driver's wall clock moves with its
    client's. One exception: a JVM under ``FAKETIME_DONT_FAKE_MONOTONIC=1`` takes ~3 s to
    start and ~60 ms per lock operation (libfaketime 0.9.10 fails its monotonic timed waits,
    which the JVM retries), so a JVM's monotonic clock is faked too: ``nanoTime`` jumps with
    the wall clock, which nothing the harness records depends on (the history's clock is the
    worker's)."""
    if "faketime" in env.get("LD_PRELOAD", "") and Path(argv[0]).name == "java":
        env = {k: v for k, v in env.items() if k != "FAKETIME_DONT_FAKE_MONOTONIC"}
    return env


class DriverProcess:
    """One running driver: its pipes, its reader threads, the last lines of its stderr.

    ``on_renewed`` is called (from the reader thread) with every unasked ``renewed`` line and
    the time the renewal was sent (``renewal_sent``), ``on_sent`` with every unasked ``sent``
    line; every other message waits in a queue for ``receive``."""

    def __init__(self, argv: list[str], *, label: str, env: dict[str, str] | None = None) -> None:
        self.label = label
        self.argv = argv
        # setpriv sets the parent-death signal and execs (so Python can vfork, no preexec_fn in
        # a threaded process); without it, a preexec_fn does the same prctl.
        prefix = [_SETPRIV, "--pdeathsig", "KILL", "--"] if _SETPRIV else []
        full_env = clock_env(argv, {**os.environ, **(env or {})})
        try:
            self.process = subprocess.Popen(
                [*prefix, *argv],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=full_env,
                preexec_fn=None if _SETPRIV else _die_with_worker,
                close_fds=True,
            )
        except OSError as exc:
            raise UsageError(f"driver {label}: cannot start {shlex.join(argv)}: {exc}") from None
        assert self.process.stdin and self.process.stdout and self.process.stderr
        self._stdin: IO[bytes] = self.process.stdin
        self._replies: queue.Queue[FromDriver | None] = queue.Queue()  # None: it broke
        self.stderr_tail: deque[str] = deque(maxlen=20)
        self.broken: str | None = None  # why the driver cannot be used any more
        self.on_renewed: Callable[[Renewed, int], None] = lambda message, at: None
        self.on_sent: Callable[[Sent], None] = lambda message: None
        self._write_lock = threading.Lock()
        for target, stream, name in ((self._read, self.process.stdout, "driver-out"),
                                     (self._read_err, self.process.stderr, "driver-err")):
            threading.Thread(target=target, args=(stream,), name=name, daemon=True).start()

    def _read(self, stream: IO[bytes]) -> None:
        for raw in stream:  # ends at EOF (the driver exited or closed stdout)
            received = now()
            line = raw.decode(errors="replace").strip()
            if not line:
                continue
            try:
                message = decode(line)
                if isinstance(message, Renewed):
                    self.on_renewed(message, renewal_sent(message, received))
                    continue
                if isinstance(message, Sent):
                    self.on_sent(message)
                    continue
            except ProtocolError as exc:
                self._break(str(exc))
                return
            if isinstance(message, Log):
                self.stderr_tail.append(message.message)
            else:
                self._replies.put(message)
        code = self.process.wait()
        self._break(f"exited with status {code}")

    def _read_err(self, stream: IO[bytes]) -> None:
        with self._stderr_log() as log:
            for raw in stream:
                line = raw.decode(errors="replace").rstrip()
                if line:
                    self.stderr_tail.append(line)
                    if log is not None:
                        log.write(line + "\n")
                        log.flush()

    @contextlib.contextmanager
    def _stderr_log(self) -> Iterator[IO[str] | None]:
        """Where all of its stderr is kept too, with ``LOCKCHAOS_DRIVER_LOG_DIR`` (else None)."""
        log_dir = os.environ.get("LOCKCHAOS_DRIVER_LOG_DIR")
        if not log_dir:
            yield None
            return
        name = "".join(c if c.isalnum() or c in "-_." else "_" for c in self.label)[:40]
        try:
            log = open(Path(log_dir) / f"{name}-{self.process.pid}.log", "a")  # noqa: SIM115
        except OSError:
            yield None
            return
        with log:
            yield log

    def _break(self, why: str) -> None:
        """Mark the driver unusable (the first reason stays) and wake a waiting ``receive``."""
        if self.broken is None:
            self.broken = why
        self._replies.put(None)

    def describe_failure(self) -> str:
        why = f"driver {self.label} {self.broken or 'failed'}"
        lines = [line.strip() for line in self.stderr_tail if line.strip()]
        # The line that names the error (a stack trace ends with a runtime's banner), else
        # the last one.
        errors = [line for line in lines if "error" in line.lower() or "exception" in line.lower()]
        last = errors[-1] if errors else (lines[-1] if lines else None)
        return f"{why} (stderr: {last[:160]})" if last else why

    def send(self, message: ToDriver) -> None:
        data = encode(message)
        with self._write_lock:
            try:
                self._stdin.write(data)
                self._stdin.flush()
            except (BrokenPipeError, ValueError, OSError):
                self._break(f"exited with status {self.process.poll()}")
                raise DriverBroken(self.describe_failure()) from None

    def receive(self, timeout_s: float) -> FromDriver | None:
        """The next message, or None after ``timeout_s`` of *running* time (time the process
        spent stopped by SIGSTOP does not count: the driver was frozen too); ``DriverBroken``
        once the driver is broken."""
        counted, last = 0.0, time.monotonic()
        for _ in range(int(timeout_s / _SLICE_S) * 4 + 40):  # bounded: stalls are not counted
            try:
                message = self._replies.get(timeout=_SLICE_S)
            except queue.Empty:
                t = time.monotonic()
                step, last = t - last, t
                counted += step if step < _STALL_S else _SLICE_S
                if counted >= timeout_s:
                    return None
                continue
            if message is None:
                self._replies.put(None)  # every later wait sees it too
                raise DriverBroken(self.describe_failure())
            return message
        return None

    def end_input(self) -> None:
        """Close its stdin: a driver exits at end of input (after answering what it read)."""
        with contextlib.suppress(OSError, ValueError):
            self._stdin.close()

    def close(self) -> None:
        """End its input, and kill it if it does not exit."""
        self.end_input()
        try:
            self.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            self.process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=2.0)


__all__ = ["DriverBroken", "DriverProcess", "clock_env"]
