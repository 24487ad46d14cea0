"""The docker provider for real, where a Docker engine, Compose v2 and lockchaos's images are
here (scripts/docker-setup.sh provides them). (Its files and refusals without an engine:
tests/pure/test_compose_file.py; seed 001's demo services against local processes:
tests/redis/test_compose_demo.py.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from leftovers import PROJECT_LABEL, docker_ids, label_values, left_by
from seeds import first_found

from chaos.campaign import Campaign
from chaos.errors import UsageError
from chaos.experiments.execute import Outcome, run_campaign
from chaos.images.build import build as build_images
from chaos.locks import build_context
from chaos.lockspec import resolve
from chaos.topology import images
from chaos.topology.docker import (
    LAYOUT,
    PROJECT,
    DockerTopology,
    project_name,
)
from chaos.topology.reaper import RUN_LABEL
from chaos.topology.remote import RemoteServer

ROOT = Path(__file__).resolve().parents[2]
DEMO_DIR = ROOT / "compose"  # seed 001's Compose demo: a checkout's, not the package's
KEY = "lockchaos:lock"  # the workload's lock key


# Every test declares the images it runs (tests/conftest.py gates it on exactly those):
DEFAULT_IMAGES = pytest.mark.images("redis-7.0", "toxiproxy")  # the default server, Toxiproxy


# -- with a Docker engine --------------------------------------------------------------------


def _hard(outcome: Outcome) -> bool:
    """A run that found a double grant; one that found none says nothing (tests/seeds.py),
    one whose nemesis failed fails the test."""
    assert outcome.nemesis_errors == []
    return outcome.verdict.hard_violations > 0


@DEFAULT_IMAGES
@pytest.mark.parametrize(
    ("fault", "hard", "ttl_ms", "work_ms"),
    [("server-pause", False, 200, 50), ("crash-restart", True, 8000, 5000)],
)
def test_docker_server_faults_act_on_the_containers(
    fault: str, hard: bool, ttl_ms: int, work_ms: int, docker_out: Path
) -> None:
    """lua survives a paused server; an empty restart of its node loses the lock (hard).
    Killing and restarting a container's server takes about 0.2 s, longer than the default
    50 ms hold (the holder has released before the node is back: no overlap to find): the
    crash-restart run holds the lock 5 s of an 8 s lease, so the others take it from the
    emptied node while the holder still holds it. A run that found no double grant where one
    is due says nothing (tests/seeds.py), and the next seed runs; a hard one where none is
    due fails at once."""

    def run(seed: int) -> Outcome:
        campaign = Campaign(lock="lua", faults=[(fault, {})], provider="docker", duration_s=12,
                            clients=3, ttl_ms=ttl_ms, work_ms=work_ms, stop_on_first=hard,
                            seed=seed)
        return run_campaign(campaign, docker_out / f"seed-{seed}")

    outcome = first_found(run, lambda outcome: _hard(outcome) or not hard)
    verdict = outcome.verdict
    assert outcome.nemesis_errors == []
    assert verdict.verdict != "inconclusive", verdict.inconclusive_reasons
    assert verdict.coverage[fault].effective >= 1, verdict.coverage  # it met the lock
    assert (verdict.hard_violations > 0) is hard
    if not hard:  # a pass counts only with the lock really cycling under the pauses
        assert verdict.counts["lock_cycles"] >= 20, verdict.counts


@DEFAULT_IMAGES
def test_docker_toxiproxy_counts_what_a_partition_dropped_of_a_lock_it_cannot_hook(
    docker_out: Path,
) -> None:
    """The Toxiproxy container counts its links' bytes (``-proxy-metrics``): a partition of
    a lock that talks through a client of its own (the harness sees none of its commands) is
    seen by what it dropped on the client's link, as with the local provider."""
    lock = f"{ROOT / 'tests/redis/unhooked_lock.py'}:make"
    campaign = Campaign(lock=lock, faults=[("partition", {})], provider="docker",
                        duration_s=6, clients=2)
    outcome = run_campaign(campaign, docker_out)
    assert outcome.nemesis_errors == []
    events = [json.loads(line) for line in (outcome.run_dir / "history.jsonl").open()]
    assert any(e["f"] == "dropped" and e["value"]["requests"] > 0 for e in events)
    assert outcome.verdict.coverage["partition"].effective >= 1, outcome.verdict.coverage
    # Tested, and sound: no reason it did not test, no hard violation (at the 200 ms lease a
    # loaded machine's stall may let one lapse beside it: soft, which this is not about).
    assert outcome.verdict.inconclusive_reasons == [], outcome.verdict.inconclusive_reasons
    assert outcome.verdict.hard_violations == 0, outcome.verdict.explanations


@DEFAULT_IMAGES
def test_docker_sentinel_failover_breaks_lua(docker_out: Path) -> None:
    outcome = first_found(
        lambda seed: run_campaign(
            Campaign(lock="lua", faults=[("failover", {})], provider="docker", duration_s=8,
                     stop_on_first=True, seed=seed),
            docker_out / f"seed-{seed}",
        ),
        _hard,
    )
    assert outcome.nemesis_errors == []
    assert outcome.verdict.hard_violations > 0


@DEFAULT_IMAGES
def test_a_run_publishes_only_the_ports_its_clients_need() -> None:
    """Every published port costs the engine time to set up and tear down (its NAT rules):
    2 clients × 1 node publish 2 client ports, not the whole range; a third client's link
    is refused in one line, and so are more clients than the range holds."""
    with DockerTopology("standalone", nodes=1, clients=2) as topo:
        published = topo._container(LAYOUT.toxiproxy).attrs["NetworkSettings"]["Ports"]
        first = LAYOUT.client_ports[0]
        assert {f"{first}/tcp", f"{first + 1}/tcp"} <= set(published)
        assert f"{first + 2}/tcp" not in published
        topo.client_view("c1"), topo.client_view("c2")
        with pytest.raises(UsageError, match="started for fewer clients"):
            topo.client_view("c3")
    with pytest.raises(UsageError, match="run at most 20 clients"):
        DockerTopology("standalone", nodes=5, clients=21)


@DEFAULT_IMAGES
def test_docker_cluster_failover_breaks_lua_through_each_clients_proxies(docker_out: Path) -> None:
    """003 on a Redis Cluster in containers: six nodes announce the Toxiproxy container's
    address, so the slot map, replication and the cluster bus all cross links; the lock key's
    master is cut off and its replica takes over before the key reached it (hard)."""
    with DockerTopology("cluster") as topo:
        roles = sorted(node["role"] for node in topo.describe()["nodes"])
        assert roles == ["master"] * 3 + ["slave"] * 3
        view = topo.client_view("c1")
        assert view.cluster and set(view.route.values()) == set(view.nodes)
        master = topo.master_index(KEY)
        ctx = build_context(view, lock_name=KEY, ttl_ms=500)
        try:
            lock = resolve("lua").create(ctx)
            lease = lock.acquire()  # the client's cluster client follows the slot map ...
            assert lease is not None and lock.release(lease) is True
            node = ctx.primary.get_node_from_key(KEY)  # type: ignore[attr-defined]
        finally:
            ctx.close()
        assert (node.host, node.port) == view.nodes[master]  # ... to its own proxy
        replica = master + 3  # CLUSTER_MASTERS: no failover has moved roles yet
        assert [link.name for link in topo.cluster_links(master)] == [
            f"int-c{master}", f"bus-c{master}", f"bus-c{replica}"
        ]
    outcome = first_found(
        lambda seed: run_campaign(
            Campaign(lock="lua", faults=[("failover", {})], topology="cluster",
                     provider="docker", duration_s=15, stop_on_first=True, seed=seed),
            docker_out / f"seed-{seed}",
        ),
        _hard,
    )
    assert outcome.nemesis_errors == []
    assert outcome.verdict.hard_violations > 0
    assert outcome.verdict.violations[0].cause == "failover"


@pytest.mark.images("valkey-8.1", "toxiproxy")
def test_docker_clock_jump_breaks_redlock_and_the_run_records_its_images(
    docker_out: Path,
) -> None:
    """Kleppmann's scenario in containers: libfaketime in lockchaos's images, the offset file
    rewritten in the nodes the holder counted on (standalone, 5 nodes, on valkey-8.1 here);
    campaign.json and report.html name the images the run used, with their ids."""
    # A holder works 300 ms of its 400 ms lease: wide enough for the jump (a write into three
    # containers) to land inside it even on a loaded machine. At 150 ms a loaded machine's
    # jumps all missed in 3 seeds (4-5 fired each, ~40 grants in 15 s, no double grant); one
    # seed's all missing is why the next seed runs.
    outcome = first_found(
        lambda seed: run_campaign(
            Campaign(lock="redlock", faults=[("clock-jump", {"offset_ms": 1200})],
                     provider="docker", server="valkey-8.1", duration_s=15, ttl_ms=400,
                     work_ms=300, stop_on_first=True, seed=seed),
            docker_out / f"seed-{seed}",
        ),
        _hard,
    )
    assert outcome.nemesis_errors == []
    assert outcome.verdict.hard_violations > 0
    assert any("clock-jump" in line for line in outcome.verdict.explanations)
    recorded = json.loads((outcome.run_dir / "campaign.json").read_text())
    assert recorded["server"] == "valkey-8.1" and recorded["layout"]["nodes"] == 5
    valkey, toxiproxy = images.image_for("valkey-8.1"), images.image_for("toxiproxy")
    assert set(recorded["images"]) == {valkey, toxiproxy}
    assert all(ident.startswith("sha256:") for ident in recorded["images"].values())
    page = (outcome.run_dir / "report.html").read_text()
    short = recorded["images"][valkey].removeprefix("sha256:")[:12]
    assert f"{valkey} ({short})" in page and "--server valkey-8.1" in page


@pytest.mark.images("redis-8.0", "toxiproxy")
def test_docker_client_clock_breaks_getset_timestamp(docker_out: Path) -> None:
    """client-clock moves a client's clock (a process here, under libfaketime): it needs
    nothing of the provider, and breaks the GETSET-timestamp lock against containers too."""
    outcome = first_found(
        lambda seed: run_campaign(
            Campaign(lock="getset-timestamp", faults=[("client-clock", {})],
                     provider="docker", server="redis-8.0", clients=3, duration_s=8,
                     stop_on_first=True, seed=seed),
            docker_out / f"seed-{seed}",
        ),
        _hard,
    )
    assert outcome.nemesis_errors == []
    assert outcome.verdict.hard_violations > 0


def _run_labels() -> list[str]:
    return label_values("ps -a", RUN_LABEL)


@DEFAULT_IMAGES
def test_containers_do_not_outlive_a_sigkilled_runner() -> None:
    """`lockchaos up` killed with SIGKILL (no teardown at all): its reaper removes every
    container and the network labelled with its run id."""
    runner = subprocess.Popen(
        [sys.executable, "-m", "chaos.cli", "up", "--provider", "docker", "--nodes", "1",
         "--hold", "300", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    mine = f"{runner.pid}-"
    try:
        assert runner.stdout is not None
        described = json.loads(runner.stdout.readline() or "{}")  # printed once it holds
        assert described.get("provider") == "docker" and runner.poll() is None
        owned = [run for run in _run_labels() if run.startswith(mine)]
        assert len(owned) == 3  # toxiproxy, resource, n0
    finally:
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=30)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(r.startswith(mine) for r in _run_labels()):
        time.sleep(0.5)
    assert not [r for r in _run_labels() if r.startswith(mine)]
    run_id = owned[0]
    assert docker_ids("network ls", f"{RUN_LABEL}={run_id}") == []


@DEFAULT_IMAGES
def test_two_concurrent_runs_share_the_engine_and_leave_nothing_behind(tmp_path: Path) -> None:
    """Two `lockchaos run --provider docker` at once, each in a process of its own, beside a
    topology this test holds: each run is a Compose project of its own on host ports the
    engine chose, so both run at the same time, each gets its verdict (lua under no fault:
    ok, exit 0; runs that shared a server would lose each other's writes), neither touches
    the held topology, and nothing of either is left afterwards (containers, networks,
    volumes). A 1 s lease: a loaded machine's stalls must not expire a holder's."""
    with DockerTopology("standalone", nodes=1) as held:
        held_link = RemoteServer("c1-n0", *held.client_view("c1").nodes[0])
        argv = [sys.executable, "-m", "chaos.cli", "run", "--lock", "lua", "--provider",
                "docker", "--duration", "3", "--ttl-ms", "1000", "--out"]  # fmt: skip
        runs = [
            subprocess.Popen(
                [*argv, str(tmp_path / f"run{i}")],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for i in range(2)
        ]
        projects = [project_name(f"{run.pid}-") for run in runs]
        together = False  # both runs' containers up at one moment
        try:
            deadline = time.monotonic() + 90
            while not together and time.monotonic() < deadline and all(
                run.poll() is None for run in runs
            ):
                up = label_values("ps", PROJECT_LABEL)
                together = all(any(p.startswith(mine) for p in up) for mine in projects)
                time.sleep(0.2)
            outputs = [run.communicate(timeout=90)[0] for run in runs]
        finally:
            for run in runs:
                run.kill()
                run.wait(timeout=30)
        assert together
        for run, output in zip(runs, outputs, strict=True):
            assert run.returncode == 0, output[-2000:]
            assert "verdict: ok" in output
            assert left_by(run.pid) == []
        assert held.nodes[0].ping() and held.resource.ping() and held_link.ping()
    assert left_by(os.getpid()) == []


def _exited(compose: list[str], service: str, cwd: Path, env: dict[str, str],
            within_s: float = 60.0) -> list[str]:
    """``service``'s container state and exit code once it has exited (``["exited", "0"]``),
    polled for ``within_s`` at most: what it is then, if it has not."""
    deadline = time.monotonic() + within_s
    while True:
        ps = subprocess.run([*compose, "ps", "--all", "--format", "{{.State}} {{.ExitCode}}",
                             service], cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=60)
        state = ps.stdout.split()
        if state[:1] == ["exited"] or time.monotonic() > deadline:
            return state
        time.sleep(1)


@pytest.mark.slow  # the Compose demo from its images up: a set-up proof, `make test-long`
@pytest.mark.images("python", "redis-7.0", "toxiproxy")  # the demo image: built on python
def test_docker_compose_up_runs_seed_001s_demo() -> None:
    """`cd compose && docker compose up --scale worker=4`, offline: the demo services' image
    (compose/Dockerfile builds FROM python:3.11-slim where a registry is reachable) is built
    by chaos.images instead — Debian's python3 with the wheelhouse's dependencies
    (built once, about 80 s), plus a wheel of this checkout (seconds, when it changed)."""
    build_images(["demo"], progress=lambda line: None, source=ROOT)
    env = {**os.environ, "COMPOSE_PROJECT_NAME": f"{PROJECT}-demo",
           "LOCKCHAOS_DEMO_DURATION_S": "10"}
    compose = ["docker", "compose"]  # in compose/, as the docs say
    cwd = DEMO_DIR
    try:
        up = subprocess.run([*compose, "up", "--detach", "--scale", "worker=4"], cwd=cwd,
                            env=env, capture_output=True, text=True, timeout=300)
        assert up.returncode == 0, up.stderr[-2000:]
        waited = subprocess.run([*compose, "wait", "checker"], cwd=cwd, env=env,
                                capture_output=True, text=True, timeout=120)
        # The checker's exit status, as the engine keeps it: `compose wait` printed it ("0",
        # or 'container "…" exited with status code 0'), but once printed nothing at all on
        # a loaded machine (a fresh clone's CI), the checker having printed its verdict.
        state = _exited(compose, "checker", cwd, env)
        logs = subprocess.run([*compose, "logs", "checker"], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=60)
        assert state == ["exited", "0"], (state, waited.stdout, waited.stderr,  # no hard
                                          logs.stdout[-2000:])
        assert "verdict:" in logs.stdout and "soft" in logs.stdout
    finally:
        subprocess.run([*compose, "down", "--volumes"], cwd=cwd, env=env, capture_output=True,
                       timeout=120)
