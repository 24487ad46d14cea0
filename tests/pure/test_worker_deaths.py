"""A worker's exit code as the pool's monitor reads it when another thread reaped the worker
first (``chaos.workload.pool.exitcode_of``): multiprocessing's ``waitpid`` fails in the thread
that lost, and ``exitcode`` reads None until the winner stored the code. A lock factory that
failed in every client once counted one of them as a crash (``exitcode: null``)."""

from __future__ import annotations

import multiprocessing as mp
import os
import threading

from chaos.workload.pool import exitcode_of


def _exit_7() -> None:
    os._exit(7)


def test_the_exit_code_is_read_even_while_another_thread_is_storing_it() -> None:
    process = mp.get_context("fork").Process(target=_exit_7)
    process.start()
    _, status = os.waitpid(process.pid or 0, 0)  # the other thread's waitpid won the race ...
    popen = process._popen  # type: ignore[attr-defined]

    def store() -> None:  # ... and stores the code a moment later
        popen.returncode = os.waitstatus_to_exitcode(status)

    later = threading.Timer(0.05, store)
    later.start()
    try:
        assert exitcode_of(process) == 7
    finally:
        later.join()
