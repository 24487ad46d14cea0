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


def main(argv: list[str]) -> int:
    parent, run_dir = int(argv[0]), Path(argv[1])
    dismissed = False

    def dismiss(*_: object) -> None:
        nonlocal dismissed
        dismissed = True

    signal.signal(signal.SIGUSR1, dismiss)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Bounded: a run directory older than a day is abandoned, not watched forever.
    deadline = time.monotonic() + 86_400
    while not dismissed and time.monotonic() < deadline:
        if os.getppid() != parent:
            reap(run_dir)
            return 0
        time.sleep(POLL_S)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
