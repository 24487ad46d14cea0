"""The bundled lock drivers in other languages (chaos/drivers/), on real topologies: the
Jedis, Redisson, redsync and node-redlock drivers (built by ``scripts/drivers-setup.sh`` during
``make setup``) break where their seeds say they break, report their own renewals, stop with
their client, are found in the caches, and run under the pytest plugin. (Drivers written in
Python, and the harness side of the protocol: tests/redis/test_exec_drivers.py.)
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from cells import DURATION_S, QUIET_DURATION_S, quiet_duration_s, run_cell
from prerequisites import driver_gap, need
from seeds import SEEDS, first_found

from chaos import history as h
from chaos import lockspec
from chaos.campaign import HISTORY, Campaign
from chaos.cli import main
from chaos.drivers import catalog
from chaos.errors import UsageError
from chaos.experiments.audit import AuditPlan, warm_up
from chaos.experiments.execute import run_campaign
from chaos.experiments.truth_table import DRIVER_CELLS, Cell
from chaos.lockspec import resolve
from chaos.topology import LocalTopology
from chaos.topology.node import wait_until
from chaos.topology.processes import process_state
from chaos.workload import WorkerPool, WorkloadConfig
from chaos.workload.inject import admitted

# -- the truth-table cells of the bundled drivers (chaos.experiments.truth_table.DRIVER_CELLS) --

CELLS = DRIVER_CELLS

# A run begins once every client's lock is ready (WorkerPool.start), so the JVMs' start (3-5 s
# for five on two loaded cores) is not the run's: a quiet Java cell locks for 6 s, as long as
# its 10 s runs did when the start was part of them.
JVM_QUIET_DURATION_S = 6.0


@pytest.mark.parametrize("cell", CELLS, ids=[cell.name for cell in CELLS])
def test_driver_cell(tmp_path: Path, cell: Cell) -> None:
    """The same run and the same judgement as tests/redis/test_truth_table.py's cells."""
    need(driver_gap(cell.lock))
    _, outcome = run_cell(cell, _duration(cell), tmp_path)
    # Every grant came from the driver of the client that recorded it (tokens are "cN:…").
    acquired = [
        e for e in h.read_history(outcome.run_dir / "history.jsonl")
        if e.f == h.ACQUIRE and e.type == h.OK
    ]  # fmt: skip
    assert acquired and all(str(e.token).startswith(f"{e.process}:") for e in acquired)


def _duration(cell: Cell) -> float:
    if cell.stop_on:  # a hard cell ends at its first violation; DURATION_S is its cap
        return DURATION_S
    java = catalog.BUNDLED_DRIVERS[cell.lock].language == "java"
    return quiet_duration_s(cell, JVM_QUIET_DURATION_S if java else QUIET_DURATION_S)


def test_redisson_reports_its_watchdog_renewals(tmp_path: Path) -> None:
    """Work of 2.5 TTLs: Redisson's watchdog (not the harness) keeps the lease, and every
    renewal it made is in the history as the lease's own renewal. A 1 s TTL: a JVM starved
    for half a second on two loaded cores (the suite runs two tests at once) missed a renewal
    at 200 ms, which the checker rightly calls a watchdog that did not renew."""
    need(driver_gap("redisson"))
    campaign = Campaign.from_options("redisson", "", duration_s=10.0, ttl_ms=1000, work_ms=2500,
                                     clients=2)  # fmt: skip
    outcome = run_campaign(campaign, tmp_path)
    events = h.read_history(outcome.run_dir / "history.jsonl")
    renewals = [e for e in events if e.f == h.RENEW and e.type == h.OK]
    acquired = {e.token: e.t for e in events if e.f == h.ACQUIRE and e.type == h.OK}
    assert outcome.completed_ops >= 3
    renewed = {e.token for e in renewals}
    assert len(renewed) >= len(acquired) - 2, (len(renewed), len(acquired))
    assert all(e.token in acquired and e.t > acquired[e.token] for e in renewals)
    assert outcome.verdict.hard_violations == 0


@pytest.mark.parametrize("fault", ["partition", "reset"])
def test_a_network_fault_on_redisson_is_seen_in_what_it_did_to_the_lock(
    tmp_path: Path, fault: str
) -> None:
    """What Redisson did on its faulted links, though it announces nothing there. It fails a
    command on a cut link without writing it: the operation's error is the partition's
    effect. A holder at work sends only its watchdog's renewals, reported as ``sent``: one
    crossing a reset while its client held the lock, between two operations, is the reset's
    effect. Every audit of redisson said "partition had no effect on the lock in any run"
    (3 seeds of 3), and 2 in 10 the same of a reset or a lost reply, while the fault failed
    the clients' operations or cut the holder's renewals.

    Which crossing a firing met first is timing: a release that failed on the cut link, a
    release whose reply the cut held (a CI run: "c1 awaited the reply to EVAL from n0 while
    partition was on"), a renewal sent as it went on. Each effect is one a watch on every link
    admits (``admitted``); which one is not asserted (the watch's own test,
    tests/pure/test_watches.py, sends each). A reset whose every firing met an operation's
    EVAL first (a fresh clone's CI: "c1 sent EVAL to n0 while reset was on", c1 releasing)
    cut no renewal: the next seed runs."""
    need(driver_gap("redisson"))
    work_ms = 1200 if fault == "reset" else 50  # long holds: the renewals cross the reset
    admits = admitted(holds_replies=fault == "partition", everywhere=True)  # a cut holds replies

    def run(seed: int) -> list[h.Event]:
        """Every seed's run keeps the claims below; which crossing a firing met first is not."""
        campaign = Campaign.from_options("redisson", fault, duration_s=4.0, clients=2,
                                         seed=seed, work_ms=work_ms)  # fmt: skip
        outcome = run_campaign(campaign, tmp_path / f"seed-{seed}")
        coverage = outcome.verdict.coverage[fault]
        assert coverage.effective >= 1, coverage
        assert outcome.verdict.hard_violations == 0
        events = h.read_history(outcome.run_dir / HISTORY)
        fired = {e.value["id"] for e in events if e.f == h.START and e.process == h.NEMESIS}
        for effect in _effects(events):
            assert effect.process in ("c1", "c2") and effect.value["id"] in fired, effect
            assert effect.value["how"] in admits, effect
        return events

    if fault == "reset":  # a run whose resets all met an operation's EVAL first: the next seed
        events = first_found(run, _a_renewal_was_cut)
        assert _a_renewal_was_cut(events), _effects(events)
    else:
        run(1)


def _effects(events: list[h.Event]) -> list[h.Event]:
    return [e for e in events if e.f == h.EFFECT]


def _a_renewal_was_cut(events: list[h.Event]) -> bool:
    return any(_between_operations(effect, events) for effect in _effects(events))


def _between_operations(effect: h.Event, events: list[h.Event]) -> bool:
    """Whether ``effect``'s client held the lock then, between its acquire and its release
    (sending only what it sends on its own)."""
    mine = [e for e in events if e.process == effect.process and e.f in (h.ACQUIRE, h.RELEASE)]
    before = [e for e in mine if e.t <= effect.t]
    return bool(before) and (before[-1].f, before[-1].type) == (h.ACQUIRE, h.OK)


def test_redisson_reports_the_renewal_after_which_it_gave_the_lock_up(tmp_path: Path) -> None:
    """A holder stopped past its lease: once it runs again, its watchdog's overdue renewal
    finds the lock gone, and Redisson renews no more. The driver reports that renewal with
    validity 0 (a ``renew`` ``fail``): a live watchdog whose lease lapsed, which the checker
    must not call one that stopped renewing. Without it, a loaded machine that delayed one
    renewal past a 200 ms lease made the checker say "c3's watchdog did not renew for
    1221 ms" (5 audits of redisson in 10)."""
    need(driver_gap("redisson"))

    def run(seed: int) -> list[h.Event]:
        campaign = Campaign.from_options("redisson", "client-pause", duration_s=4.0, clients=2,
                                         seed=seed, work_ms=1200)  # fmt: skip
        outcome = run_campaign(campaign, tmp_path / f"seed-{seed}")
        assert outcome.verdict.hard_violations == 0
        return h.read_history(outcome.run_dir / HISTORY)

    def gave_up(events: list[h.Event]) -> bool:
        return any(e.f == h.RENEW and e.type == h.FAIL for e in events)

    assert gave_up(first_found(run, gave_up))  # a seed whose pauses stopped no holder: the next


def test_redisson_fenced_grants_carry_fences_that_grow(tmp_path: Path) -> None:
    """RFencedLock INCRs its token in the script that grants the lock: every grant carries
    one, and a grant asked for after another was answered carries a higher one — which is what
    lets the resource refuse the earlier holder's late writes (``redisson-fenced ×
    client-pause``, a cell). Every access of the resource went with its holder's fence."""
    need(driver_gap("redisson-fenced"))
    campaign = Campaign.from_options("redisson-fenced", "", duration_s=4.0, clients=3, seed=1)
    outcome = run_campaign(campaign, tmp_path)
    events = h.read_history(outcome.run_dir / HISTORY)
    asked: dict[str, int] = {}  # client → when its pending acquire was invoked
    grants: list[tuple[int, int, int]] = []  # (invoked, answered, fence) of each grant
    for e in events:
        if e.f == h.ACQUIRE and e.type == h.INVOKE:
            asked[e.process] = e.t
        elif e.f == h.ACQUIRE and e.type == h.OK:
            assert isinstance(e.fence, int), e
            grants.append((asked[e.process], e.t, e.fence))
    assert len(grants) >= 5, grants
    assert len({fence for _, _, fence in grants}) == len(grants), grants
    for _, answered, fence in grants:
        later = [f for invoked, _, f in grants if invoked > answered]
        assert all(f > fence for f in later), (fence, later)
    accesses = [e for e in events if e.f in (h.READ, h.WRITE) and e.type == h.INVOKE]
    assert accesses and all(e.fence is not None for e in accesses)
    assert outcome.verdict.hard_violations == 0


# -- the done-when commands -----------------------------------------------------------------


def test_run_redsync_on_five_masters_with_crash_restart_exits_1_hard(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's command: a crash that wipes a holder's keys on a majority grants the lock
    twice. A run that saw no double grant in its 20 s (a loaded machine: the crashes missed
    fresh holders) or was inconclusive (3) says nothing of the claim, so the next seed runs,
    as for every cell (tests/cells.py); a usage error (2) fails at once. At a 1 s TTL and
    400 ms of work: at 200 ms and 50 ms, a slow day's restarts (70-330 ms) outlasted every
    hold, and 3 seeds of 20 s found no double grant."""
    need(driver_gap("redsync"))
    printed = []
    for seed in SEEDS:
        code = main(
            ["run", "--lock", "redsync", "--topology", "standalone", "--nodes", "5",
             "--clients", "2", "--faults", "crash-restart", "--duration", "20",
             "--ttl-ms", "1000", "--work-ms", "400",
             "--stop-on-first", "--seed", str(seed), "--out", str(tmp_path), "--json"]
        )  # fmt: skip
        printed.append(json.loads(capsys.readouterr().out))
        assert code in (0, 1, 3), printed
        if code == 1:
            assert printed[-1]["verdict"] == "hard", printed
            return
    raise AssertionError(f"no seed of {SEEDS} granted the lock twice: {printed}")


# A lock driver in 30 lines: SET NX PX, Lua compare-and-delete, over redis-py, in Python.
def test_client_pause_freezes_the_driver_and_a_crash_kills_it(
    tmp_path: Path, single: LocalTopology
) -> None:
    need(driver_gap("jedis-lua"))
    config = WorkloadConfig(lock=resolve("jedis-lua"), ttl_ms=1000, work_ms=20, duration_s=30)
    with h.HistoryWriter(tmp_path / "history.jsonl") as history:
        pool = WorkerPool(single, config, history, clients=1, seed=1)
        pool.start()
        try:
            worker = pool.pid("c1")
            wait_until(lambda: bool(_children(worker)), "the driver to start", timeout_s=20)
            (java,) = _children(worker)
            pool.pause("c1")
            wait_until(lambda: process_state(java) == "T", "the driver to stop", timeout_s=2)
            pool.resume("c1")
            wait_until(
                lambda: process_state(java) in ("R", "S", "D"), "the driver to go on", timeout_s=2
            )
            pool.kill("c1")
            wait_until(lambda: process_state(java) in ("", "Z"), "the driver to die", timeout_s=5)
        finally:
            pool.stop()


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


@pytest.mark.parametrize("name", ["jedis-lua", "redsync"])
def test_the_audits_warm_up_learns_a_drivers_commands(tmp_path: Path, name: str) -> None:
    """A driver announces the commands of its first operations of each kind, whatever is
    armed: the audit's warm-up learns its surface (it learned none, and aimed a release's
    pause at a DEL jedis-lua never sends: exit 3), and which of them it sends only when an
    acquire fails (redsync releases the masters it got when it misses the quorum)."""
    need(driver_gap(name))
    # Three clients at a 500 ms TTL: five clients on five masters split the votes under load,
    # and a loaded fresh clone's redsync granted nothing in either warm-up (no release seen).
    _, learned = warm_up(AuditPlan(Campaign(name, clients=3, ttl_ms=500)), tmp_path)
    assert learned.surface.get("acquire") and learned.surface.get("release"), learned
    assert learned.points()
    if name == "redsync":
        assert learned.every_time("acquire") == ["SET"], learned
        assert learned.on_failure.get("acquire"), learned.on_failure


def test_bundled_drivers_are_listed_with_language_and_library() -> None:
    listed = {info.name: info for info in lockspec.catalog()}
    for name, entry in catalog.BUNDLED_DRIVERS.items():
        assert listed[name].summary.startswith(f"{entry.language} ({entry.library}): ")
    assert listed["redsync"].topology == "standalone" and listed["node-redlock"].min_nodes == 3


SHAPED = [name for name, entry in catalog.BUNDLED_DRIVERS.items()
          if not entry.info.mutex or entry.info.fair]  # fmt: skip


@pytest.mark.parametrize("name", SHAPED)
def test_a_bundled_driver_describes_what_its_catalog_entry_declares(name: str) -> None:
    """What a semaphore, read-write or fair lock grants is declared twice: in its catalog
    entry (what the harness reads) and in its driver's describe answer (what ``exec:`` reads):
    the two agree."""
    need(driver_gap(name))
    entry = catalog.BUNDLED_DRIVERS[name]
    described = catalog.describe(shlex.join(entry.argv()))
    assert described is not None
    assert (described.capacity, tuple(described.modes), described.fair, described.max_permits) \
        == (entry.info.capacity, entry.info.modes, entry.info.fair, entry.info.max_permits)


def test_a_bundled_driver_is_found_in_the_caches_or_its_error_names_the_setup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Built drivers are looked for in drivers/ of every cache (chaos.topology.binaries), not
    next to the source; a missing build is one line naming the command that builds it."""
    need(driver_gap("redsync"))
    monkeypatch.delenv("LOCKCHAOS_DRIVERS_DIR", raising=False)
    entry = catalog.BUNDLED_DRIVERS["redsync"]
    built = next(d for d in catalog.build_dirs() if (d / entry.build / entry.ready).exists())
    monkeypatch.setenv("LOCKCHAOS_CACHE", str(built.parent))
    assert entry.argv() == [str(built / "redsync" / "redsync-driver")]
    monkeypatch.setenv("LOCKCHAOS_CACHE", str(tmp_path))
    with pytest.raises(
        UsageError,
        match=r"^lock 'redsync': its go driver is not built \(no redsync-driver in "
        + re.escape(str(tmp_path / "drivers" / "redsync"))
        + r"\): run `lockchaos setup --drivers` \(or `make setup` in this checkout\)$",
    ):
        resolve("redsync")


@pytest.mark.lockchaos(lock="jedis-del-release", faults="slow-work")
def test_the_pytest_plugin_runs_a_java_lock(lockchaos_clients: Any, lockchaos_checker: Any) -> None:
    """The plugin's fixtures take a driver like any lock: 004's DEL release, as Java, breaks."""
    need(driver_gap("jedis-del-release"))
    verdict = first_found(
        lambda seed: lockchaos_checker(
            lockchaos_clients(clients=3, duration_s=6.0, ttl_ms=200, seed=seed)
        ),
        lambda verdict: verdict.hard_violations > 0,
    )
    assert verdict.hard_violations > 0, verdict.explanations[:2]


