"""Workers against real Redis: the history they write, pause/crash injection, fencing."""

from __future__ import annotations

import collections
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import pytest

from chaos import history as h
from chaos.lockspec import resolve
from chaos.topology import LocalTopology
from chaos.topology.node import wait_until
from chaos.topology.processes import process_state
from chaos.workload import PausePoint, WorkerPool, WorkloadConfig, run_workload
from chaos.workload.resource import Resource, StaleToken


def _by(events: list[h.Event], **match: str) -> list[h.Event]:
    return [e for e in events if all(getattr(e, k) == v for k, v in match.items())]


@contextmanager
def running(
    topo: LocalTopology, config: WorkloadConfig, path: Path, *, clients: int = 1, seed: int = 1
) -> Iterator[WorkerPool]:
    """A started pool writing to ``path``; stopped (and its history closed) on exit."""
    with h.HistoryWriter(path) as history:
        pool = WorkerPool(topo, config, history, clients=clients, seed=seed)
        pool.start()
        try:
            yield pool
        finally:
            pool.stop()


def test_every_invoke_completes_and_acknowledged_writes_survive(
    single: LocalTopology, tmp_path: Path
) -> None:
    path = tmp_path / "history.jsonl"
    config = WorkloadConfig(lock=resolve("lua"), ttl_ms=500, work_ms=5, duration_s=1.5)
    result = run_workload(single, config, path, clients=4, seed=7)
    events = h.read_history(path)
    assert events[0].f == h.START and events[0].value["lock"] == "lua"
    assert events[-1].f == h.END
    pending: dict[str, h.Event] = {}
    for e in events:
        if e.type == h.INVOKE:
            assert e.process not in pending, f"{e.process} invoked twice without completing"
            pending[e.process] = e
        elif (e.type in (h.OK, h.FAIL, h.INFO) and e.process in pending
              and e.f not in (h.RENEW, h.COMMAND, h.STALL)):
            assert pending.pop(e.process).f == e.f
    assert not pending
    writes = [e.value for e in _by(events, f=h.WRITE, type=h.OK)]
    assert len(writes) == result.completed_ops > 10
    assert sorted(result.final_state) == sorted(writes)  # a correct lock loses nothing
    acquired = _by(events, f=h.ACQUIRE, type=h.OK)
    assert all(e.token and e.token.startswith(e.process + ":") for e in acquired)
    assert all(e.valid_until and e.valid_until > e.t for e in acquired)


def test_pause_point_before_the_release_del_stops_the_whole_process(
    single: LocalTopology, tmp_path: Path
) -> None:
    path = tmp_path / "history.jsonl"
    config = WorkloadConfig(lock=resolve("get-then-del"), ttl_ms=300, work_ms=5, duration_s=3)
    with running(single, config, path, clients=1, seed=1) as pool:
        pool.arm("c1", PausePoint("DEL", action="pause", duration_ms=1000, op="release"))
        wait_until(lambda: bool(_by(h.read_history(path), f=h.PAUSE_POINT)), "pause point")
        # it logs the point, then SIGSTOPs itself: stopped (every thread) within the pause
        wait_until(lambda: process_state(pool.pid("c1")) == "T", "stopped", timeout_s=1)
        wait_until(lambda: process_state(pool.pid("c1")) != "T", "resume", timeout_s=3)
    events = h.read_history(path)
    (point,) = _by(events, f=h.PAUSE_POINT)
    assert point.value == {
        "command": "DEL",
        "action": "pause",
        "op": "release",
        "duration_ms": 1000,
    }
    # the pause sat between the release's GET and its DEL
    release = [e for e in _by(events, f=h.RELEASE, type=h.INVOKE) if e.t < point.t][-1]
    after = [e for e in _by(events, process="c1") if e.t > point.t]
    # every thread stopped: the process's own stall watcher saw the second it did not run
    stall = next(e for e in after if e.f == h.STALL)
    assert stall.t - stall.value["since"] >= 900e6, stall
    resumed = next(e for e in after if e.f != h.STALL)
    assert resumed.f == h.RELEASE and resumed.token == release.token
    assert resumed.t - point.t >= 1000e6


def test_a_paused_client_resumes_by_the_clock_not_at_another_clients_message(
    single: LocalTopology, tmp_path: Path
) -> None:
    """A pause of 300 ms ends 300 ms later, not at the next message another client sends the
    pool: resumed on c2's release, c1's stale DEL would land in the gap before c2's next
    acquire and remove nothing (get-then-del's story would almost never happen). c2 is
    stopped for a second while c1 pauses, so a resume that waited for its next message would
    come at least 0.7 s late; by the clock it is a few ms late (bench/timings.py measures
    how many while c2 keeps writing)."""
    path = tmp_path / "history.jsonl"
    config = WorkloadConfig(lock=resolve("get-then-del"), ttl_ms=200, work_ms=40, duration_s=6)
    with running(single, config, path, clients=2, seed=1) as pool:
        pool.arm("c1", PausePoint("DEL", action="pause", duration_ms=300, op="release"))
        wait_until(lambda: bool(_by(h.read_history(path), f=h.PAUSE_POINT)), "pause point")
        pool.pause("c2", 1000)

        def resumed() -> bool:
            events = h.read_history(path)
            (point,) = _by(events, f=h.PAUSE_POINT)
            return any(e.t > point.t for e in _by(events, process="c1", f=h.RELEASE))

        wait_until(resumed, "the pause to end", timeout_s=3)
    events = h.read_history(path)
    (point,) = _by(events, f=h.PAUSE_POINT)
    after = next(e for e in _by(events, process="c1", f=h.RELEASE) if e.t > point.t)
    late_ms = (after.t - point.t) / 1e6 - 300
    assert 0 <= late_ms < 500, late_ms


def test_crash_between_setnx_and_expire_leaves_a_key_without_ttl_and_a_fresh_client(
    single: LocalTopology, tmp_path: Path
) -> None:
    path = tmp_path / "history.jsonl"
    config = WorkloadConfig(lock=resolve("setnx-expire"), ttl_ms=300, work_ms=5, duration_s=2)
    with running(single, config, path, clients=1, seed=1) as pool:
        first_pid = pool.pid("c1")
        pool.arm("c1", PausePoint("*", action="crash", op="acquire", nth=2))
        wait_until(lambda: pool.workers["c1"].spec.incarnation == 1, "replacement")
        assert pool.pid("c1") != first_pid
    assert single.nodes[0].client().pttl(config.lock_name) == -1  # the deadlock key
    events = h.read_history(path)
    crash = _by(events, f=h.CRASH)
    assert len(crash) == 1 and crash[0].process == "c1"
    last_acquire = [e for e in _by(events, f=h.ACQUIRE) if e.t < crash[0].t][-1]
    assert last_acquire.type == h.INVOKE  # died inside the acquire, before it completed


def test_pausing_a_watchdog_client_stops_its_renewals(
    single: LocalTopology, tmp_path: Path
) -> None:
    path = tmp_path / "history.jsonl"
    config = WorkloadConfig(lock=resolve("watchdog"), ttl_ms=150, work_ms=600, duration_s=3)
    with running(single, config, path, clients=1, seed=1) as pool:
        wait_until(lambda: len(_by(h.read_history(path), f=h.RENEW)) >= 2, "renewals")
        pool.pause("c1")
        wait_until(lambda: process_state(pool.pid("c1")) == "T", "stopped", timeout_s=2)
        paused_at = h.now()
        time.sleep(0.4)  # stopped for more than two TTLs: a watchdog alive would renew twice
        resumed_at = h.now()
        pool.resume("c1")
    renewals = [e.t for e in _by(h.read_history(path), f=h.RENEW)]
    assert not [t for t in renewals if paused_at < t < resumed_at]


def test_fenced_resource_rejects_lower_tokens_for_reads_and_writes(single: LocalTopology) -> None:
    resource = Resource(single.resource.client())
    resource.reset()
    resource.write(["a"], fence=5)
    with pytest.raises(StaleToken):
        resource.read(fence=4)
    with pytest.raises(StaleToken):
        resource.write(["stale"], fence=3)
    assert resource.read(fence=5) == ["a"]
    resource.write(["a", "b"], fence=6)
    assert resource.read() == ["a", "b"]


def test_a_paused_stale_fenced_holder_cannot_overwrite(
    single: LocalTopology, tmp_path: Path
) -> None:
    path = tmp_path / "history.jsonl"
    config = WorkloadConfig(lock=resolve("fenced"), ttl_ms=100, work_ms=20, duration_s=2.5)
    with running(single, config, path, clients=3, seed=3) as pool:
        for _ in range(4):
            wait_until(lambda: bool(pool.holders()), "a holder", timeout_s=2)
            holder, paused_at = pool.holders()[0], h.now()
            pool.pause(holder, 300)  # three TTLs: others take the lock
            wait_until(partial(_went_on, path, holder, paused_at), "the holder to go on",
                       timeout_s=3)
    events = h.read_history(path)
    rejected = [e for e in events if e.error == h.STALE_TOKEN]
    assert rejected, "a holder paused past its lease must be fenced off"
    kinds = collections.Counter(e.f for e in rejected)
    assert set(kinds) <= {h.READ, h.WRITE}
    final = Resource(single.resource.client()).read()
    assert sorted(final) == sorted(e.value for e in _by(events, f=h.WRITE, type=h.OK))


def _went_on(path: Path, process: str, since: int) -> bool:
    """``process`` recorded something after ``since``: a pause of it has ended."""
    return any(e.process == process and e.t > since for e in h.read_history(path))


def test_indeterminate_outcomes_are_recorded_not_fatal(
    single: LocalTopology, tmp_path: Path
) -> None:
    path = tmp_path / "history.jsonl"
    config = WorkloadConfig(lock=resolve("lua"), ttl_ms=200, work_ms=5, duration_s=1.5)
    with running(single, config, path, clients=1, seed=1) as pool:
        wait_until(lambda: bool(_by(h.read_history(path), f=h.ACQUIRE, type=h.OK)), "locking")
        single.toxiproxy.disable(single.client_links("c1")[0].name)
        wait_until(lambda: any(e.error for e in _by(h.read_history(path), type=h.INFO)),
                   "an indeterminate outcome")
        single.toxiproxy.enable(single.client_links("c1")[0].name)
        assert pool.wait(5)
    events = h.read_history(path)
    infos = [e for e in events if e.type == h.INFO and e.error]
    assert infos and all("Error" in (e.error or "") for e in infos)
    assert not any(e.bug or e.traceback for e in infos)  # a cut link is a fault, not a lock bug
    assert pool.workers["c1"].spec.incarnation == 0  # the same process carried on
    assert _by(events, f=h.ACQUIRE, type=h.OK)[-1].t > infos[-1].t  # and locked again after


def test_a_nested_hold_works_in_the_outer_level_before_and_after_the_inner_one(
    single: LocalTopology, tmp_path: Path
) -> None:
    """With ``nest_depth`` 2 the outer level holds alone (a quarter of the work) before the
    nested acquire and after the inner release: its release is not the inner one's tail."""
    path = tmp_path / "history.jsonl"
    config = WorkloadConfig(lock=resolve("reentrant"), ttl_ms=500, work_ms=80, duration_s=1.0,
                            nest_depth=2)
    run_workload(single, config, path, clients=1, seed=3)
    # Its operations only: an info between two (a command seen, a stall the worker noticed
    # on a loaded machine) is not where a gap starts.
    events = [e for e in _by(h.read_history(path), process="c1") if e.type != h.INFO]
    granted, alone_before, alone_after = 0, [], []
    for before, event, after in zip(events, events[1:], events[2:], strict=False):
        nested = isinstance(event.value, dict) and event.value.get("depth") == 2
        if event.f == h.ACQUIRE and event.type == h.INVOKE and nested:
            alone_before.append(event.t - before.t)  # since the outer grant
            granted += after.f == h.ACQUIRE and after.type == h.OK
        if (before.f, before.type, event.f, event.type) == (h.RELEASE, h.OK, h.RELEASE, h.INVOKE):
            alone_after.append(event.t - before.t)  # the outer release, since the inner one
    quarter_ns = 80 / 4 * 1e6 * 0.9
    assert granted >= 3 and len(alone_after) >= 3
    assert all(gap >= quarter_ns for gap in alone_before + alone_after)
