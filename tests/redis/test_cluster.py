"""Redis Cluster topology (local provider; tests/docker/test_docker_provider.py runs it in
containers): 3 masters with a replica each, every link through Toxiproxy, clients following
the slot map through their own proxies, and seed 003's failover problem reproduced on it."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
import redis
from seeds import first_found

from chaos.campaign import Campaign
from chaos.cli import main
from chaos.experiments.execute import run_campaign
from chaos.locks import build_context
from chaos.lockspec import resolve
from chaos.nemesis.fault import Target
from chaos.nemesis.server_faults import Failover
from chaos.topology import LocalTopology, local, start
from chaos.topology.base import Endpoint
from chaos.topology.cluster import CLUSTER_MASTERS
from chaos.topology.node import wait_until
from chaos.workload.harness import WorkloadEnv
from chaos.workload.inject import InjectingConnection

KEY = "lockchaos:lock"


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalTopology]:
    with start("cluster") as topo:
        yield topo


def test_the_cluster_forms_with_three_masters_and_their_replicas(cluster: LocalTopology) -> None:
    roles = [node["role"] for node in cluster.describe()["nodes"]]
    assert sorted(roles) == ["master"] * 3 + ["slave"] * 3
    assert cluster.master_index(KEY) in range(3)


def test_a_node_whose_meeting_was_lost_still_joins(monkeypatch: pytest.MonkeyPatch) -> None:
    """Redis drops a handshake no one answered within the node timeout (1 s) and never tries
    it again: a fresh clone's CI, its MEETs delayed on a loaded machine, timed out "waiting
    for the cluster's nodes to meet". Here the last node's bus refuses every connection
    while the cluster forms, and opens 2.5 s later: the node is met again and joins."""
    cut_at: list[float] = []
    start_proxy = LocalTopology._start_proxy_and_resource
    form = local.form_cluster

    def cut_last_bus_while_forming(topo: LocalTopology, *args: int) -> None:
        start_proxy(topo, *args)

        def form_with_a_lost_meeting(nodes: Sequence[Endpoint], *rest: Any) -> None:
            last = f"bus-n{len(nodes) - 1}"
            topo.toxiproxy.disable(last)
            cut_at.append(time.monotonic())
            threading.Timer(2.5, topo.toxiproxy.enable, (last,)).start()
            form(nodes, *rest)

        monkeypatch.setattr(local, "form_cluster", form_with_a_lost_meeting)

    monkeypatch.setattr(LocalTopology, "_start_proxy_and_resource", cut_last_bus_while_forming)
    with start("cluster") as topo:
        assert time.monotonic() - cut_at[0] >= 2.5  # formed only once the bus was open again
        roles = sorted(node["role"] for node in topo.describe()["nodes"])
        assert roles == ["master"] * 3 + ["slave"] * 3


def test_a_client_follows_the_slot_map_through_its_own_proxies(cluster: LocalTopology) -> None:
    view = cluster.client_view("c1")
    # a TTL no stall of a loaded machine outlasts: this checks routing, not expiry
    ctx = build_context(view, lock_name=KEY, ttl_ms=10_000, connection_class=InjectingConnection)
    try:
        lock = resolve("lua").create(ctx)
        lease = lock.acquire()
        assert lease is not None
        node = ctx.primary.get_node_from_key(KEY)  # type: ignore[attr-defined]
        assert (node.host, node.port) == view.nodes[cluster.master_index(KEY)]  # its proxy
        assert lock.release(lease) is True
    finally:
        ctx.close()
    # cutting this client's own link to the key's master cuts its lock traffic, nobody else's
    link = cluster.client_links("c1")[cluster.master_index(KEY)]
    cluster.toxiproxy.disable(link.name)
    try:
        ctx = build_context(view, lock_name=KEY, ttl_ms=500)
        with pytest.raises(redis.ConnectionError):  # its proxy refuses: nobody answers
            resolve("lua").create(ctx).acquire()
        ctx.close()
        other = build_context(cluster.client_view("c2"), lock_name=KEY, ttl_ms=500)
        lease = resolve("lua").create(other).acquire()
        assert lease is not None
        other.close()
    finally:
        cluster.toxiproxy.enable(link.name)


def test_failover_on_a_cluster_breaks_the_lua_lock(tmp_path: Path) -> None:
    """003: the master fails before the lock key reached its replica; the promoted replica
    grants the lock again."""
    outcome = first_found(
        lambda seed: run_campaign(
            Campaign(lock="lua", faults=[("failover", {})], topology="cluster",
                     duration_s=15.0, stop_on_first=True, seed=seed),
            tmp_path / f"seed-{seed}",
        ),
        lambda outcome: outcome.verdict.hard_violations > 0,
    )
    assert outcome.verdict.hard_violations > 0, outcome.verdict.explanations[:3]
    assert outcome.verdict.violations[0].cause == "failover"


def test_a_cut_off_master_stays_master_until_healed_while_its_replica_takes_over() -> None:
    """The split a failover makes lasts as long as the cut: with only its own bus cut, the
    old master still pinged its replica through the replica's bus link, heard it claim the
    slots with a newer epoch and stepped down 0.1–0.4 s after the promotion (seed 6 of
    ``lua (topology=cluster) × failover``: the kept holder followed ``MOVED``)."""
    with start("cluster") as topo:
        old = topo.master_index(KEY)
        links = topo.cluster_links(old)
        for link in links:
            topo.toxiproxy.disable(link.name)
        topo.elect(old)
        wait_until(lambda: topo.master_index(KEY) != old, "the promotion", 5.0)
        time.sleep(1.5)  # longer than the 0.4 s it took, longer than the fault's 3–5 TTLs
        with topo.nodes[old].client(decode_responses=True) as conn:
            assert conn.execute_command("ROLE")[0] == "master"
            assert conn.set(KEY, "old") is True
            for link in links:
                topo.toxiproxy.enable(link.name)
            wait_until(lambda: conn.execute_command("ROLE")[0] == "slave",
                       "the healed old master to step down", 15.0)


def test_a_fresh_cluster_fails_over_back_and_forth() -> None:
    """Each failover elects the replica of the master before it, from the moment the cluster
    is formed, once the old master has stepped down (``await_demotion``). A takeover 0.8 s
    after ``ok`` once claimed the slots at the epoch the old master had just settled on: no
    node saw the promotion (``form_cluster`` now sets the epochs); the current epoch every
    node knows tops every master's config epoch, so a takeover's bump is a newer one."""
    with start("cluster") as topo:
        for node in topo.nodes:
            with node.client(decode_responses=True) as conn:
                info = conn.cluster("INFO")
                nodes = str(conn.execute_command("CLUSTER", "NODES"))
            rows = [row.split() for row in nodes.splitlines()]
            epochs = {int(row[6]) for row in rows if "master" in row[2]}
            assert len(epochs) == CLUSTER_MASTERS, rows
            assert int(info["cluster_current_epoch"]) >= max(epochs), (info, rows)
        masters = [topo.master_index(KEY)]
        for _ in range(3):
            masters.append(_fail_over(topo, masters[-1]))
        assert masters[0] == masters[2] != masters[1] == masters[3]


def _fail_over(topo: LocalTopology, old: int) -> int:
    """What the ``failover`` fault does to the nodes, without clients: the new master."""
    links = topo.cluster_links(old)
    for link in links:
        topo.toxiproxy.disable(link.name)
    topo.elect(old)
    wait_until(lambda: topo.master_index(KEY) != old, "the promotion", 5.0)
    for link in links:
        topo.toxiproxy.enable(link.name)
    topo.await_demotion(old)
    return topo.master_index(KEY)


def test_a_failover_that_cannot_elect_leaves_no_link_cut(cluster: LocalTopology) -> None:
    """A failover that found no replica to take over once raised with the master's links
    cut, and no heal: the node stayed cut off for the rest of the run, and every later
    failover failed the same way. Node 3 replicates master 0 and has no replica itself."""
    replica = CLUSTER_MASTERS
    env = cast(WorkloadEnv, SimpleNamespace(topology=cluster))
    with pytest.raises(RuntimeError, match=f"no replica of n{replica}"):
        Failover().apply(env, Target(nodes=[replica]),
                         {"duration_ms": 1000, "promote_timeout_ms": 1000})
    for link in cluster.cluster_links(replica):
        socket.create_connection(link.address, timeout=1.0).close()  # refused while cut


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["explore", "--lock", "lua", "--topology", "cluster"], "explore runs on"),
        (["run", "--lock", "lua", "--topology", "cluster", "--provider", "external",
          "--provider-config", "{config}"], "cluster runs on --provider local or docker"),
        (["run", "--lock", "redlock", "--topology", "cluster"], "needs independent masters"),
    ],
)
def test_what_a_cluster_cannot_do_is_one_line(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "external.toml"  # servers nobody needs to reach: refused before
    config.write_text('toxiproxy = "http://127.0.0.1:9"\nnodes = ["127.0.0.1:9"]\n'
                      'resource = "127.0.0.1:9"\n')
    args = [arg.format(config=config) for arg in args]
    assert main([*args, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
