"""What a topology leaves behind if its runner dies without tearing down (SIGKILL included),
and the one process that removes it: a ``Reaper``.

Each provider's topology starts one, naming what it must reap:

* ``run_dir``: the processes listed in ``RUN_DIR/pids`` (pid and kernel start time, written by
  the local provider's ``Supervisor``: a recycled pid is never hit), then the directory;
* ``containers``: the containers (with their anonymous volumes) and the network labelled
  ``RUN_LABEL=<run id>`` (the docker provider's), twice, a few seconds apart, for a
  ``docker compose up`` the dead runner had under way.

The reaper runs in a session of its own (a Ctrl-C at the terminal reaches only the runner,
which tears down in order) and polls its parent; once the parent is gone it reaps. When the
runner tore down itself, ``Reaper.dismiss`` (SIGUSR1) ends it with nothing to do. It watches
for a day at most: an older topology is abandoned, not watched forever.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from chaos.topology.processes import PIDS_FILE, start_time

RUN_LABEL = "org.lockchaos.run"  # on every container and the network: the run that owns them
POLL_S = 0.2
MAX_S = 86_400  # a reaper watches one runner for a day at most
SECOND_PASS_S = 5.0  # containers: the second pass, for a `compose up` the runner left running
DISMISS_TIMEOUT_S = 10

# How the reaper starts: not ``-m`` (``chaos.topology`` imports this module, and runpy would
# warn that it is already loaded), and no interpreter shutdown, which the runner's wait for a
# dismissed reaper paid (0.15 s per topology).
_MAIN = "import os, sys; from chaos.topology.reaper import main; os._exit(main(sys.argv[1:]))"


class Reaper:
    """The reaper of one topology: what it reaps is ``run_dir``'s processes and directory,
    ``containers``' (a docker run id) containers and network, or both."""

    def __init__(self, *, run_dir: Path | None = None, containers: str | None = None) -> None:
        what = [*(["--run-dir", str(run_dir)] if run_dir else []),
                *(["--containers", containers] if containers else [])]
        self._process = subprocess.Popen(
            [sys.executable, "-c", _MAIN, str(os.getpid()), *what],
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )

    def dismiss(self) -> None:
        """The runner tore down itself: end the reaper (it would find nothing to do)."""
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGUSR1)
            try:
                self._process.wait(timeout=DISMISS_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=DISMISS_TIMEOUT_S)


def reap_run_dir(run_dir: Path) -> None:
    """Kill every process listed in ``run_dir``'s pids file that is still the one started
    (SIGCONT after SIGKILL: a stopped process only dies once it runs), then remove the
    directory."""
    pids_file = run_dir / PIDS_FILE
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


NETWORK_GONE_S = 10.0  # at most, for a network's stale endpoints to go (``_remove_network``)
NETWORK_RETRY_S = 0.25


def remove_containers(run_id: str, client: Any = None) -> None:
    """Remove every container (with its anonymous volumes) and network labelled ``run_id``
    (``client``: a Docker SDK client, else one from the environment)."""
    import docker  # here, not at the top: the SDK takes 0.2 s to import (chaos.topology.engine)

    client = client or docker.from_env(timeout=60)
    selector = {"label": f"{RUN_LABEL}={run_id}"}
    for container in client.containers.list(all=True, filters=selector):
        with contextlib.suppress(docker.errors.NotFound):
            container.remove(force=True, v=True)
    for network in client.networks.list(filters=selector):
        _remove_network(network, docker.errors)


def _remove_network(network: Any, errors: Any) -> None:
    """Remove ``network``. Docker can list an endpoint of a container it has just removed
    for a moment ("has active endpoints", moby/moby#17217: a fresh clone's CI lost a compare
    job's teardown to it): what the network still lists is disconnected by force and the
    removal tried again, for ``NETWORK_GONE_S`` at most."""
    deadline = time.monotonic() + NETWORK_GONE_S
    while True:
        try:
            network.remove()
            return
        except errors.NotFound:
            return
        except errors.APIError as exc:
            if "active endpoints" not in str(exc) or time.monotonic() > deadline:
                raise
        with contextlib.suppress(errors.APIError):
            network.reload()
            for endpoint in list(network.attrs.get("Containers") or {}):
                with contextlib.suppress(errors.APIError):
                    network.disconnect(endpoint, force=True)
        time.sleep(NETWORK_RETRY_S)


class _Dismissed(Exception):
    """SIGUSR1 arrived: raised from the handler so it ends the poll's sleep at once (a
    handler that returns lets ``time.sleep`` sleep on: PEP 475), and the runner's wait for
    this process takes milliseconds, not up to a poll interval, per topology."""


def _dismiss(*_: object) -> None:
    raise _Dismissed


def parent_died(parent: int, max_s: float, poll_s: float = POLL_S) -> bool:
    """Watch ``parent`` (this process's parent when started): True once it is gone; False
    when SIGUSR1 dismissed the watch (the runner tore down itself) or ``max_s`` passed."""
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
    """``PARENT_PID [--run-dir DIR] [--containers RUN_ID]`` (see ``Reaper``)."""
    parser = argparse.ArgumentParser(prog="chaos.topology.reaper")
    parser.add_argument("parent", type=int)
    parser.add_argument("--run-dir", type=Path)
    parser.add_argument("--containers")
    args = parser.parse_args(argv)
    if parent_died(args.parent, MAX_S):
        if args.run_dir is not None:
            reap_run_dir(args.run_dir)
        if args.containers is not None:
            remove_containers(args.containers)
            time.sleep(SECOND_PASS_S)
            remove_containers(args.containers)
    return 0
