"""Step-driven clients on real Redis: one operation per command, recorded like the autonomous
workers' ones, and an operation stopped at a pause point stays stopped until resumed."""

from __future__ import annotations

from pathlib import Path

from chaos import history as h
from chaos.lockspec import resolve
from chaos.topology import LocalTopology
from chaos.workload import PausePoint, WorkloadConfig
from chaos.workload.stepper import NOT_HOLDING, STOPPED, StepperPool

KEY = WorkloadConfig.lock_name


def test_a_release_stopped_before_its_del_leaves_the_key_until_resumed(
    single: LocalTopology, tmp_path: Path
) -> None:
    path = tmp_path / "history.jsonl"
    config = WorkloadConfig(lock=resolve("get-then-del"), ttl_ms=2000, work_ms=0, duration_s=20.0)
    with h.HistoryWriter(path) as history, single.nodes[0].client() as redis:
        pool = StepperPool(single, config, history, clients=2, seed=1)
        pool.start()
        try:
            assert pool.step("c1", "acquire") == "granted"
            assert pool.step("c2", "acquire") == "refused"
            assert pool.step("c2", "release") == NOT_HOLDING
            assert pool.step("c1", "write") == "done"
            pool.arm("c1", PausePoint("DEL", op="release"))
            assert pool.step("c1", "release") == STOPPED
            assert pool.in_flight == {"c1": "release"}
            assert redis.get(KEY) is not None  # GET done, DEL not sent: the window is open
            pool.resume("c1")
            assert pool.finish("c1") == "release returned true"
            assert redis.get(KEY) is None
            assert pool.finish("c1") is None  # nothing in flight any more
        finally:
            pool.stop()
    events = h.read_history(path)
    # What the lock is and sends (asserted below), and how long the process did not run (a
    # stall: the stop, if it lasted 50 ms).
    said = (h.READ, h.COMMAND, h.LOCK_READY, h.STALL)
    c1 = [(e.type, e.f) for e in events if e.process == "c1" and e.f not in said]
    assert c1 == [
        (h.INVOKE, h.ACQUIRE), (h.OK, h.ACQUIRE),
        (h.INVOKE, h.WRITE), (h.OK, h.WRITE),
        (h.INVOKE, h.RELEASE), (h.INFO, h.PAUSE_POINT), (h.OK, h.RELEASE),
    ]  # fmt: skip
    assert [e.type for e in events if e.process == "c2" and e.f not in said] == [h.INVOKE, h.FAIL]
    # The lock's surface, as each client first sent it: 004's GET, then DEL; each again once
    # an operation that sent it succeeded.
    sent = [(e.value["op"], e.value["command"], e.value.get("ok", False)) for e in events
            if e.process == "c1" and e.f == h.COMMAND]
    assert sent == [("acquire", "SET", False), ("acquire", "SET", True),
                    ("release", "GET", False), ("release", "DEL", False),
                    ("release", "GET", True), ("release", "DEL", True)]
    assert [e.value for e in events if e.f == h.LOCK_READY] == [{"extend": False}] * 2
