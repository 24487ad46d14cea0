"""The docker provider's files without an engine: the Compose file and the Toxiproxy config
checked against what the provider expects, and what the provider refuses up front, engine or
not. (The provider for real: tests/docker/; seed 001's demo services against local processes:
tests/redis/test_compose_demo.py.)"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from chaos import topology
from chaos.cli import main
from chaos.commands import compose as compose_demo
from chaos.errors import UsageError
from chaos.nemesis import FAULTS
from chaos.topology import images
from chaos.topology.docker import (
    COMPOSE_FILE,
    DOWN_FLAG,
    IMAGE_VARIABLES,
    LAYOUT,
    PROJECT,
    SERVER_PID,
)
from chaos.topology.reaper import RUN_LABEL
from chaos.topology.remote import RemoteNode

ROOT = Path(__file__).resolve().parents[2]
TOXIPROXY_CONFIG = COMPOSE_FILE.parent / "toxiproxy.json"
DEMO_DIR = ROOT / "compose"  # seed 001's Compose demo: a checkout's, not the package's


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
    be a ``${VARIABLE:-default}``, colons and all; no host port: the engine chooses one)."""
    part = r"(\$\{[^}]*\}|[^:]*)"
    found = [re.fullmatch(f"{part}:{part}:{part}", entry) for entry in service.get("ports", [])]
    assert all(found), service.get("ports")
    return [(m[1], m[2], m[3]) for m in found if m]


# -- the Compose file and the Toxiproxy config, without an engine --------------------------


def test_images_are_lockchaos_own_by_default_and_every_port_is_on_loopback(
    compose: dict[str, Any],
) -> None:
    """lockchaos's images (never pulled) unless a variable names another, e.g. the official
    one; every container and the network carry the run label the reaper removes them by;
    every port is published on loopback, at a host port the engine chooses (a run's own:
    runs never compete for one)."""
    own = {
        "LOCKCHAOS_REDIS_IMAGE": images.image_for("redis-7.0"),
        "LOCKCHAOS_TOXIPROXY_IMAGE": images.image_for("toxiproxy"),
    }
    assert own == IMAGE_VARIABLES
    redis_image, toxiproxy_image = (f"${{{var}:-{own}}}" for var, own in IMAGE_VARIABLES.items())
    services = compose["services"]
    run_label = {RUN_LABEL: "${LOCKCHAOS_RUN:-manual}"}
    assert services[LAYOUT.toxiproxy]["image"] == toxiproxy_image
    redis_services = [LAYOUT.resource, *LAYOUT.standalone, *LAYOUT.replicated,
                      *(n for n, _ in LAYOUT.sentinels), *LAYOUT.cluster]
    for name in redis_services:
        assert services[name]["image"] == redis_image, name
        assert services[name].get("restart", "no") == "no", name  # Docker must not revive
    for name in [LAYOUT.toxiproxy, *redis_services]:
        assert services[name]["pull_policy"] == "${LOCKCHAOS_PULL_POLICY:-never}", name
        assert services[name]["labels"] == run_label, name
    assert compose["networks"]["default"]["labels"] == run_label
    assert compose["name"] == PROJECT  # by hand; a run names its own project
    for name, service in services.items():
        assert all((ip, host) == ("127.0.0.1", "") for ip, host, _ in _published(service)), name


def test_data_nodes_and_resource_are_published_where_the_provider_looks(
    compose: dict[str, Any],
) -> None:
    services = compose["services"]
    for name in [LAYOUT.resource, *LAYOUT.standalone, *LAYOUT.replicated]:
        assert _published(services[name]) == [("127.0.0.1", "", str(LAYOUT.redis_port))]
        command = _server_argv(services[name])
        assert command[:5] == ["redis-server", "--save", "", "--appendonly", "no"], name
    for name in [*LAYOUT.standalone, *LAYOUT.replicated]:  # what DockerNode.kill relies on
        command = services[name]["command"]
        assert command[:2] == ["sh", "-c"] and DOWN_FLAG in command[2], name
        assert f"> {SERVER_PID}" in command[2].replace("$$", "$"), name
        assert command[command.index("--protected-mode") + 1] == "no", name
    for name in LAYOUT.standalone:
        assert "profiles" not in services[name]  # `docker compose up` starts them all
    for name in [*LAYOUT.replicated, *(n for n, _ in LAYOUT.sentinels)]:
        assert services[name]["profiles"] == ["sentinel"], name


def test_the_sentinel_set_is_wired_through_toxiproxy(
    compose: dict[str, Any], proxies: dict[str, dict[str, Any]]
) -> None:
    services = compose["services"]
    master = str(LAYOUT.internal_ports[0])
    for i, name in enumerate(LAYOUT.replicated):
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
    assert ("127.0.0.1", "", f"{first}-{last}") in published


def test_the_cluster_nodes_announce_their_links_and_are_supervised(
    compose: dict[str, Any], proxies: dict[str, dict[str, Any]]
) -> None:
    """Each cluster node announces the Toxiproxy's IP (looked up by its name at each start)
    with its own int-cI and bus-cI ports, which forward to that node; crash-restart's
    supervisor runs it; it is published where ``DockerTopology`` looks."""
    services = compose["services"]
    for i, name in enumerate(LAYOUT.cluster):
        service = services[name]
        assert service["profiles"] == ["cluster"], name
        assert _published(service) == [("127.0.0.1", "", str(LAYOUT.redis_port))]
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
    assert ("127.0.0.1", "", span) in _published(service)
    assert ("127.0.0.1", "", str(LAYOUT.api_port)) in _published(service)
    assert f"-port={LAYOUT.api_port}" in service["command"]
    assert "-config=/config/toxiproxy.json" in service["command"]
    assert "./toxiproxy.json:/config/toxiproxy.json:ro" in service["volumes"]
    static = {int(p["listen"].rsplit(":", 1)[1]) for p in proxies.values()}
    assert not static & set(ports)  # clients' links never collide with the static ones


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
    resource = services[LAYOUT.resource]
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
    from chaos.experiments.compare import claim_for, plan_matrix

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
