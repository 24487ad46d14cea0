"""A network fault had an effect only when a command of the client it hit crossed a faulted
link while it was on (issue 20): the client's own connections report it (a watch, armed by
the fault and ended by its heal), and a firing on a client that sent nothing meanwhile does
nothing to the lock, however long that client held it.

Real Redis behind Toxiproxy; each fault is fired by hand (``chaos.nemesis.record``, as the
scheduled nemesis and the explorer fire one) at a moment the test chooses.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from chaos import history as h
from chaos.checker import check_file
from chaos.lockspec import resolve
from chaos.nemesis import record
from chaos.nemesis.fault import Target
from chaos.topology import LocalTopology
from chaos.topology.node import wait_until
from chaos.workload import WorkloadConfig, run_workload
from chaos.workload.harness import WorkloadEnv
from chaos.workload.inject import AWAITED, admitted

ON_S = 0.6  # how long each fault stays on


class ByHand:
    """A nemesis that fires one fault at ``c1`` once ``c1`` holds the lock, keeps it on for
    ``ON_S`` and heals it; with ``idle``, ``c1`` is stopped (SIGSTOP) before the fault goes on
    and resumed only after the heal, so it sends nothing while the fault is on."""

    def __init__(self, fault: str, params: dict[str, object], idle: bool = False) -> None:
        self.fault, self.params, self.idle = fault, params, idle

    def start(self, env: WorkloadEnv) -> None:
        wait_until(lambda: "c1" in env.pool.holders(), "c1 holds the lock", timeout_s=5)
        if self.idle:
            env.pool.pause("c1")
        nodes = [0] if self.fault == "partition" else []
        _, heal = record.fire(env, "f1", self.fault, self.params,
                              lambda: Target(client="c1", nodes=nodes))
        time.sleep(ON_S)
        record.heal(env, "f1", heal)
        if self.idle:
            env.pool.resume("c1")

    def stop(self) -> None:
        """Healed in ``start``."""


FAULT_PARAMS: dict[str, dict[str, object]] = {
    "latency": {"latency_ms": 50, "jitter_ms": 0, "stream": "downstream"},
    "partition": {"scope": "one"},
    "reset": {"toxicity": 1.0},
    "reply-lost": {},
}

# Whether each fault holds replies (``Watch.holds_replies``: a downstream latency, a cut
# link, a lost reply): then its effect may also be a command sent just before it went on
# whose reply was awaited while it was. Which crossing comes first is timing, so the test
# takes any its watch admits (``admitted``: a command sent, a connection refused…).
HOLDS_REPLIES = {"latency": True, "partition": True, "reset": False, "reply-lost": True}


def _run(single: LocalTopology, path: Path, nemesis: ByHand) -> list[h.Event]:
    # One client: a holder stopped past its TTL meets no one, and nothing but the fault's
    # evidence decides the verdict; a release the fault broke frees the key within a TTL.
    config = WorkloadConfig(lock=resolve("lua"), ttl_ms=300, work_ms=20, duration_s=3)
    run_workload(single, config, path, clients=1, seed=1, nemesis=nemesis,
                 params={"faults": [nemesis.fault]})
    return h.read_history(path)


@pytest.mark.parametrize("fault", sorted(FAULT_PARAMS))
def test_a_network_fault_under_a_client_sending_commands_reports_its_effect(
    single: LocalTopology, tmp_path: Path, fault: str
) -> None:
    path = tmp_path / "history.jsonl"
    events = _run(single, path, ByHand(fault, {"duration_ms": 600, **FAULT_PARAMS[fault]}))
    (start,) = [e for e in events if e.f == h.START and e.process == h.NEMESIS]
    assert start.value["evidence"] == h.REPORTED
    (stop,) = [e for e in events if e.f == h.STOP and e.process == h.NEMESIS]
    effects = [e for e in events if e.f == h.EFFECT]
    assert [e.value["id"] for e in effects] == ["f1"]  # one, however many commands crossed
    (effect,) = effects
    assert effect.process == "c1" and start.t < effect.t < stop.t
    assert effect.value["how"] in admitted(HOLDS_REPLIES[fault], everywhere=True), effect.value
    what = effect.value["what"]
    assert what.startswith("c1") and f" while {fault} was on" in what, effect.value
    verdict = check_file(path)
    assert verdict.coverage[fault].effective == 1, verdict.coverage
    assert verdict.verdict == "ok", verdict.inconclusive_reasons


def test_a_latency_fault_on_a_holder_that_sends_nothing_does_nothing(
    single: LocalTopology, tmp_path: Path
) -> None:
    """c1 holds the lock all the time the fault is on (activity evidence counted that), but
    it is stopped and sends nothing: no effect, and the run is inconclusive for the fault.
    Resumed after the heal, its first commands cross the healed link while its pipe may
    still carry the watch: they are not the fault's effect either."""
    path = tmp_path / "history.jsonl"
    params = {"duration_ms": 600, **FAULT_PARAMS["latency"]}
    events = _run(single, path, ByHand("latency", params, idle=True))
    (start,) = [e for e in events if e.f == h.START and e.process == h.NEMESIS]
    assert start.value["evidence"] == h.REPORTED
    assert not [e for e in events if e.f == h.EFFECT]
    verdict = check_file(path)
    assert verdict.coverage["latency"].fired == 1
    assert verdict.coverage["latency"].effective == 0, verdict.coverage
    assert verdict.verdict == "inconclusive", verdict.verdict
    (reason,) = verdict.inconclusive_reasons
    assert reason.startswith("latency fired once and did nothing to the lock: no client it hit "
                             "sent a command over a link it disturbed"), reason
    assert sum(1 for e in events if e.f == h.ACQUIRE and e.type == h.OK) >= 2  # it ran


class WhileAwaiting:
    """Fires ``reply-lost`` at ``c1`` ``AFTER_S`` after its first acquire sent its BLPOP
    (``slow_reply_lock``: the server holds the reply half a second), so the command left
    before the fault was on, and its reply never comes back while it is. (Timed from the
    command's own event, not from the acquire's start: on a loaded machine a client stalled
    past a fixed delay would send its BLPOP after the fault went on, another true effect.)"""

    AFTER_S = 0.1
    fault = "reply-lost"

    def start(self, env: WorkloadEnv) -> None:
        wait_until(lambda: any(e.f == h.COMMAND and (e.value or {}).get("command") == "BLPOP"
                               for e in h.read_history(env.history.path)),
                   "c1's BLPOP", timeout_s=5)
        time.sleep(self.AFTER_S)
        _, heal = record.fire(env, "f1", self.fault, {"duration_ms": 600},
                              lambda: Target(client="c1"))
        time.sleep(ON_S)
        record.heal(env, "f1", heal)

    def stop(self) -> None:
        """Healed in ``start``."""


def test_a_reply_lost_while_it_was_awaited_is_the_faults_effect(
    single: LocalTopology, tmp_path: Path
) -> None:
    """The first command a reply-lost met had often left a millisecond before its watch went
    live (an audit of lua-extend: 'no effect' in 1 seed of 10, its holder's acquire stuck the
    whole time without its reply). A reply awaited while the fault was on counts."""
    path = tmp_path / "history.jsonl"
    lock = f"{Path(__file__).resolve().parent / 'slow_reply_lock.py'}:make"
    config = WorkloadConfig(lock=resolve(lock), ttl_ms=300, work_ms=20, duration_s=3,
                            socket_timeout_s=2.0)  # longer than the BLPOP
    run_workload(single, config, path, clients=1, seed=1, nemesis=WhileAwaiting(),
                 params={"faults": ["reply-lost"]})
    events = h.read_history(path)
    (effect,) = [e for e in events if e.f == h.EFFECT]
    assert effect.value["what"] == "c1 awaited the reply to BLPOP from n0 while reply-lost was on"
    assert effect.value["how"] == AWAITED
    verdict = check_file(path)
    assert verdict.coverage["reply-lost"].effective == 1, verdict.coverage
    assert verdict.verdict == "ok", verdict.inconclusive_reasons
