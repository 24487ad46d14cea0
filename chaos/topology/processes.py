"""Child processes that cannot outlive the runner.

Two independent guarantees:

* every child is started with ``PR_SET_PDEATHSIG = SIGKILL`` in its own session, so the
  kernel kills it the moment the runner dies, however it dies (SIGKILL included) — and a
  Ctrl-C at the terminal reaches only the runner, which tears down in order;
* the topology's reaper (``chaos.topology.reaper``) watches the runner and, when it is gone,
  kills whatever pid is still listed in the run directory (``PIDS_FILE``, written here) and
  deletes the directory, so even SIGKILL leaves no temp dir behind.

``PDEATHSIG`` fires when the *thread* that forked the child exits, so a ``Supervisor`` forks
every child from one thread of its own, which lives until it is closed: a node that the
nemesis thread restarted (``crash-restart``) used to die with that thread, as soon as the
schedule's last fault was played.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None

PIDS_FILE = "pids"


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """Ask the kernel to send ``sig`` to this process when its parent thread exits."""
    if _libc is not None:
        _libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)


def _stat_fields(pid: int) -> list[str]:
    """The fields of /proc/PID/stat after the command name (which may hold spaces and
    parentheses: it ends at the last ``)``); [] when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    return stat.rsplit(")", 1)[1].split()


def start_time(pid: int) -> str:
    """The kernel's start time of ``pid`` (field 22 of /proc/PID/stat): with the pid, it
    names one process for good, even after the pid is recycled."""
    fields = _stat_fields(pid)
    return fields[19] if fields else ""


def process_state(pid: int) -> str:
    """The state letter of ``pid`` (field 3 of /proc/PID/stat: ``R``, ``S``, ``T`` stopped by
    a signal, ``Z`` a zombie…); "" when there is no such process."""
    fields = _stat_fields(pid)
    return fields[0] if fields else ""


def alive(pid: int) -> bool:
    """``pid`` names a process that has not exited (a zombie has: it only awaits its reaping)."""
    return process_state(pid) not in ("", "Z")


def _child_setup() -> None:
    die_with_parent(signal.SIGKILL)


# util-linux's setpriv sets the parent-death signal and execs the program, which lets Python
# spawn with vfork: ~1 ms a child instead of ~13 ms for a full fork with a preexec_fn. That
# speed matters: a node restart must fit inside a holder's critical section.
_SETPRIV = shutil.which("setpriv")


class Supervisor:
    """Starts children for one run directory and records their pids for its reaper
    (``PIDS_FILE``); forks them all from its own thread (``PDEATHSIG``: a child lives as
    long as that thread)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._children: list[subprocess.Popen[bytes]] = []
        self._forker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="supervisor")

    def spawn(
        self,
        argv: Sequence[str],
        *,
        log: Path,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.Popen[bytes]:
        return self._forker.submit(self._spawn, argv, log, env).result()

    def _spawn(self, argv: Sequence[str], log: Path,
               env: Mapping[str, str] | None) -> subprocess.Popen[bytes]:
        prefix = [_SETPRIV, "--pdeathsig", "KILL", "--"] if _SETPRIV else []
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                [*prefix, *argv],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **env} if env else None,
                preexec_fn=None if _SETPRIV else _child_setup,
                start_new_session=True,
            )
        self._children.append(proc)
        with open(self.run_dir / PIDS_FILE, "a") as fh:
            fh.write(f"{proc.pid} {start_time(proc.pid)}\n")
        return proc

    def stop_all(self) -> None:
        """Kill every child still running and wait for it (SIGCONT first: a stopped process
        only dies once it runs)."""
        for proc in self._children:
            if proc.poll() is None:
                for sig in (signal.SIGKILL, signal.SIGCONT):
                    try:
                        os.kill(proc.pid, sig)
                    except ProcessLookupError:
                        break
        for proc in self._children:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        self._children.clear()

    def close(self) -> None:
        """Stop children and the thread that forked them."""
        self.stop_all()
        self._forker.shutdown()
