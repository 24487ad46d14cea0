"""The Python corpus (third-party lock libraries at pinned versions) on real Redis: each
adapter's contract with its library, and a run showing what the library's source predicts
(docs in each adapter's module; issue 35).

* ``sherlock-no-expire``: every acquire granted, no fault needed (hard);
* ``sherlock`` at a whole-second TTL under a pause: soft and lost writes, no hard;
* ``pottery-redlock`` on five masters under a pause and a partition: no hard;
* ``python-redis-lock``: one renewal cut by lost replies ends its renewal thread for good; the
  holder works on with its links up, unrenewed, and another client takes the lock.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
import redis

from chaos import history as h
from chaos.campaign import Campaign
from chaos.checker import check_file
from chaos.checker.verdict import Verdict, fails
from chaos.cli import main
from chaos.errors import UsageError
from chaos.locks import build_context
from chaos.locks.contract import Lease, LockClient, LockContext
from chaos.lockspec import can_extend, resolve
from chaos.nemesis import FaultEvent, Schedule, ScheduledNemesis
from chaos.topology import LocalTopology
from chaos.workload import run_workload

KEY = "lock:corpus"
SECOND = 1000  # ms: the whole-second TTL sherlock and python-redis-lock can express


class Recorded(redis.Connection):
    """Records every command with the thread that sent it."""

    sent: ClassVar[list[tuple[str, str]]]

    def send_command(self, *args: Any, **kwargs: Any) -> None:
        type(self).sent.append((threading.current_thread().name, " ".join(map(str, args))))
        super().send_command(*args, **kwargs)


class Contexts:
    """Lock contexts for a topology, closed afterwards; renewals reported to ``renewals``."""

    def __init__(self) -> None:
        self.made: list[LockContext] = []
        self.renewals: list[tuple[str, float | str | None]] = []
        self.connection: type[Recorded] = type("Recorded", (Recorded,), {"sent": []})

    def lock(self, topo: LocalTopology, name: str, cid: str = "c1",
             ttl_ms: int = SECOND) -> LockClient:
        # A socket timeout of a second, not the runs' 500 ms: these tests look at what a
        # library sends and how it fails on cut links (refused at once), and a loaded CI's
        # stall timed out 4 of pottery's 5 extends (Indeterminate) at 500 ms.
        ctx = build_context(topo.client_view(cid), lock_name=KEY, ttl_ms=ttl_ms,
                            connection_class=self.connection, report_renewal=self._renewed,
                            socket_timeout_s=SECOND / 1000)
        self.made.append(ctx)
        return resolve(name).create(ctx)

    def _renewed(self, lease: Lease, validity_ms: float | None, invoked_at_ns: int, *,
                 error: str | None = None) -> None:
        self.renewals.append((lease.token, error.split(":")[0] if error else validity_ms))


@pytest.fixture
def contexts() -> Iterator[Contexts]:
    made = Contexts()
    yield made
    for ctx in made.made:
        ctx.close()


def direct(topo: LocalTopology, i: int = 0) -> Any:
    return topo.nodes[i].client(decode_responses=True)


def run(topo: LocalTopology, path: Path, campaign: Campaign, *events: FaultEvent) -> Verdict:
    """``campaign``'s workload on ``topo`` with ``events`` at their times, and its verdict."""
    nemesis = ScheduledNemesis(Schedule(1, events)) if events else None
    run_workload(topo, campaign.workload(), path, clients=campaign.clients, seed=1,
                 nemesis=nemesis)
    return check_file(path)


# -- sherlock 0.4.1 ----------------------------------------------------------------------


def test_sherlock_holds_its_own_uuid_for_whole_seconds_and_renews_it(
    single: LocalTopology, contexts: Contexts
) -> None:
    c1, c2 = contexts.lock(single, "sherlock"), contexts.lock(single, "sherlock", "c2")
    lease = c1.acquire()
    assert lease and lease.validity_ms == SECOND
    assert direct(single).get(KEY) == lease.token  # the library's uuid4: the key's value
    assert 0 < direct(single).pttl(KEY) <= SECOND
    assert not c2.acquire()
    assert can_extend(c1)
    extended = c1.extend(lease)  # type: ignore[attr-defined]
    assert extended and extended.validity_ms == SECOND
    assert c1.release(lease) is True
    assert c1.release(lease) is False  # not its owner's any more: LockException
    scripts = [cmd.split()[0] for _, cmd in contexts.connection.sent]
    assert set(scripts) <= {"EVALSHA", "SCRIPT"}, scripts  # Lua only; loaded once on NOSCRIPT


@pytest.mark.parametrize("name", ["sherlock", "python-redis-lock"])
def test_a_ttl_in_milliseconds_is_refused_not_rounded_to_expire_0(
    single: LocalTopology, contexts: Contexts, name: str
) -> None:
    """Their APIs take whole seconds: 300 ms would be ``EXPIRE key 0`` (sherlock: the key
    deleted at once) or an error on every acquire (python-redis-lock's ``EX 0``)."""
    with pytest.raises(UsageError, match=f"lock '{name}' expresses its TTL in multiples of "
                       "1000 ms .whole seconds.: --ttl-ms 300 cannot be kept; use --ttl-ms 1000"):
        contexts.lock(single, name, ttl_ms=300)


# A client process as a run starts one (chaos.workload.worker): the root logger writes to the
# client's log file (argv[3]); Python's own thread and finalizer hooks. Then (argv[4]) a
# lock's scenario around the link to its node (argv[1]) that the test cuts.
CLIENT = """
import logging, sys, time, redis
from chaos.locks.contract import LockContext
from chaos.lockspec import resolve
logging.basicConfig(filename=sys.argv[3], format="%(name)s %(levelname)s %(message)s")
def lock(name, cid):
    node = redis.Redis(port=int(sys.argv[1]), socket_timeout=0.5, decode_responses=True)
    return resolve(name).create(LockContext(cid, sys.argv[2], 1000, nodes=[node]))
"""
# sherlock: a lock object whose release raised is collected while the link is still cut.
SHERLOCK_COLLECTED = CLIENT + """
holder = lock("sherlock", "c1")
lease = holder.acquire()
print("acquired", flush=True)
sys.stdin.readline()  # the link is cut
try:
    holder.release(lease)
except redis.ConnectionError:
    print("release raised", flush=True)
del lease  # its RedisLock still has an owner: its finalizer releases again, and fails
print("collected", flush=True)
"""
# python-redis-lock: a refused acquire, then the holder's first renewal over a cut link.
RENEWAL_CUT = CLIENT + """
holder, other = lock("python-redis-lock", "c1"), lock("python-redis-lock", "c2")
lease = holder.acquire()
assert lease and not other.acquire()
print("acquired", flush=True)
sys.stdin.readline()  # the link is cut over the renewal at 2/3 s
time.sleep(1.5)
print("renewing" if lease.state._lock_renewal_thread.is_alive() else "dead", flush=True)
"""


def client_process(topo: LocalTopology, script: str, log: Path, cut_s: float = 0.0) -> str:
    """``script`` run as a client process, its link cut from the moment it says "acquired"
    for ``cut_s`` (or until it ends); its stdout after that line, once its stderr, where a
    run's terminal would show it, was found empty."""
    (_, port) = topo.client_view("c1").nodes[0]
    link = topo.client_links("c1")[0].name
    client = subprocess.Popen([sys.executable, "-c", script, str(port), KEY, str(log)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        assert client.stdout is not None and client.stdout.readline() == "acquired\n"
        topo.toxiproxy.disable(link)
        if cut_s:
            time.sleep(cut_s)
            topo.toxiproxy.enable(link)
        out, err = client.communicate("cut\n", timeout=30)
    finally:
        topo.toxiproxy.enable(link)
        client.kill()
        client.wait()
    assert err == ""
    return out


def test_sherlock_release_from_the_garbage_collector_goes_to_the_log_not_the_terminal(
    single: LocalTopology, tmp_path: Path
) -> None:
    log = tmp_path / "c1.log"
    assert client_process(single, SHERLOCK_COLLECTED, log) == "release raised\ncollected\n"
    assert log.read_text().startswith(
        "sherlock ERROR a lock's release from the garbage collector failed\n")
    assert "redis.exceptions.ConnectionError" in log.read_text()


def test_sherlock_without_expire_leaves_no_key_and_grants_everyone(
    single: LocalTopology, contexts: Contexts
) -> None:
    """``"-1" ~= -1`` in Lua: the acquire script sends ``EXPIRE key -1``, deleting the key."""
    c1 = contexts.lock(single, "sherlock-no-expire")
    c2 = contexts.lock(single, "sherlock-no-expire", "c2")
    first = c1.acquire()
    assert first and not direct(single).exists(KEY)
    second = c2.acquire()
    assert second  # while c1 holds a lease it was told never expires
    assert not can_extend(c1)
    assert c1.release(first) is False  # nothing left to delete


def test_sherlock_without_expire_is_hard_with_no_fault(single: LocalTopology,
                                                       tmp_path: Path) -> None:
    campaign = Campaign("sherlock-no-expire", ttl_ms=SECOND, duration_s=2, clients=3)
    verdict = run(single, tmp_path / "history.jsonl", campaign)
    assert verdict.hard_violations > 0 and fails(verdict, "hard"), verdict.explanations[:2]
    assert verdict.counts["release_ok"] == 0  # every release found no key


def test_sherlock_at_a_whole_second_ttl_survives_a_pause_with_soft_only(
    single: LocalTopology, tmp_path: Path
) -> None:
    """The holder stopped for two TTLs loses its lease and writes after it: the known limit
    of a lease (soft, lost writes), never two valid leases."""
    campaign = Campaign("sherlock", ttl_ms=SECOND, duration_s=4, clients=3)
    verdict = run(single, tmp_path / "history.jsonl", campaign,
                  FaultEvent(0.3, "client-pause", {"duration_ms": 2 * SECOND}))
    assert verdict.coverage["client-pause"].effective == 1
    assert verdict.hard_violations == 0 and not fails(verdict, "hard"), verdict.explanations[:2]
    assert verdict.soft_violations > 0, verdict.explanations[:2]
    assert verdict.counts["extend_ok"] > 0


# -- pottery 3.0.1 -----------------------------------------------------------------------


def test_pottery_sends_from_its_thread_pool_through_the_contexts_connections(
    standalone: LocalTopology, contexts: Contexts
) -> None:
    lock = contexts.lock(standalone, "pottery-redlock")
    lease = lock.acquire()
    assert lease
    assert lease.validity_ms == SECOND - (SECOND * 0.01 + 2)  # its own drift rule
    key = f"redlock:{KEY}"
    time.sleep(0.2)  # the bail-out: the last nodes' SETs may complete after acquire returned
    assert [direct(standalone, i).get(key) for i in range(5)] == [lease.token] * 5
    sets = [(thread, cmd) for thread, cmd in contexts.connection.sent if cmd.startswith("SET")]
    assert len(sets) == 5 and all(thread.startswith("ThreadPoolExecutor") for thread, _ in sets)
    assert all(cmd.split()[1:3] == [key, lease.token] for _, cmd in sets)
    for _ in range(3):  # its default cap: three extends per acquire
        extended = lock.extend(lease)  # type: ignore[attr-defined]
        assert extended and extended.validity_ms == lease.validity_ms
    sent = len(contexts.connection.sent)
    assert lock.extend(lease) is None  # type: ignore[attr-defined]  # TooManyExtensions
    assert len(contexts.connection.sent) == sent  # refused before sending anything
    assert lock.release(lease) is True


def test_pottery_errors_on_a_majority_are_indeterminate_not_refusals(
    standalone: LocalTopology, contexts: Contexts
) -> None:
    lock = contexts.lock(standalone, "pottery-redlock")
    links = [link.name for link in standalone.client_links("c1")[:3]]
    for link in links:
        standalone.toxiproxy.disable(link)
    try:
        with pytest.raises(Exception, match="QuorumIsImpossible, 3 node"):
            lock.acquire()
    finally:
        for link in links:
            standalone.toxiproxy.enable(link)
    assert lock.acquire()


def test_pottery_redlock_on_five_masters_has_no_hard_under_pause_and_partition(
    standalone: LocalTopology, tmp_path: Path
) -> None:
    campaign = Campaign("pottery-redlock", ttl_ms=SECOND, duration_s=5, clients=3)
    verdict = run(standalone, tmp_path / "history.jsonl", campaign,
                  FaultEvent(0.3, "client-pause", {"duration_ms": 2 * SECOND}),
                  FaultEvent(2.8, "partition", {"duration_ms": 1500, "scope": "majority"}))
    assert {name: c.effective for name, c in verdict.coverage.items()} == {
        "client-pause": 1, "partition": 1}, verdict.coverage
    assert verdict.hard_violations == 0 and not fails(verdict, "hard"), verdict.explanations[:2]
    assert verdict.counts["acquire_ok"] >= 3


# -- python-redis-lock 4.0.1 -------------------------------------------------------------


def test_python_redis_lock_renews_in_its_thread_and_reports_each_renewal(
    single: LocalTopology, contexts: Contexts
) -> None:
    c1 = contexts.lock(single, "python-redis-lock")
    c2 = contexts.lock(single, "python-redis-lock", "c2")
    assert not can_extend(c1)  # the harness's extends would hide a dead renewal thread
    lease = c1.acquire()
    assert lease and lease.token.startswith("c1:") and lease.validity_ms == SECOND
    assert direct(single).get(f"lock:{KEY}") == lease.token
    assert not c2.acquire()
    time.sleep(1.5)  # renewals every 2/3 s
    assert contexts.renewals[:2] == [(lease.token, SECOND)] * 2
    assert c1.release(lease) is True


def test_python_redis_lock_renewal_thread_dies_at_its_first_failed_renewal(
    single: LocalTopology, contexts: Contexts, caplog: pytest.LogCaptureFixture
) -> None:
    """The library's renewal loop has no try/except: a renewal that raises ends it. The
    adapter reports it (with its error: no answer) and the traceback goes to the library's
    logger."""
    lock = contexts.lock(single, "python-redis-lock")
    lease = lock.acquire()
    assert lease
    link = single.client_links("c1")[0].name
    single.toxiproxy.disable(link)
    caplog.set_level(logging.ERROR, logger="redis_lock")
    try:
        time.sleep(0.9)  # the renewal at 2/3 s meets the cut link
    finally:
        single.toxiproxy.enable(link)
    time.sleep(1.5)  # two more renewal periods, links up
    assert contexts.renewals == [(lease.token, "ConnectionError")]
    assert lease.state._lock_renewal_thread is not None
    assert not lease.state._lock_renewal_thread.is_alive()
    assert not direct(single).exists(f"lock:{KEY}")  # lapsed under its holder
    assert lock.release(lease) is False
    assert [r.name for r in caplog.records] == ["redis_lock.refresh.thread"]
    assert "ConnectionError" in caplog.text


def test_python_redis_lock_warnings_and_dead_thread_go_to_the_log_not_the_terminal(
    single: LocalTopology, tmp_path: Path
) -> None:
    """Its WARNING for each refused acquire (logged: the run's log keeps it) and its renewal
    thread's dying traceback (printed by Python's thread hook: the adapter logs it)."""
    log = tmp_path / "c1.log"
    assert client_process(single, RENEWAL_CUT, log, cut_s=1.0) == "dead\n"
    lines = log.read_text().splitlines()
    assert lines[0] == "redis_lock.acquire WARNING Failed to acquire Lock('lock:lock:corpus')."
    assert lines[1] == "redis_lock.refresh.thread ERROR a renewal thread died"
    assert "redis.exceptions.ConnectionError" in lines[-1]


HOLDER_WORK_MS = 5 * SECOND
REPLY_LOST = FaultEvent(0.4, "reply-lost", {"duration_ms": 1500})


@pytest.fixture(scope="module")
def renewal_cut(_single_module: LocalTopology,
                tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One run, shared: two clients holding for 5 TTLs, the holder's replies lost for 1.5 s
    over its first renewal (2/3 s after its acquire)."""
    path = tmp_path_factory.mktemp("renewal-cut") / "history.jsonl"
    campaign = Campaign("python-redis-lock", ttl_ms=SECOND, work_ms=HOLDER_WORK_MS,
                        duration_s=6.5, clients=2)
    run(_single_module, path, campaign, REPLY_LOST)
    return path


def test_python_redis_lock_history_shows_a_holder_working_unrenewed_after_the_heal(
    renewal_cut: Path
) -> None:
    """What the history records: the renewal the fault cut (``renew`` ``fail``), then no
    renewal for the rest of the hold although the holder ran with its links up for seconds,
    and another client granted the lock while it still held it."""
    events = list(h.iter_events(renewal_cut))
    fault = next(e for e in events if e.process == h.NEMESIS and e.f == h.START)
    healed = next(e.t for e in events if e.process == h.NEMESIS and e.f == h.STOP)
    holder = fault.value["target"]["client"]
    acquired = next(e for e in events
                    if e.process == holder and e.f == h.ACQUIRE and e.type == h.OK)
    released = next(e for e in events if e.process == holder and e.f == h.RELEASE
                    and e.type != h.INVOKE and e.t > acquired.t)
    renewals = [e for e in events if e.process == holder and e.f == h.RENEW
                and e.token == acquired.token]
    # Renewals answered until the one the fault cut, and none after it. (The fault meets the
    # first renewal when it fires on time; a loaded machine fired it later, after one.)
    *answered, cut = renewals
    assert cut.type == h.FAIL and all(e.type == h.OK for e in answered), renewals
    assert fault.t <= cut.value["invoked"] <= healed
    period_ns = SECOND * 2 / 3 * 1e6
    assert released.t - healed > 2 * period_ns  # it ran on, links up, never renewing
    assert released.type == h.FAIL  # its key was gone: NotAcquired
    assert any(e.process != holder and e.f == h.ACQUIRE and e.type == h.OK
               and acquired.t < e.t < released.t for e in events)


def test_python_redis_lock_dead_renewal_thread_fails_the_default_gate(
    renewal_cut: Path
) -> None:
    verdict = check_file(renewal_cut)
    assert main(["check-history", str(renewal_cut)]) == 1, verdict.explanations[:3]
    assert any("watchdog" in v.explanation for v in verdict.violations), verdict.explanations


def test_python_redis_lock_paused_past_its_ttl_is_soft_not_a_dead_watchdog(
    _single_module: LocalTopology, tmp_path: Path
) -> None:
    """A holder paused past its TTL wakes to a renewal that finds the lease gone
    (``NotAcquired``: Redis answered), and the library's thread ends, as it should: the lease
    ended there. Reported as a renewal that raised (no answer), it read as a watchdog that
    never renewed after the pause — hard, dead-watchdog — on a pause, where a lease without
    fencing is soft (bench/libraries.py, python-redis-lock, 2026-11-27)."""
    path = tmp_path / "history.jsonl"
    campaign = Campaign("python-redis-lock", ttl_ms=SECOND, work_ms=HOLDER_WORK_MS,
                        duration_s=6.5, clients=2)
    verdict = run(_single_module, path, campaign,
                  FaultEvent(0.4, "client-pause", {"duration_ms": 1500}))
    renewals = [e for e in h.iter_events(path) if e.f == h.RENEW and e.type == h.FAIL]
    assert renewals and all("error" not in e.value for e in renewals), renewals
    assert not [v for v in verdict.violations if v.cause == "dead-watchdog"], \
        verdict.explanations
    assert verdict.verdict != "hard", verdict.explanations
