"""Cleans up after a runner that died without tearing down (``python -m chaos.topology.reaper``).

Usage: ``reaper PARENT_PID RUN_DIR``. It polls the parent; once the parent is gone it kills
every process listed in ``RUN_DIR/pids`` (pid and kernel start time, so a recycled pid is
never hit) and removes ``RUN_DIR``. SIGUSR1 dismisses it: the runner
cleaned up itself.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path

from chaos.topology.processes import start_time

POLL_S = 0.2


def reap(run_dir: Path) -> None:
    pids_file = run_dir / "pids"
    lines = pids_file.read_text().splitlines() if pids_file.exists() else []
    for line in lines:
        pid_text, _, started = line.partition(" ")
        pid = int(pid_text)
        if started and start_time(pid) == started:
            for sig in (signal.SIGKILL, signal.SIGCONT):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    break
    shutil.rmtree(run_dir, ignore_errors=True)


class _Dismissed(Exception):
    """SIGUSR1 arrived: raised from the handler so it ends the poll's sleep at once (a
    handler that returns lets ``time.sleep`` sleep on: PEP 475), and the runner's wait for
    this process takes milliseconds, not up to a poll interval, per topology."""


def _dismiss(*_: object) -> None:
    raise _Dismissed


def parent_died(parent: int, max_s: float, poll_s: float = POLL_S) -> bool:
    """Watch ``parent`` (this process's parent when started): True once it is gone; False
    when SIGUSR1 dismissed the watch (the runner tore down itself) or ``max_s`` passed. Every
    reaper of lockchaos (this one, the docker provider's) waits this way."""
    signal.signal(signal.SIGUSR1, _dismiss)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    deadline = time.monotonic() + max_s
    try:
        while time.monotonic() < deadline:
            if os.getppid() != parent:
                return True
            time.sleep(poll_s)
    except _Dismissed:
        pass
    return False


def main(argv: list[str]) -> int:
    parent, run_dir = int(argv[0]), Path(argv[1])
    # Bounded: a run directory older than a day is abandoned, not watched forever.
    if parent_died(parent, 86_400):
        reap(run_dir)
    return 0


if __name__ == "__main__":
    # No interpreter shutdown (nothing to flush): with chaos.topology loaded it takes 0.15 s,
    # which the runner's teardown, waiting for its dismissed reaper, paid per topology.
    os._exit(main(sys.argv[1:]))
