"""The reaper (``chaos.topology.reaper``) on a run directory: a runner killed with SIGKILL
leaves nothing behind — not even a child that does not die with its parent (no
``PDEATHSIG``, stopped) — and a runner that tore down itself dismisses its reaper, which then
touches nothing. The docker provider's containers: tests/docker/test_docker_provider.py."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from chaos.topology.node import wait_until
from chaos.topology.processes import PIDS_FILE, alive, start_time

# A runner: starts a reaper for RUN_DIR, then a child that would outlive it (its own session,
# no parent-death signal, stopped), listed in the run directory as a Supervisor lists its own.
_RUNNER = textwrap.dedent(
    """
    import json, os, signal, subprocess, sys, time
    from pathlib import Path
    from chaos.topology.processes import PIDS_FILE, start_time
    from chaos.topology.reaper import Reaper
    run_dir = Path(sys.argv[1])
    reaper = Reaper(run_dir=run_dir)
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
    os.kill(child.pid, signal.SIGSTOP)
    (run_dir / PIDS_FILE).write_text(f"{child.pid} {start_time(child.pid)}\\n")
    if sys.argv[2] == "dismiss":
        reaper.dismiss()
    print(json.dumps({"child": child.pid}), flush=True)
    time.sleep(60)
    """
)


def _start(run_dir: Path, how: str) -> tuple[subprocess.Popen[str], int]:
    runner = subprocess.Popen([sys.executable, "-c", _RUNNER, str(run_dir), how],
                              stdout=subprocess.PIPE, text=True)
    assert runner.stdout is not None
    return runner, json.loads(runner.stdout.readline())["child"]


def test_a_sigkilled_runner_leaves_no_process_and_no_run_dir(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    runner, child = _start(run_dir, "keep")
    assert alive(child)
    runner.send_signal(signal.SIGKILL)
    runner.wait(timeout=10)
    wait_until(lambda: not run_dir.exists(), "the reaper to remove the run dir", timeout_s=10)
    wait_until(lambda: not alive(child), "the stopped child to die", timeout_s=10)


def test_a_dismissed_reaper_touches_nothing(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    runner, child = _start(run_dir, "dismiss")
    started = start_time(child)
    try:
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=10)
        time.sleep(1)  # a reaper still watching reaps within a poll (0.2 s) of the death
        assert run_dir.exists() and (run_dir / PIDS_FILE).exists()
        assert alive(child) and start_time(child) == started
    finally:
        for sig in (signal.SIGKILL, signal.SIGCONT):
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, sig)
