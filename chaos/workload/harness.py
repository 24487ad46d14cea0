"""One workload: start event, workers (and a nemesis), final read, end event.

The final read goes into the history so the checker needs nothing but the file: which
acknowledged writes survived is decided from the history alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import redis

from chaos import history as h
from chaos.topology.base import Topology
from chaos.workload.pool import WorkerPool
from chaos.workload.resource import Resource
from chaos.workload.worker import WorkloadConfig

FINISH_GRACE_S = 10.0  # a worker mid-operation at the deadline gets this long to finish
SHAPE = ("capacity", "modes", "fair")  # the config's fields that declare a lock not a mutex


@dataclass(frozen=True)
class WorkloadEnv:
    """What a nemesis may touch while a workload runs (a campaign's, or an explore example's:
    the workload's, not a run directory's)."""

    topology: Topology
    pool: WorkerPool
    history: h.HistoryWriter
    config: WorkloadConfig
    seed: int


class Nemesis(Protocol):
    """Injects faults during a run; ``stop`` must heal everything it broke."""

    def start(self, env: WorkloadEnv) -> None: ...

    def stop(self) -> None: ...


@dataclass(frozen=True)
class WorkloadResult:
    """What a workload left behind: its history, the operations completed, the final read."""

    history_path: Path
    completed_ops: int
    final_state: list[str]


def run_workload(
    topology: Topology,
    config: WorkloadConfig,
    history_path: Path,
    *,
    clients: int = 5,
    seed: int = 1,
    nemesis: Nemesis | None = None,
    params: dict[str, Any] | None = None,
    on_start: Callable[[WorkerPool], None] | None = None,
) -> WorkloadResult:
    """Run ``clients`` workers for ``config.duration_s`` and record everything in the history.

    ``params`` are extra run parameters (faults, schedule…) written into the start event;
    ``on_start`` is called with the running pool (e.g. to stop it at the first violation).
    """
    with h.HistoryWriter(history_path) as history:
        resource = record_start(
            history, topology, config, clients=clients, seed=seed, **params or {}
        )
        pool = WorkerPool(topology, config, history, clients=clients, seed=seed)
        try:
            pool.start()
            if nemesis is not None:
                nemesis.start(WorkloadEnv(topology, pool, history, config, seed))
            if on_start is not None:
                on_start(pool)
            pool.wait(config.duration_s + FINISH_GRACE_S)
        finally:
            if nemesis is not None:
                nemesis.stop()
            pool.stop()
        record_lock_key(history, topology, config.lock_name)
        final = record_end(history, resource, pool.completed)
    return WorkloadResult(history_path, pool.completed, final)


def record_start(
    history: h.HistoryWriter,
    topology: Topology,
    config: WorkloadConfig,
    *,
    clients: int,
    seed: int,
    **params: Any,
) -> Resource:
    """Write the run's start event and empty the resource; returns the harness's handle on
    the resource (for ``record_end``).

    A lock whose catalog entry says it renews its leases by itself, or that the run declares
    so (``config.renews``), is declared so (``renews: true``, absent otherwise): the checker
    then holds it to renewing while its holder runs. A lock
    that is not a mutex is declared with its ``capacity``, ``modes`` and ``fair``; a mutex's
    start event says nothing of them (absent: a mutex), as before they existed."""
    shape = config.recorded()
    renews = shape.pop("renews") or config.lock.renews
    if config.mutex:
        for name in SHAPE:
            del shape[name]
    start = {
        **shape,
        **({"renews": True} if renews else {}),
        "clients": [f"c{i}" for i in range(1, clients + 1)],
        "seed": seed,
        "topology": topology.kind,
        **params,
    }
    history.log(h.INFO, h.HARNESS, h.START, value=start)
    resource = Resource(topology.resource.client())
    resource.reset()
    return resource


KEY_READ_TIMEOUT_S = 1.0  # a node that does not answer by then is left out of ``final-key``


def record_lock_key(history: h.HistoryWriter, topology: Topology, key: str) -> None:
    """Write the lock's key as every node holds it once the clients stopped and the faults
    healed (``final-key``): per node that has it, its PTTL (-1: it never expires). What lets
    the checker say why a lock stayed wedged to the end — "its key has no expiry" — from the
    history alone. Only the key the run names (``WorkloadConfig.lock_name``): a lock that
    prefixes it, or keeps other keys beside it (a fence counter, which never expires by
    design), is not read, and the checker then says only that nobody acquired."""
    pttl: dict[str, int] = {}
    for node in topology.nodes:
        try:
            with node.client(socket_timeout=KEY_READ_TIMEOUT_S) as conn:
                left = conn.pttl(key)
        except (redis.RedisError, OSError):
            continue  # down or unreachable: it says nothing of the key
        if isinstance(left, int) and left != -2:  # -2: no such key
            pttl[node.name] = left
    history.log(h.OK, h.HARNESS, h.FINAL_KEY, value={"key": key, "pttl": pttl})


def record_end(history: h.HistoryWriter, resource: Resource, completed_ops: int) -> list[str]:
    """Write the resource's final state (what the data check compares writes with) and the
    end event; returns the final state."""
    final = resource.read()
    history.log(h.OK, h.HARNESS, h.FINAL_READ, value=final)
    history.log(h.INFO, h.HARNESS, h.END, value={"completed_ops": completed_ops})
    return final
