"""The stall watcher (chaos/workload/stalls.py) records a stretch the process did not run even
when the run ends the moment the process runs again."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from chaos import history as h
from chaos.workload import stalls


class _StoppedThenTold(threading.Event):
    """A wait that the process's stop stretched (SIGSTOP, 200 ms) and that a stop ended: the
    harness told the process to stop the moment it was continued."""

    def wait(self, timeout: float | None = None) -> bool:
        time.sleep(0.2)
        self.set()
        return True


def test_a_stall_ended_by_the_runs_stop_is_still_recorded(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    with h.HistoryWriter(path) as history:
        thread = stalls.watch(history, "c1", _StoppedThenTold(), h.now() + 10**9)
        thread.join(timeout=5)
    assert not thread.is_alive()
    (stall,) = [e for e in h.read_history(path) if e.f == h.STALL]
    assert stall.process == "c1" and stall.t - stall.value["since"] >= 150e6


def test_a_prompt_stop_records_no_stall(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    stopping = threading.Event()
    stopping.set()
    with h.HistoryWriter(path) as history:
        stalls.watch(history, "c1", stopping, h.now() + 10**9).join(timeout=5)
    assert not [e for e in h.read_history(path) if e.f == h.STALL]


def test_the_watcher_ends_with_the_block_it_watches(tmp_path: Path) -> None:
    """A worker whose run returns without setting its stop (explore's) does not keep the
    process one more second for the watcher's sake."""
    with h.HistoryWriter(tmp_path / "history.jsonl") as history:
        stopping = threading.Event()
        with stalls.watching(history, "c1", stopping, h.now() + 10**10) as thread:
            pass
        assert stopping.is_set() and not thread.is_alive()
