"""Seed 001's demo as Compose services: ``docker compose up --scale worker=4`` (compose/).

The seed post runs its ``RedisLockV2`` (SET NX EX, a Lua compare-and-EXPIRE every 0.2 s while
it works, a Lua compare-and-delete release) in several containers at once, with a TTL of 2 s,
and in one cycle out of five lets the lock time out ("lock timeout!": it sleeps 3 × TTL
without extending) before releasing it. Here the same lock (``lua-extend``) runs in the same
way, and the checker judges the result:

* ``init`` (one container) empties the resource and writes the history's start event;
* ``worker`` (one container per client, scaled) creates its own Toxiproxy link to the Redis
  node (``demo-redis``, run as the seed's compose file runs it: ``redis-server --appendonly
  yes``), runs one lockchaos client for the duration, appending to the shared history on a
  volume (containers share the host's monotonic clock, so their events compare), and
  deletes its link;
* ``check`` (after every worker exited) records the resource's final state and prints the
  verdict, exiting as ``lockchaos check-history --fail-on`` does.

Settings come from options or ``LOCKCHAOS_DEMO_*`` environment variables (the Compose file
sets them).
"""

from __future__ import annotations

import multiprocessing as mp
import socket
import time
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

import redis
import typer
from rich.console import Console

from chaos import history as h
from chaos.campaign import Campaign
from chaos.checker import DEFAULT_LIVENESS_FACTOR, check_fail_on, exit_status
from chaos.locks.contract import Lease
from chaos.report.summary import judge_file, print_summary
from chaos.topology.base import ClientView
from chaos.topology.toxiproxy import ToxiproxyAPI
from chaos.workload.harness import record_end
from chaos.workload.resource import Resource
from chaos.workload.worker import Worker, WorkerSpec, WorkloadConfig

LOCK = "lua-extend"  # seed 001's RedisLockV2
LOSE_LOCK_P = 0.2  # the seed's `loss_lock = bool(random.random() > 0.8)`
SEED_RETRY_MS = 100.0  # the seed sleeps 0.1 s between refused acquires
SEED_TTL_S = 2  # LockDemo's self._ttl
SEED_EXTEND_S = 0.2  # it extends every 0.2 s while it works

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

HISTORY = typer.Option(Path("/history/history.jsonl"), envvar="LOCKCHAOS_DEMO_HISTORY")
RESOURCE = typer.Option("resource:6379", envvar="LOCKCHAOS_DEMO_RESOURCE")
TTL_MS = typer.Option(2000, envvar="LOCKCHAOS_DEMO_TTL_MS", help="the seed's 2 s")
DURATION_S = typer.Option(30.0, envvar="LOCKCHAOS_DEMO_DURATION_S")


def _address(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    return (host, int(port))


def demo_config(ttl_ms: int, duration_s: float) -> WorkloadConfig:
    """The seed's demo, as a campaign (checked: ``UsageError`` for a TTL or duration out of
    bounds): work for one TTL (``SeedDemoWorker.work`` extends as the seed does); retry
    every 0.1 s, the workload's own setting."""
    campaign = Campaign(LOCK, ttl_ms=ttl_ms, work_ms=ttl_ms, duration_s=duration_s,
                        extend_during_work=True)
    campaign.validate()
    return replace(campaign.workload(), retry_min_ms=SEED_RETRY_MS, retry_max_ms=SEED_RETRY_MS)


class SeedDemoWorker(Worker):
    """One client of the demo, as ``LockDemo.run`` is written: one cycle in five lets its lock
    time out mid-work; the others extend every 0.2 s while "doing sth"; every cycle ends with
    an idle ``randint(1, 4)`` s. Those are seconds at the seed's 2 s TTL: another TTL scales
    them with it (``--ttl-ms 2000``, the Compose default, runs the seed's very numbers)."""

    lose_lock_p = LOSE_LOCK_P

    def _seed_seconds(self, seconds: float) -> float:
        """``seconds`` of the seed's demo, at this run's TTL."""
        return seconds * self.config.ttl_ms / 1000 / SEED_TTL_S

    def work(self, lease: Lease, work_ms: float, stretch: bool = False) -> Lease:
        """The seed's own critical section, whatever ``work_ms`` and ``stretch`` say."""
        if self.rng.random() < self.lose_lock_p:  # "lock timeout!": sleep 3 × TTL, no extend
            time.sleep(3 * self.config.ttl_ms / 1000)
            return lease
        # for _ in range(int(self._ttl / 0.2)): time.sleep(0.2); set_lock_ttl(ttl=self._ttl)
        for _ in range(int(SEED_TTL_S / SEED_EXTEND_S)):
            time.sleep(self._seed_seconds(SEED_EXTEND_S))
            lease = self.extend(lease)
        return lease

    def release(self, lease: Lease) -> bool | None:
        released = super().release(lease)
        # time.sleep(random.randint(max(1, self._ttl - 2), max(4, self._ttl + 2)))
        ttl = SEED_TTL_S
        idle = self.rng.randint(max(1, ttl - 2), max(4, ttl + 2))
        time.sleep(self._seed_seconds(idle))
        return released


@app.command()
def init(
    history: Path = HISTORY,
    resource: str = RESOURCE,
    ttl_ms: int = TTL_MS,
    duration_s: float = DURATION_S,
) -> None:
    """Start a fresh history (start event) and empty the resource."""
    history.parent.mkdir(parents=True, exist_ok=True)
    history.unlink(missing_ok=True)
    Resource(redis.Redis(*_address(resource))).reset()
    start = {**demo_config(ttl_ms, duration_s).recorded(), "topology": "standalone",
             "provider": "docker", "demo": "seed 001 (RedisLockV2, --scale worker=N)"}
    with h.HistoryWriter(history) as writer:
        writer.log(h.INFO, h.HARNESS, h.START, value=start)


@app.command()
def worker(
    history: Path = HISTORY,
    resource: str = RESOURCE,
    ttl_ms: int = TTL_MS,
    duration_s: float = DURATION_S,
    redis_address: str = typer.Option(
        "demo-redis:6379", "--redis", envvar="LOCKCHAOS_DEMO_REDIS"
    ),  # the seed's Redis: appendonly yes (compose/docker-compose.yml)
    toxiproxy: str = typer.Option("http://toxiproxy:8474", envvar="LOCKCHAOS_DEMO_TOXIPROXY"),
    listen_host: str = typer.Option("0.0.0.0", envvar="LOCKCHAOS_DEMO_LISTEN_HOST"),
    client_id: str = typer.Option("", envvar="LOCKCHAOS_DEMO_CLIENT_ID"),
    seed: int = typer.Option(1, envvar="LOCKCHAOS_DEMO_SEED"),
    lose_lock_p: float = typer.Option(LOSE_LOCK_P, envvar="LOCKCHAOS_DEMO_LOSE_LOCK_P"),
) -> None:
    """Run one client of the demo through its own Toxiproxy link, then delete the link."""
    cid = client_id or f"w-{socket.gethostname()[:12]}"
    api_url = urlsplit(toxiproxy)
    assert api_url.hostname is not None and api_url.port is not None
    api = ToxiproxyAPI(api_url.port, host=api_url.hostname)
    api.wait_ready()
    host, port = _address(redis_address)
    link = api.create(
        f"{cid}-n0", 0, port, upstream_host=host, listen_host=listen_host,
        public_host=api_url.hostname,
    )  # fmt: skip
    spec = WorkerSpec(
        client_id=cid,
        incarnation=0,
        view=ClientView(cid, nodes=(link.address,), resource=_address(resource)),
        config=demo_config(ttl_ms, duration_s),
        history_path=str(history),
        seed=seed,
        deadline_ns=h.now() + int(duration_s * 1e9),
    )
    harness_end, worker_end = mp.Pipe()  # nobody steers it, but a closed pipe means "stop"
    try:
        demo = SeedDemoWorker(spec, worker_end, mp.Value("q", 0))
        demo.lose_lock_p = lose_lock_p
        completed = demo.run()
    finally:
        api.destroy(link.name)
    harness_end.close()
    print(f"{cid}: {completed} lock cycles")


@app.command()
def check(
    history: Path = HISTORY,
    resource: str = RESOURCE,
    fail_on: str = typer.Option("hard", envvar="LOCKCHAOS_DEMO_FAIL_ON"),
) -> None:
    """Record the resource's final state and the end, then print the verdict."""
    written = sum(1 for e in h.iter_events(history) if e.f == h.WRITE and e.type == h.OK)
    with h.HistoryWriter(history) as writer:
        record_end(writer, Resource(redis.Redis(*_address(resource))), written)
    check_fail_on(fail_on, "LOCKCHAOS_DEMO_FAIL_ON")
    verdict = judge_file(history, DEFAULT_LIVENESS_FACTOR)
    print_summary(verdict, Console(soft_wrap=True, highlight=False))
    raise typer.Exit(exit_status(verdict, fail_on))  # as check-history does

