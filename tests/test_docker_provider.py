"""The docker provider and compose/: the Compose file and the Toxiproxy config checked
against what the provider expects (no engine needed), seed 001's demo services run against
local processes, and — where a Docker engine answers — the provider for real."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
from chaos.nemesis import FAULTS
from chaos.run.campaign import Campaign, run_campaign
from chaos.topology.docker import COMPOSE_FILE, LAYOUT, PROJECT

ROOT = Path(__file__).resolve().parents[1]
TOXIPROXY_CONFIG = COMPOSE_FILE.parent / "toxiproxy.json"


def _engine_answers() -> bool:
    try:
        done = subprocess.run(["docker", "info"], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


ENGINE = _engine_answers()
needs_engine = pytest.mark.skipif(not ENGINE, reason="no Docker engine: `docker info` failed")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    parsed: dict[str, Any] = yaml.safe_load(COMPOSE_FILE.read_text())
    return parsed


@pytest.fixture(scope="module")
def proxies() -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in json.loads(TOXIPROXY_CONFIG.read_text())}


def _published(service: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``(host ip, host port(s), container port(s))`` of every published port."""
    return [tuple(entry.split(":")) for entry in service.get("ports", [])]


# -- the Compose file and the Toxiproxy config, without an engine --------------------------


def test_images_are_the_official_ones_and_every_port_is_on_loopback(
    compose: dict[str, Any],
) -> None:
    services = compose["services"]
    assert services[LAYOUT.toxiproxy]["image"] == "ghcr.io/shopify/toxiproxy:2.12.0"
    redis_services = [LAYOUT.resource[0], *(n for n, _ in LAYOUT.standalone),
                      *(n for n, _ in LAYOUT.replicated), *(n for n, _ in LAYOUT.sentinels)]
    for name in redis_services:
        assert services[name]["image"] == "redis:7", name
        assert services[name].get("restart", "no") == "no", name  # Docker must not revive
    for name, service in services.items():
        assert all(ip == "127.0.0.1" for ip, _, _ in _published(service)), name


def test_data_nodes_and_resource_are_published_where_the_provider_looks(
    compose: dict[str, Any],
) -> None:
    services = compose["services"]
    for name, port in [LAYOUT.resource, *LAYOUT.standalone, *LAYOUT.replicated]:
        assert _published(services[name]) == [("127.0.0.1", str(port), str(LAYOUT.redis_port))]
        command = services[name]["command"]
        assert command[:5] == ["redis-server", "--save", "", "--appendonly", "no"], name
    for name, _ in LAYOUT.standalone:
        assert "profiles" not in services[name]  # `docker compose up` starts the demo's n0
    for name, _ in [*LAYOUT.replicated, *LAYOUT.sentinels]:
        assert services[name]["profiles"] == ["sentinel"], name


def test_the_sentinel_set_is_wired_through_toxiproxy(
    compose: dict[str, Any], proxies: dict[str, dict[str, Any]]
) -> None:
    services = compose["services"]
    master = str(LAYOUT.internal_ports[0])
    for i, (name, _) in enumerate(LAYOUT.replicated):
        command = services[name]["command"]
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


def test_toxiproxy_publishes_its_api_and_the_clients_port_range(
    compose: dict[str, Any], proxies: dict[str, dict[str, Any]]
) -> None:
    service = compose["services"][LAYOUT.toxiproxy]
    ports = LAYOUT.client_ports
    span = f"{ports[0]}-{ports[-1]}"
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


def test_the_demo_services_run_lockchaos_with_settings_it_reads(compose: dict[str, Any]) -> None:
    services = compose["services"]
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
    assert worker["environment"]["LOCKCHAOS_DEMO_REDIS"] == f"n0:{LAYOUT.redis_port}"
    assert worker["depends_on"]["demo-init"] == {"condition": "service_completed_successfully"}
    assert services["checker"]["depends_on"]["worker"] == {
        "condition": "service_completed_successfully"
    }
    dockerfile = (COMPOSE_FILE.parent / "Dockerfile").read_text()
    assert "COPY chaos ./chaos" in dockerfile and "pip install" in dockerfile
    assert "!chaos" in (ROOT / ".dockerignore").read_text().splitlines()


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


@pytest.mark.parametrize(
    ("fault", "ability"),
    [("clock-jump", "jump server clocks"),
     ("crash-restart-aof", "start servers with appendfsync-always persistence")],
)
def test_faults_docker_cannot_do_are_refused_in_one_line(fault: str, ability: str) -> None:
    with pytest.raises(UsageError) as caught:
        topology.open_provider("docker", "standalone", faults=[FAULTS[fault]])
    assert str(caught.value) == (
        f"{fault} needs a provider that can {ability}, which the docker provider cannot: "
        f"drop {fault} or use --provider local"
    )


def test_a_run_asking_docker_for_a_clock_jump_exits_2_before_starting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["run", "--lock", "redlock", "--faults", "clock-jump", "--provider", "docker",
            "--out", str(tmp_path)]
    assert main(args) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("lockchaos: clock-jump needs a provider that can jump server clocks")
    assert not list(tmp_path.iterdir())  # no run directory either


def test_the_docker_capabilities_are_what_its_nodes_can_do() -> None:
    with pytest.raises(UsageError, match="the docker provider cannot jump server clocks"):
        topology.docker.DockerNode("n0", "127.0.0.1", 1).set_clock_offset(1.0)


@pytest.mark.skipif(ENGINE, reason="a Docker engine answers here")
def test_without_an_engine_the_docker_provider_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["up", "--provider", "docker", "--hold", "1"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("lockchaos: the docker provider needs ")
    assert "--provider local" in line or "docker compose" in line


# -- with a Docker engine --------------------------------------------------------------------


def _containers() -> list[str]:
    done = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=com.docker.compose.project={PROJECT}"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    return done.stdout.split()


@pytest.fixture
def docker_out(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    assert _containers() == []  # everything the provider started is gone


@needs_engine
@pytest.mark.parametrize(("fault", "hard"), [("server-pause", False), ("crash-restart", True)])
def test_docker_server_faults_act_on_the_containers(
    fault: str, hard: bool, docker_out: Path
) -> None:
    """lua survives a paused server; an empty restart of its node loses the lock (hard)."""
    campaign = Campaign(lock="lua", faults=[(fault, {})], provider="docker", duration_s=6,
                        clients=3, stop_on_first=hard)
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
def test_docker_compose_up_runs_seed_001s_demo() -> None:
    env = {**os.environ, "COMPOSE_PROJECT_NAME": f"{PROJECT}-demo",
           "LOCKCHAOS_DEMO_DURATION_S": "10"}
    compose = ["docker", "compose", "-f", str(COMPOSE_FILE)]
    try:
        up = subprocess.run([*compose, "up", "--detach", "--scale", "worker=4"],
                            env=env, capture_output=True, text=True, timeout=900)
        assert up.returncode == 0, up.stderr[-2000:]
        waited = subprocess.run([*compose, "wait", "checker"], env=env, capture_output=True,
                                text=True, timeout=120)
        logs = subprocess.run([*compose, "logs", "checker"], env=env, capture_output=True,
                              text=True, timeout=60)
        assert waited.stdout.strip() == "0", logs.stdout[-2000:]  # no hard violation
        assert "verdict:" in logs.stdout and "soft" in logs.stdout
    finally:
        subprocess.run([*compose, "down", "--volumes"], env=env, capture_output=True, timeout=120)
