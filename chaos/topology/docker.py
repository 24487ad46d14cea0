"""The ``docker`` provider: the topologies of ``compose/docker-compose.yml`` (official
``redis:7`` and Toxiproxy images), brought up and down with ``docker compose`` and faulted
through the Docker SDK: ``server-pause`` pauses a container (the cgroup freezer: SIGSTOP's
equivalent), ``crash-restart`` kills one and starts it again. Data nodes run without
persistence, so a restarted node comes back empty. The images carry no libfaketime, so
``clock-jump`` (and the AOF-persistence faults) are refused up front.

Every link goes through the Toxiproxy container: clients' own links (created per client
here, on ports of ``ComposeLayout.client_ports`` that Compose publishes on 127.0.0.1), and
in the sentinel shape the replication/Sentinel links (``int-n0``… from compose/toxiproxy.json;
replicas and Sentinels announce themselves as ``toxiproxy:<port>``) and the Sentinels'
own ports. ``ComposeLayout`` is what this module expects of the Compose file; the tests
check the file against it without an engine.

Host ports are fixed (see ``LAYOUT``), so one docker topology runs at a time on a host.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from chaos.errors import UsageError
from chaos.topology.base import CLUSTER_LINKS, PAUSE, PERSISTENCE, RESTART, refuse
from chaos.topology.node import wait_until
from chaos.topology.remote import RemoteNode, RemoteServer, RemoteTopology
from chaos.topology.toxiproxy import Link, ToxiproxyAPI

COMPOSE_FILE = Path(__file__).resolve().parents[2] / "compose" / "docker-compose.yml"
PROJECT = "lockchaos"
COMPOSE_TIMEOUT_S = 300  # pulling images on a first run takes a while


@dataclass(frozen=True)
class ComposeLayout:
    """Service names and ports the provider relies on (``compose/`` must agree)."""

    toxiproxy: str = "toxiproxy"
    api_port: int = 8474
    client_ports: range = range(21000, 21100)  # clients' links, published 1:1 on 127.0.0.1
    redis_port: int = 6379
    sentinel_port: int = 26379
    resource: tuple[str, int] = ("resource", 16379)  # (service, published port)
    standalone: tuple[tuple[str, int], ...] = tuple((f"n{i}", 16380 + i) for i in range(5))
    replicated: tuple[tuple[str, int], ...] = tuple((f"m{i}", 16390 + i) for i in range(3))
    internal_ports: tuple[int, ...] = (7000, 7001, 7002)  # int-n0… on the Toxiproxy
    sentinels: tuple[tuple[str, int], ...] = tuple((f"s{j}", 7100 + j) for j in range(3))
    master_name: str = "lockchaos"

    def internal_link(self, node: int) -> str:
        return f"int-n{node}"

    def sentinel_link(self, sentinel: int) -> str:
        return f"sentinel-s{sentinel}"


LAYOUT = ComposeLayout()


def compose_command(compose_file: Path = COMPOSE_FILE) -> list[str]:
    """``docker compose -f FILE -p lockchaos``; ``UsageError`` without Docker or Compose v2."""
    if not compose_file.is_file():
        raise UsageError(f"the docker provider needs {compose_file} (a lockchaos checkout)")
    docker = shutil.which("docker") or "docker"
    try:
        version = subprocess.run([docker, "compose", "version"], capture_output=True, timeout=30)
        found = version.returncode == 0
    except OSError:
        found = False
    if not found:
        raise UsageError(
            "the docker provider needs the docker CLI with the Compose plugin "
            "(`docker compose version` failed): install docker-compose-plugin"
        )
    return [docker, "compose", "-f", str(compose_file), "-p", PROJECT]


def engine() -> Any:
    """A Docker SDK client to a running engine; ``UsageError`` when there is none."""
    import docker  # here, not at the top: the SDK takes 0.2 s to import, and only this needs it

    try:
        client = docker.from_env(timeout=30)
        client.ping()
    except docker.errors.DockerException as exc:
        reason = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        raise UsageError(
            f"the docker provider needs a running Docker engine ({reason}): "
            "start one (`docker info` must work), or use --provider local"
        ) from None
    return client


@dataclass
class DockerNode(RemoteNode):
    """A Redis container; server faults act on the container."""

    provider: ClassVar[str] = "docker"
    container: Any = field(default=None, repr=False)  # docker.models.containers.Container

    def pause(self) -> None:
        self.container.pause()

    def resume(self) -> None:
        self.container.unpause()

    def kill(self) -> None:
        """``docker kill``: SIGKILL, as a power loss would (unpaused first if need be)."""
        self.container.reload()
        if self.container.status == "paused":
            self.container.unpause()
        if self.container.status in ("running", "paused"):
            self.container.kill()

    def wipe(self) -> None:
        """Nothing to delete: nodes keep no RDB or AOF file, so a restart comes back empty."""

    def start(self) -> None:
        self.container.start()


class DockerTopology(RemoteTopology):
    """The Compose project, up. ``close()`` takes it down, volumes included."""

    provider = "docker"
    capabilities = frozenset({PAUSE, RESTART, CLUSTER_LINKS})

    def __init__(
        self,
        kind: str = "standalone",
        *,
        nodes: int = 5,
        persistence: str = "none",
        compose_file: Path = COMPOSE_FILE,
    ) -> None:
        super().__init__(kind)
        if persistence != "none":
            raise refuse(self.provider, PERSISTENCE)
        data = LAYOUT.standalone if kind == "standalone" else LAYOUT.replicated
        if kind == "standalone" and not 1 <= nodes <= len(data):
            raise UsageError(
                f"the docker provider has {len(data)} standalone nodes (got --nodes {nodes})"
            )
        data = data[:nodes] if kind == "standalone" else data
        self._compose = compose_command(compose_file)
        self.engine = engine()
        self._ports: Iterator[int] = iter(LAYOUT.client_ports)
        self._closed = False
        services = [LAYOUT.toxiproxy, LAYOUT.resource[0], *(name for name, _ in data)]
        if kind == "sentinel":
            services += [name for name, _ in LAYOUT.sentinels]
        try:
            self._down()  # what a killed earlier run left (its links would clash with ours)
            self._compose_run("up", "--detach", "--wait", *services)
            self.toxiproxy = ToxiproxyAPI(LAYOUT.api_port)
            self.toxiproxy.wait_ready()
            self.resource = RemoteServer("resource", "127.0.0.1", LAYOUT.resource[1])
            self._services = [service for service, _ in data]
            self.nodes = [
                DockerNode(f"n{i}", "127.0.0.1", port, container=self._container(service))
                for i, (service, port) in enumerate(data)
            ]
            for server in [self.resource, *self.nodes]:
                server.wait_ready()
            if kind == "sentinel":
                self._wire_sentinels()
        except BaseException:
            self.close()
            raise

    def _wire_sentinels(self) -> None:
        self.internal = [self.toxiproxy.existing(LAYOUT.internal_link(i)) for i in range(3)]
        self.sentinels = []
        for j in range(len(LAYOUT.sentinels)):
            link = self.toxiproxy.existing(LAYOUT.sentinel_link(j))
            self.sentinels.append(RemoteServer(f"s{j}", "127.0.0.1", link.listen_port))
        self.master_name = LAYOUT.master_name
        for replica in self.nodes[1:]:
            wait_until(partial(_synced, replica), f"{replica.name} to sync with its master")
        wait_until(self._sentinels_name_n0, "the Sentinels to name n0 the master")

    def _sentinels_name_n0(self) -> bool:
        try:
            return self.master_index() == 0
        except RuntimeError:  # none answers yet
            return False

    def _compose_run(self, *args: str) -> None:
        done = subprocess.run(
            [*self._compose, *args], capture_output=True, text=True, timeout=COMPOSE_TIMEOUT_S
        )
        if done.returncode != 0:
            tail = done.stderr.strip().splitlines()[-1:] or ["(no output)"]
            raise RuntimeError(f"docker compose {args[0]} failed: {tail[0]}")

    def _container(self, service: str) -> Any:
        labels = [f"com.docker.compose.project={PROJECT}", f"com.docker.compose.service={service}"]
        found = self.engine.containers.list(all=True, filters={"label": labels})
        if not found:
            raise RuntimeError(f"no container for service {service} in project {PROJECT}")
        return found[0]

    def _new_link(self, client_id: str, node: int) -> Link:
        port = next(self._ports, None)
        if port is None:
            raise UsageError(
                f"the docker provider publishes {len(LAYOUT.client_ports)} ports for clients' "
                f"links ({len(LAYOUT.client_ports) // len(self.nodes)} clients × "
                f"{len(self.nodes)} nodes): run fewer clients"
            )
        return self.toxiproxy.create(
            f"{client_id}-{self.nodes[node].name}",
            port,
            LAYOUT.redis_port,
            upstream_host=self._services[node],
            listen_host="0.0.0.0",  # inside the container; Compose publishes it on 127.0.0.1
        )

    def _reported(self, node: int) -> str:
        return f"{LAYOUT.toxiproxy}:{LAYOUT.internal_ports[node]}"

    def close(self) -> None:
        """``docker compose down``: containers, network and volumes go. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._down()

    def _down(self) -> None:
        self._compose_run("down", "--volumes", "--remove-orphans", "--timeout", "1")


def _synced(replica: RemoteServer) -> bool:
    with replica.client(decode_responses=True) as conn:
        return bool(conn.info("replication").get("master_link_status") == "up")
