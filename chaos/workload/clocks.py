"""Client processes whose wall clock can be moved (the ``client-clock`` fault).

Seed 004's ``wrongGetLock2`` judges expiry by the client's own ``System.currentTimeMillis()``,
and the post's first named flaw is that every client's clock must agree. Testing that needs a
client whose ``time.time()`` is wrong while everything else about it is real: the lock must
read the real ``time.time()``, as the post's code does, not a hook the harness hands it.

So such a client runs under libfaketime, exactly as the data nodes do
(``chaos.topology.node``): ``LD_PRELOAD`` + ``FAKETIME_TIMESTAMP_FILE`` (one file per client,
re-read on every clock read: ``FAKETIME_NO_CACHE=1``) + ``FAKETIME_DONT_FAKE_MONOTONIC=1``, so
its wall clock moves when the file is rewritten and its monotonic clock — the history's clock —
stays true (the checker is unaffected).

``LD_PRELOAD`` only takes effect when a program is executed, and the pool forks its workers
from the (unfaked) harness. A run that asks for faked client clocks therefore starts its
workers with multiprocessing's *spawn* method instead, through a small per-client wrapper
script that sets the environment and ``exec``s this Python (``child_main``): the same
``worker_main``, the same pickled arguments, a few hundred ms slower to start. Runs without
a ``client-clock`` fault never come here.

One libfaketime 0.9.10 bug needs working around: with ``FAKETIME_DONT_FAKE_MONOTONIC=1`` it
fails ``clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`` with ``EINVAL``, and that is how
Python 3.11's ``time.sleep`` sleeps. Faking the monotonic clock too would shift the history's
clock, so instead such a worker's ``time.sleep`` waits in ``select`` (same duration, measured
on the monotonic clock). The wall clock — ``time.time()``, what the lock reads — is untouched.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import select
import shlex
import sys
import threading
import time
from multiprocessing import spawn
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import SupportsIndex

from chaos.topology import binaries

SPAWN = mp.get_context("spawn")
_executable_lock = threading.Lock()  # spawn's executable is process-wide: one start at a time


def clock_file(directory: str | os.PathLike[str], client: str) -> Path:
    return Path(directory) / f"{client}.faketime"


def set_offset(directory: str | os.PathLike[str], client: str, offset_ms: float) -> None:
    """Move ``client``'s wall clock to true time + ``offset_ms`` (negative: into the past).

    Atomic (a rename), so the client never reads half a file; takes effect on its next read of
    the wall clock."""
    path = clock_file(directory, client)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"{offset_ms / 1000:+.3f}\n")
    os.replace(tmp, path)


def offset_ms(directory: str | os.PathLike[str], client: str) -> float:
    """The offset ``client``'s clock file holds now (0 when it has none yet)."""
    try:
        return float(clock_file(directory, client).read_text()) * 1000
    except (OSError, ValueError):
        return 0.0


def faked_env(directory: str | os.PathLike[str], client: str) -> dict[str, str]:
    """The environment under which a program's wall clock is ``client``'s clock file (made at
    offset 0 if it has none yet) and its monotonic clock stays true; a driver started by the
    client inherits it."""
    if not clock_file(directory, client).exists():
        set_offset(directory, client, 0.0)
    return {
        "LD_PRELOAD": binaries.libfaketime(),
        "FAKETIME_TIMESTAMP_FILE": str(clock_file(directory, client).resolve()),
        "FAKETIME_NO_CACHE": "1",
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        "FAKETIME_FORCE_MONOTONIC_FIX": "0",
    }


def _wrapper(directory: str | os.PathLike[str], client: str) -> Path:
    """The executable spawn runs for ``client``: sets libfaketime's environment, execs Python."""
    path = Path(directory) / f"{client}.python"
    env = faked_env(directory, client)
    assignments = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    boot = "from chaos.workload.clocks import child_main; child_main()"
    script = (
        f"#!/bin/sh\nexport {assignments}\n"
        f'exec {shlex.quote(sys.executable)} -c {shlex.quote(boot)} "$@"\n'
    )
    if not path.exists() or path.read_text() != script:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(script)
        tmp.chmod(0o755)
        os.replace(tmp, path)
    return path


def start(process: BaseProcess, directory: str | os.PathLike[str], client: str) -> None:
    """Start ``process`` (made by ``SPAWN``) with ``client``'s fakeable clock."""
    wrapper = _wrapper(directory, client)
    with _executable_lock:
        previous = spawn.get_executable()
        spawn.set_executable(str(wrapper))
        try:
            process.start()
        finally:
            spawn.set_executable(previous)


def _sleep(seconds: float | SupportsIndex) -> None:
    """``time.sleep`` without ``clock_nanosleep`` (see the module docstring)."""
    length = float(seconds)
    if length < 0:
        raise ValueError("sleep length must be non-negative")
    deadline = time.monotonic() + length
    while (left := deadline - time.monotonic()) > 0:
        select.select([], [], [], left)


def child_main() -> None:
    """What the wrapper runs instead of spawn's own ``-c`` program (passed on as arguments):
    that program, without re-importing the harness's ``__main__`` first — the lockchaos
    command, pytest or a bench script, seconds of imports per client on a loaded machine,
    and nothing a worker needs (its target and arguments are pickled by module name) — and
    with a ``time.sleep`` that does not trip over libfaketime."""
    args = sys.argv[1:]  # [interpreter flags…, "-c", program, "--multiprocessing-fork"?]
    program = args[args.index("-c") + 1]  # spawn_main, or multiprocessing's resource tracker
    sys.argv = [sys.argv[0], *args[args.index("-c") + 2:]]
    spawn._fixup_main_from_path = lambda path: None  # type: ignore[attr-defined]
    spawn._fixup_main_from_name = lambda name: None  # type: ignore[attr-defined]
    time.sleep = _sleep
    exec(program)
