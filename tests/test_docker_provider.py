"""The docker provider and its Compose files: the provider's (package data) and the
Toxiproxy config checked against what the provider expects, seed 001's demo file (compose/,
which includes it) against what its services read (no engine needed), the demo services run
against local processes, and — where a Docker engine, Compose v2 and lockchaos's images are here
(scripts/docker-setup.sh provides them) — the provider for real."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from chaos import checker, topology
from chaos.cli import main
from chaos.commands import compose as compose_demo
from chaos.errors import UsageError
from chaos.images.build import build as build_images
from chaos.locks import build_context, create
from chaos.nemesis import FAULTS
from chaos.run.campaign import Campaign, run_campaign
from chaos.topology import images
from chaos.topology.docker import (
    COMPOSE_FILE,
    DOWN_FLAG,
    IMAGE_VARIABLES,
    LAYOUT,
    PROJECT,
    RUN_LABEL,
    SERVER_PID,
    DockerTopology,
)
from chaos.topology.remote import RemoteNode

ROOT = Path(__file__).resolve().parents[1]
TOXIPROXY_CONFIG = COMPOSE_FILE.parent / "toxiproxy.json"
DEMO_DIR = ROOT / "compose"  # seed 001's Compose demo: a checkout's, not the package's
KEY = "lockchaos:lock"  # the workload's lock key


def _engine_answers() -> bool:
    try:
        done = subprocess.run(["docker", "info"], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _docker_missing() -> str:
    """What the docker provider lacks here, in one line ("" when nothing)."""
    if not ENGINE:
        return "no Docker engine: `docker info` failed (scripts/docker-setup.sh starts one as root)"
    try:
        compose = subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        compose = None
    if compose is None or compose.returncode != 0:
        return "no Compose v2: `docker compose version` failed (scripts/docker-setup.sh builds it)"
    absent = []
    for image in IMAGE_VARIABLES.values():
        shown = subprocess.run(["docker", "image", "inspect", image], capture_output=True,
                               timeout=20)  # fmt: skip
        if shown.returncode != 0:
            absent.append(image)
    if absent:
        return f"no image {', '.join(absent)} (scripts/docker-setup.sh builds them)"
    return ""


ENGINE = _engine_answers()
MISSING = _docker_missing()
needs_engine = pytest.mark.skipif(bool(MISSING), reason=MISSING)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    parsed: dict[str, Any] = yaml.safe_load(COMPOSE_FILE.read_text())
    return parsed


@pytest.fixture(scope="module")
def demo_compose() -> dict[str, Any]:
    parsed: dict[str, Any] = yaml.safe_load((DEMO_DIR / "docker-compose.yml").read_text())
    return parsed


def test_the_demo_file_includes_the_providers_from_the_package(
    demo_compose: dict[str, Any],
) -> None:
    """The demo runs on the provider's own Toxiproxy and resource: the one Compose file
    of them, the package's (so a checkout's copy cannot drift from what runs)."""
    (included,) = demo_compose["include"]
    assert (DEMO_DIR / included).resolve() == COMPOSE_FILE.resolve()
    assert demo_compose["name"] == PROJECT


@pytest.fixture(scope="module")
def proxies() -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in json.loads(TOXIPROXY_CONFIG.read_text())}


def _server_argv(service: dict[str, Any]) -> list[str]:
    """The server's argv: the command, or what follows the supervising shell's script."""
    command: list[str] = service["command"]
    return command[3:] if command[:2] == ["sh", "-c"] else command


def _published(service: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``(host ip, host port(s), container port(s))`` of every published port (a part may
    be a ``${VARIABLE:-default}``, colons and all)."""
    part = r"(\$\{[^}]*\}|[^:]+)"
    found = [re.fullmatch(f"{part}:{part}:{part}", entry) for entry in service.get("ports", [])]
    assert all(found), service.get("ports")
    return [(m[1], m[2], m[3]) for m in found if m]


# -- the Compose file and the Toxiproxy config, without an engine --------------------------


def test_images_are_lockchaos_own_by_default_and_every_port_is_on_loopback(
    compose: dict[str, Any],
) -> None:
    """lockchaos's images (never pulled) unless a variable names another, e.g. the official
    one; every container and the network carry the run label the reaper removes them by."""
    own = {
        "LOCKCHAOS_REDIS_IMAGE": images.image_for("redis-7.0"),
        "LOCKCHAOS_TOXIPROXY_IMAGE": images.image_for("toxiproxy"),
    }
    assert own == IMAGE_VARIABLES
    redis_image, toxiproxy_image = (f"${{{var}:-{own}}}" for var, own in IMAGE_VARIABLES.items())
    services = compose["services"]
    run_label = {RUN_LABEL: "${LOCKCHAOS_RUN:-manual}"}
    assert services[LAYOUT.toxiproxy]["image"] == toxiproxy_image
    redis_services = [LAYOUT.resource[0], *(n for n, _ in LAYOUT.standalone),
                      *(n for n, _ in LAYOUT.replicated), *(n for n, _ in LAYOUT.sentinels),
                      *(n for n, _ in LAYOUT.cluster)]
    for name in redis_services:
        assert services[name]["image"] == redis_image, name
        assert services[name].get("restart", "no") == "no", name  # Docker must not revive
    for name in [LAYOUT.toxiproxy, *redis_services]:
        assert services[name]["pull_policy"] == "${LOCKCHAOS_PULL_POLICY:-never}", name
        assert services[name]["labels"] == run_label, name
    assert compose["networks"]["default"]["labels"] == run_label
    for name, service in services.items():
        assert all(ip == "127.0.0.1" for ip, _, _ in _published(service)), name


def test_data_nodes_and_resource_are_published_where_the_provider_looks(
    compose: dict[str, Any],
) -> None:
    services = compose["services"]
    for name, port in [LAYOUT.resource, *LAYOUT.standalone, *LAYOUT.replicated]:
        assert _published(services[name]) == [("127.0.0.1", str(port), str(LAYOUT.redis_port))]
        command = _server_argv(services[name])
        assert command[:5] == ["redis-server", "--save", "", "--appendonly", "no"], name
    for name, _ in [*LAYOUT.standalone, *LAYOUT.replicated]:  # what DockerNode.kill relies on
        command = services[name]["command"]
        assert command[:2] == ["sh", "-c"] and DOWN_FLAG in command[2], name
        assert f"> {SERVER_PID}" in command[2].replace("$$", "$"), name
        assert command[command.index("--protected-mode") + 1] == "no", name
    for name, _ in LAYOUT.standalone:
        assert "profiles" not in services[name]  # `docker compose up` starts them all
    for name, _ in [*LAYOUT.replicated, *LAYOUT.sentinels]:
        assert services[name]["profiles"] == ["sentinel"], name


def test_the_sentinel_set_is_wired_through_toxiproxy(
    compose: dict[str, Any], proxies: dict[str, dict[str, Any]]
) -> None:
    services = compose["services"]
    master = str(LAYOUT.internal_ports[0])
    for i, (name, _) in enumerate(LAYOUT.replicated):
        command = _server_argv(services[name])
        announced = command[command.index("--replica-announce-ip") + 1 :][:3]
        assert announced == [LAYOUT.toxiproxy, "--replica-announce-port",
                             str(LAYOUT.internal_ports[i])]
        link = proxies[LAYOUT.internal_link(i)]
        assert link["listen"] == f"0.0.0.0:{LAYOUT.internal_ports[i]}"
        assert link["upstream"] == f"{name}:{LAYOUT.redis_port}"
        if i:
            assert command[-3:] == ["--replicaof", LAYOUT.toxiproxy, master]
        else:
            assert "--replicaof" not in command
    for j, (name, port) in enumerate(LAYOUT.sentinels):
        service = services[name]
        script = service["command"][-1]
        assert f"'sentinel monitor {LAYOUT.master_name} {LAYOUT.toxiproxy} {master} 2'" in script
        assert f"'sentinel announce-ip {LAYOUT.toxiproxy}'" in script
        assert service["environment"] == {"ANNOUNCE_PORT": str(port)}
        link = proxies[LAYOUT.sentinel_link(j)]
        assert link["listen"] == f"0.0.0.0:{port}"
        assert link["upstream"] == f"{name}:{LAYOUT.sentinel_port}"
    published = _published(services[LAYOUT.toxiproxy])
    first, last = LAYOUT.sentinels[0][1], LAYOUT.sentinels[-1][1]
    assert ("127.0.0.1", f"{first}-{last}", f"{first}-{last}") in published


def test_the_cluster_nodes_announce_their_links_and_are_supervised(
    compose: dict[str, Any], proxies: dict[str, dict[str, Any]]
) -> None:
    """Each cluster node announces the Toxiproxy's IP (looked up by its name at each start)
    with its own int-cI and bus-cI ports, which forward to that node; crash-restart's
    supervisor runs it; it is published where ``DockerTopology`` looks."""
    services = compose["services"]
    for i, (name, port) in enumerate(LAYOUT.cluster):
        service = services[name]
        assert service["profiles"] == ["cluster"], name
        assert _published(service) == [("127.0.0.1", str(port), str(LAYOUT.redis_port))]
        command = service["command"]
        assert command[:2] == ["sh", "-c"] and DOWN_FLAG in command[2], name
        server = command[-1].replace("$$", "$")
        assert server.startswith("exec redis-server ") and "--cluster-enabled yes" in server
        assert f'--cluster-announce-ip "$(getent hosts {LAYOUT.toxiproxy} ' in server
        assert service["environment"] == {
            "CLUSTER_ANNOUNCE_PORT": str(LAYOUT.cluster_ports[i]),
            "CLUSTER_ANNOUNCE_BUS_PORT": str(LAYOUT.cluster_bus_ports[i]),
        }
        link = proxies[LAYOUT.internal_link(i, "cluster")]
        assert (link["listen"], link["upstream"]) == (
            f"0.0.0.0:{LAYOUT.cluster_ports[i]}", f"{name}:{LAYOUT.redis_port}"
        )
        bus = proxies[LAYOUT.bus_link(i)]
        assert (bus["listen"], bus["upstream"]) == (
            f"0.0.0.0:{LAYOUT.cluster_bus_ports[i]}", f"{name}:{LAYOUT.redis_port + 10000}"
        )


def test_toxiproxy_publishes_its_api_and_the_clients_port_range(
    compose: dict[str, Any], proxies: dict[str, dict[str, Any]]
) -> None:
    service = compose["services"][LAYOUT.toxiproxy]
    ports = LAYOUT.client_ports
    span = f"${{LOCKCHAOS_CLIENT_PORTS:-{ports[0]}-{ports[-1]}}}"  # a run publishes its part
    assert ("127.0.0.1", span, span) in _published(service)
    assert ("127.0.0.1", str(LAYOUT.api_port), str(LAYOUT.api_port)) in _published(service)
    assert f"-port={LAYOUT.api_port}" in service["command"]
    assert "-config=/config/toxiproxy.json" in service["command"]
    assert "./toxiproxy.json:/config/toxiproxy.json:ro" in service["volumes"]
    static = {int(p["listen"].rsplit(":", 1)[1]) for p in proxies.values()}
    assert not static & set(ports)  # clients' links never collide with the static ones


def test_toxiproxy_accepts_the_config(proxies: dict[str, dict[str, Any]]) -> None:
    """The file is what Toxiproxy's -config takes: /populate (the same loader) accepts it
    (listening on 127.0.0.1 here, as everything a test starts does)."""
    import requests

    with topology.start("standalone", nodes=1) as topo:
        local = [{**p, "listen": "127.0.0.1:0"} for p in proxies.values()]
        reply = requests.post(f"{topo.toxiproxy.url}/populate", json=local, timeout=5)
        assert reply.status_code == 201, reply.text
        assert {p["name"] for p in reply.json()["proxies"]} == set(proxies)


def test_the_demo_services_run_lockchaos_with_settings_it_reads(
    demo_compose: dict[str, Any],
) -> None:
    services = demo_compose["services"]
    runner = CliRunner()
    helps = ""
    for name, command in [("demo-init", "init"), ("worker", "worker"), ("checker", "check")]:
        service = services[name]
        assert service["command"] == ["python", "-m", "chaos.cli", "compose", command]
        assert service["build"] == {"context": "..", "dockerfile": "compose/Dockerfile"}
        assert service["volumes"] == ["history:/history"]
        shown = runner.invoke(compose_demo.app, [command, "--help"], env={"COLUMNS": "200"})
        assert shown.exit_code == 0
        helps += shown.output
    for variable in services["worker"]["environment"]:
        assert f"env var: {variable}" in helps, variable  # some command reads it
    worker = services["worker"]
    assert worker["environment"]["LOCKCHAOS_DEMO_REDIS"] == f"demo-redis:{LAYOUT.redis_port}"
    assert worker["depends_on"]["demo-init"] == {"condition": "service_completed_successfully"}
    assert worker["depends_on"]["demo-redis"] == {"condition": "service_healthy"}
    assert services["checker"]["depends_on"]["worker"] == {
        "condition": "service_completed_successfully"
    }
    dockerfile = (DEMO_DIR / "Dockerfile").read_text()
    assert "COPY chaos ./chaos" in dockerfile and "pip install" in dockerfile
    assert "!chaos" in (ROOT / ".dockerignore").read_text().splitlines()


def test_the_demo_redis_runs_as_seed_001s_with_appendonly_yes(
    compose: dict[str, Any], demo_compose: dict[str, Any]
) -> None:
    """Seed 001's compose file runs ``redis-server --appendonly yes`` with /data on a volume;
    the demo's own node does the same, while every data node the docker provider runs keeps
    nothing on disk (its crash-restart must bring a node back empty)."""
    services = compose["services"]
    demo = demo_compose["services"]["demo-redis"]
    assert demo["command"] == ["redis-server", "--appendonly", "yes"]
    assert demo["volumes"] == ["demo-data:/data"] and "demo-data" in demo_compose["volumes"]
    resource = services[LAYOUT.resource[0]]
    for setting in ("image", "pull_policy", "labels", "healthcheck"):
        assert demo[setting] == resource[setting], setting  # a server as the provider's
    assert "profiles" not in demo and "ports" not in demo  # `up` starts it; nothing published
    assert "demo-redis" not in services  # the provider's file has none of the demo
    for name, service in services.items():
        command = " ".join(service.get("command", []))
        if "redis-server" in command:
            assert "--appendonly no" in command, name
    shown = CliRunner().invoke(compose_demo.app, ["worker", "--help"], env={"COLUMNS": "200"})
    assert "demo-redis:6379" in shown.output  # `lockchaos compose worker`'s default node


# -- seed 001's demo services, against local processes -------------------------------------


def _demo(command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "chaos.cli", "compose", command],
        env={**os.environ, **env}, capture_output=True, text=True, timeout=30,
    )  # fmt: skip


def test_the_demo_services_reproduce_seed_001_and_the_checker_judges_it(tmp_path: Path) -> None:
    """init, two workers at once (each through its own Toxiproxy link), then the checker:
    the seed's "lock timeout!" cycles overlap with the next holder (soft) and lose writes."""
    with topology.start("standalone", nodes=1) as topo:
        node, resource = topo.nodes[0].address, topo.resource.address
        env = {
            "LOCKCHAOS_DEMO_HISTORY": str(tmp_path / "history.jsonl"),
            "LOCKCHAOS_DEMO_RESOURCE": f"127.0.0.1:{resource[1]}",
            "LOCKCHAOS_DEMO_REDIS": f"127.0.0.1:{node[1]}",
            "LOCKCHAOS_DEMO_TOXIPROXY": topo.toxiproxy.url,
            "LOCKCHAOS_DEMO_LISTEN_HOST": "127.0.0.1",
            "LOCKCHAOS_DEMO_TTL_MS": "100",
            "LOCKCHAOS_DEMO_DURATION_S": "2.5",
            "LOCKCHAOS_DEMO_LOSE_LOCK_P": "0.5",
            "LOCKCHAOS_DEMO_FAIL_ON": "soft",
        }
        assert _demo("init", env).returncode == 0
        workers = [
            subprocess.Popen(
                [sys.executable, "-m", "chaos.cli", "compose", "worker"],
                env={**os.environ, **env, "LOCKCHAOS_DEMO_CLIENT_ID": f"w{i}"},
                stdout=subprocess.PIPE,
                text=True,
            )
            for i in (1, 2)
        ]
        try:
            outputs = [w.communicate(timeout=30)[0] for w in workers]
        finally:
            for w in workers:
                w.kill()
        assert [w.returncode for w in workers] == [0, 0]
        assert all("lock cycles" in out for out in outputs)
        links = topo.toxiproxy.proxy_names()
        assert not any(name.startswith(("w1-", "w2-")) for name in links)  # deleted
        judged = _demo("check", env)
    assert judged.returncode == 1, judged.stderr  # fails on soft, as asked
    verdict = checker.check_file(tmp_path / "history.jsonl")
    assert verdict.lock == compose_demo.LOCK and verdict.hard_violations == 0
    assert verdict.soft_violations >= 1 and verdict.counts["extend_ok"] > 0
    assert "lease" in judged.stdout  # the explanation: a holder outlived its lease


# -- refused up front, engine or not ---------------------------------------------------------


def test_a_fault_docker_cannot_do_is_refused_in_one_line() -> None:
    fault = "crash-restart-aof"
    with pytest.raises(UsageError) as caught:
        topology.open_provider("docker", "standalone", faults=[FAULTS[fault]])
    assert str(caught.value) == (
        f"{fault} needs a provider that can start servers with appendfsync-always "
        f"persistence, which the docker provider cannot: drop {fault} or use --provider local"
    )


def test_a_run_asking_docker_for_aof_persistence_exits_2_before_starting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["run", "--lock", "lua", "--faults", "crash-restart-aof", "--provider", "docker",
            "--out", str(tmp_path)]
    assert main(args) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("lockchaos: crash-restart-aof needs a provider that can start")
    assert not list(tmp_path.iterdir())  # no run directory either


def test_the_docker_provider_jumps_clocks_the_external_one_cannot() -> None:
    assert topology.base.CLOCK in topology.CAPABILITIES["docker"]
    topology.check_provider("docker", faults=[FAULTS["clock-jump"]])  # not refused
    with pytest.raises(UsageError, match="the external provider cannot jump server clocks"):
        RemoteNode("n0", "127.0.0.1", 1).set_clock_offset(1.0)


@pytest.mark.parametrize(
    ("provider", "server", "message"),
    [
        ("local", "redis-8.0", "--server redis-8.0 needs --provider docker: the local provider "
         "runs its own Redis 7.0 build (redis-7.0)"),
        ("docker", "redis-9", "--server must be one of redis-7.0, redis-8.0, valkey-8.1, "
         "valkey-9.1 (got 'redis-9')"),
        ("external", "valkey-8.1", "--server is for --provider docker (or local, redis-7.0): "
         "the external provider runs the servers its --provider-config names"),
    ],
)
def test_a_server_the_provider_cannot_run_is_refused_in_one_line(
    provider: str, server: str, message: str
) -> None:
    with pytest.raises(UsageError) as caught:
        topology.check_server(provider, server)
    assert str(caught.value) == message


def test_run_audit_explore_and_compare_refuse_a_server_before_starting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every command takes --server; the local provider runs redis-7.0 (or its default)."""
    topology.check_server("local", "redis-7.0")
    topology.check_server("local", None)
    commands = [
        ["run", "--lock", "lua", "--duration", "1"],
        ["audit", "--lock", "lua", "--budget", "10"],
        ["explore", "--lock", "lua", "--max-examples", "1"],
        ["compare", "--locks", "lua", "--faults", "slow-work"],
    ]
    for command in commands:
        assert main([*command, "--server", "valkey-8.1", "--out", str(tmp_path)]) == 2, command
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert line == ("lockchaos: --server valkey-8.1 needs --provider docker: the local "
                        "provider runs its own Redis 7.0 build (redis-7.0)"), command
    assert not list(tmp_path.iterdir())


def test_compare_servers_are_a_dimension_of_the_plan() -> None:
    from chaos.run.compare import claim_for, plan_matrix

    plans = plan_matrix(["lua"], ["slow-work", "failover"], 5.0, provider="docker",
                        servers=["redis-7.0", "valkey-8.1"])
    assert [plan.name for plan in plans] == [
        "lua @ redis-7.0 × slow-work", "lua @ valkey-8.1 × slow-work",
        "lua @ redis-7.0 × failover", "lua @ valkey-8.1 × failover",
    ]
    assert all(claim_for(plan) is not None for plan in plans)  # the claims hold on each
    assert plans[1].campaign(1).server == "valkey-8.1"
    assert main(["compare", "--locks", "lua", "--faults", "slow-work", "--server", "redis-7.0",
                 "--servers", "redis-8.0"]) == 2


def test_without_an_engine_the_docker_provider_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An engine that does not answer (here: DOCKER_HOST naming a socket nobody listens on,
    which is what the docker CLI and SDK see on a machine without one)."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'no-engine.sock'}")
    assert main(["up", "--provider", "docker", "--hold", "1"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("lockchaos: the docker provider needs ")
    assert "--provider local" in line or "docker compose" in line


# -- with a Docker engine --------------------------------------------------------------------


def _docker_ids(kind: str, label: str) -> list[str]:
    """Ids of the containers (``kind="ps -a"``) or networks (``"network ls"``) with ``label``."""
    done = subprocess.run(
        ["docker", *kind.split(), "-q", "--filter", f"label={label}"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    return done.stdout.split()


def _containers() -> list[str]:
    project = f"com.docker.compose.project={PROJECT}"
    return _docker_ids("ps -a", project) + _docker_ids("network ls", project)


@pytest.fixture
def docker_out(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    assert _containers() == []  # everything the provider started is gone, network included


@needs_engine
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
    emptied node while the holder still holds it."""
    campaign = Campaign(lock="lua", faults=[(fault, {})], provider="docker", duration_s=12,
                        clients=3, ttl_ms=ttl_ms, work_ms=work_ms, stop_on_first=hard)
    outcome = run_campaign(campaign, docker_out)
    assert outcome.nemesis_errors == []
    assert outcome.verdict.counts["faults"] >= 1
    assert (outcome.verdict.hard_violations > 0) is hard


@needs_engine
def test_docker_sentinel_failover_breaks_lua(docker_out: Path) -> None:
    campaign = Campaign(lock="lua", faults=[("failover", {})], provider="docker",
                        duration_s=8, stop_on_first=True)
    outcome = run_campaign(campaign, docker_out)
    assert outcome.nemesis_errors == []
    assert outcome.verdict.hard_violations > 0


@needs_engine
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


@needs_engine
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
            lock = create("lua", ctx)
            lease = lock.acquire()  # the client's cluster client follows the slot map ...
            assert lease is not None and lock.release(lease) is True
            node = ctx.primary.get_node_from_key(KEY)  # type: ignore[attr-defined]
        finally:
            ctx.close()
        assert (node.host, node.port) == view.nodes[master]  # ... to its own proxy
        assert [link.name for link in topo.cluster_links(master)] == [
            f"int-c{master}", f"bus-c{master}"
        ]
    campaign = Campaign(lock="lua", faults=[("failover", {})], topology="cluster",
                        provider="docker", duration_s=15, stop_on_first=True)
    outcome = run_campaign(campaign, docker_out)
    assert outcome.nemesis_errors == []
    assert outcome.verdict.hard_violations > 0
    assert outcome.verdict.violations[0].cause == "failover"


@needs_engine
def test_docker_clock_jump_breaks_redlock_and_the_run_records_its_images(
    docker_out: Path,
) -> None:
    """Kleppmann's scenario in containers: libfaketime in lockchaos's images, the offset file
    rewritten in the nodes the holder counted on (standalone, 5 nodes, on valkey-8.1 here);
    campaign.json and report.html name the images the run used, with their ids."""
    # A holder works 150 ms of its 400 ms lease: wide enough for the jump (a write into three
    # containers) to land inside it even on a loaded machine.
    campaign = Campaign(lock="redlock", faults=[("clock-jump", {"offset_ms": 1200})],
                        provider="docker", server="valkey-8.1", duration_s=15, ttl_ms=400,
                        work_ms=150, stop_on_first=True)
    outcome = run_campaign(campaign, docker_out)
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


@needs_engine
def test_docker_client_clock_breaks_getset_timestamp(docker_out: Path) -> None:
    """client-clock moves a client's clock (a process here, under libfaketime): it needs
    nothing of the provider, and breaks the GETSET-timestamp lock against containers too."""
    campaign = Campaign(lock="getset-timestamp", faults=[("client-clock", {})],
                        provider="docker", server="redis-8.0", clients=3, duration_s=8,
                        stop_on_first=True)
    outcome = run_campaign(campaign, docker_out)
    assert outcome.nemesis_errors == []
    assert outcome.verdict.hard_violations > 0


@needs_engine
@pytest.mark.parametrize(("locks", "column"), [("del-release,lua", "slow-work"),
                                               ("lua", "failover")])
def test_compare_across_servers_matches_the_truth_table_on_each(
    locks: str, column: str, docker_out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`compare --servers redis-7.0,redis-8.0,valkey-8.1`: one matrix whose rows are
    `lock @ server`, every cell as the truth table claims on every server (split in two
    columns to keep each test near a minute and a half; del-release × failover has no claim)."""
    servers = list(images.SERVERS)
    args = ["compare", "--provider", "docker", "--servers", ",".join(servers), "--locks",
            locks, "--faults", column, "--duration", "4", "--out", str(docker_out)]
    assert main(args) == 0
    index = Path(capsys.readouterr().out.strip().splitlines()[-1])
    matrix = json.loads((index.parent / "matrix.json").read_text())
    rows = [f"{lock} @ {server}" for lock in locks.split(",") for server in servers]
    assert matrix["locks"] == rows
    assert [cell["server"] for cell in matrix["cells"]] == servers * len(locks.split(","))
    for cell in matrix["cells"]:
        assert cell["status"] == "done" and cell["expected"] is not None, cell["lock"]
        assert cell["expected"]["matched"] == 1, (cell["lock"], cell["runs"][0]["truth_problem"])
        run_dir = index.parent / cell["runs"][0]["run_dir"]
        recorded = json.loads((run_dir / "campaign.json").read_text())
        assert recorded["server"] == cell["server"]
        assert images.image_for(cell["server"]) in recorded["images"]
    page = index.read_text()
    assert f"servers {', '.join(servers)}" in page
    assert all(row in page for row in rows)


def _run_labels() -> list[str]:
    done = subprocess.run(
        ["docker", "ps", "-a", "--filter", f"label={RUN_LABEL}",
         "--format", f'{{{{.Label "{RUN_LABEL}"}}}}'],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    return done.stdout.split()


@needs_engine
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
    assert _docker_ids("network ls", f"{RUN_LABEL}={run_id}") == []


@needs_engine
def test_a_second_docker_run_is_refused_while_the_first_lives(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The host ports are fixed: a second run must not take the first one's containers down
    (it would break that run halfway); it gets one line and exit 2, and the first goes on."""
    with DockerTopology("standalone", nodes=1) as first:
        args = ["run", "--lock", "lua", "--provider", "docker", "--out", str(tmp_path)]
        assert main(args) == 2
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert f"another lockchaos run (pid {os.getpid()}) is using the docker provider" in line
        assert first.nodes[0].ping() and first.resource.ping()
    assert _containers() == []


@needs_engine
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
        logs = subprocess.run([*compose, "logs", "checker"], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=60)
        # "0", or 'container "…" exited with status code 0' (Compose 2.29): no hard violation
        assert waited.stdout.split()[-1:] == ["0"], logs.stdout[-2000:]
        assert "verdict:" in logs.stdout and "soft" in logs.stdout
    finally:
        subprocess.run([*compose, "down", "--volumes"], cwd=cwd, env=env, capture_output=True,
                       timeout=120)
