"""The ``docker`` provider: the topologies of its Compose file (``COMPOSE_FILE``, package
data in ``chaos/topology/compose/``; lockchaos's own ``lockchaos/redis:7.0`` and
``lockchaos/toxiproxy:2.12.0`` images, built offline by ``python -m chaos.images``:
docs/images.md; ``LOCKCHAOS_REDIS_IMAGE`` and
``LOCKCHAOS_TOXIPROXY_IMAGE`` choose others, e.g. the official ``redis:7`` and
``ghcr.io/shopify/toxiproxy:2.12.0`` where a registry is reachable), brought up and down with
``docker compose`` and faulted through the Docker SDK: ``server-pause`` pauses a container
(the cgroup freezer: SIGSTOP's equivalent), ``crash-restart`` kills the server in one with
SIGKILL and starts it again (see ``DockerNode``). Data nodes run without persistence, so a
restarted node comes back empty. ``clock-jump`` rewrites the libfaketime offset file of
lockchaos's images in the node's container (``DockerNode.set_clock_offset``); the
AOF-persistence faults are refused up front. ``server`` (``--server redis-8.0``…) picks the
image of the Redis-compatible server a run uses (``chaos.topology.images``).

Every container and the network carry ``org.lockchaos.run=<run id>`` (``RUN_LABEL``); the
topology's reaper (``chaos.topology.reaper``) removes them if the runner dies without
tearing down (SIGKILL included).

Every link goes through the Toxiproxy container: clients' own links (created per client
here, on container ports of ``ComposeLayout.client_ports`` that Compose publishes on
127.0.0.1), and in the sentinel shape the replication/Sentinel links (``int-n0``… from its
toxiproxy.json; replicas and Sentinels announce themselves as ``toxiproxy:<port>``) and the
Sentinels' own ports, in the cluster shape each node's ``int-cI`` and ``bus-cI`` (nodes
announce the Toxiproxy container's IP with those ports; ``chaos.topology.cluster`` forms the
cluster).
``ComposeLayout`` is what this module expects of the Compose file; the tests check the file
against it without an engine.

Each run is a Compose project of its own, ``lockchaos-<run id>`` (``project_name``), and
every port is published on 127.0.0.1 at a host port the engine chooses, read back once up
(``published_ports``): any number of runs (shards, parallel CI jobs, the pytest plugin's)
share one engine, and each one's teardown and reaper remove that project only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.resources
import os
import select
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from chaos.errors import UsageError
from chaos.topology.base import (
    CLOCK,
    CLUSTER_LINKS,
    PAUSE,
    PERSISTENCE,
    RESTART,
    SHAPES,
    refuse,
)
from chaos.topology.binaries import setup_hint
from chaos.topology.cluster import CLUSTER_MASTERS, form_cluster
from chaos.topology.engine import engine
from chaos.topology.images import FAKETIME_FILE, SERVERS, image_for, labels, own_image
from chaos.topology.node import sentinel_knows_all, wait_until
from chaos.topology.reaper import Reaper, remove_containers
from chaos.topology.remote import RemoteNode, RemoteServer, RemoteTopology
from chaos.topology.toxiproxy import Link, ToxiproxyAPI

# Package data (with the toxiproxy.json it mounts): where the package is, not a checkout.
COMPOSE_FILE = Path(str(importlib.resources.files(__package__) / "compose" / "docker-compose.yml"))
PROJECT = "lockchaos"  # the Compose file's own name (by hand, the demo); a run's: project_name
COMPOSE_TIMEOUT_S = 300  # pulling images on a first run takes a while
DOWN_FLAG = "/tmp/lockchaos-down"  # while it exists, a data node's server is not restarted
SERVER_PID = "/tmp/lockchaos-redis.pid"  # written by the shell that supervises the server
CLOCK_TIMEOUT_S = 5.0  # a clock offset written in a container answers within this
# The Compose file's image variables, and lockchaos's own images (docs/images.md) they
# default to; an image named here is pulled if missing, lockchaos's own never are.
IMAGE_VARIABLES = {
    "LOCKCHAOS_REDIS_IMAGE": image_for("redis-7.0"),
    "LOCKCHAOS_TOXIPROXY_IMAGE": image_for("toxiproxy"),
}


@dataclass(frozen=True)
class ComposeLayout:
    """Service names and container ports the provider relies on (``COMPOSE_FILE`` must
    agree). Each port a host reaches is published on 127.0.0.1 at a port the engine chooses."""

    toxiproxy: str = "toxiproxy"
    api_port: int = 8474
    # clients' links (LOCKCHAOS_CLIENT_PORTS: the part of them a run publishes)
    client_ports: range = range(21000, 21100)
    redis_port: int = 6379  # of the resource and every data node
    sentinel_port: int = 26379
    resource: str = "resource"
    standalone: tuple[str, ...] = tuple(f"n{i}" for i in range(5))
    replicated: tuple[str, ...] = tuple(f"m{i}" for i in range(3))
    internal_ports: tuple[int, ...] = (7000, 7001, 7002)  # int-n0… on the Toxiproxy
    # (service, the port it announces: its sentinel-sJ link's on the Toxiproxy)
    sentinels: tuple[tuple[str, int], ...] = tuple((f"s{j}", 7100 + j) for j in range(3))
    master_name: str = "lockchaos"
    cluster: tuple[str, ...] = tuple(f"c{i}" for i in range(2 * CLUSTER_MASTERS))
    cluster_ports: tuple[int, ...] = tuple(7200 + i for i in range(2 * CLUSTER_MASTERS))
    cluster_bus_ports: tuple[int, ...] = tuple(7300 + i for i in range(2 * CLUSTER_MASTERS))

    def data_nodes(self, kind: str) -> tuple[str, ...]:
        """The services of the data nodes of the ``kind`` shape."""
        return {"standalone": self.standalone, "sentinel": self.replicated,
                "cluster": self.cluster}[kind]  # fmt: skip

    def internal_link(self, node: int, kind: str = "sentinel") -> str:
        """The link through which the rest of the topology reaches ``node``."""
        return f"int-c{node}" if kind == "cluster" else f"int-n{node}"

    def bus_link(self, node: int) -> str:
        """The cluster bus link of ``node`` (cluster shape)."""
        return f"bus-c{node}"

    def sentinel_link(self, sentinel: int) -> str:
        return f"sentinel-s{sentinel}"


LAYOUT = ComposeLayout()


def project_name(run_id: str) -> str:
    """The Compose project of the run ``run_id``: its own, so runs never share one."""
    return f"{PROJECT}-{run_id}"


def compose_command(project: str, compose_file: Path = COMPOSE_FILE) -> list[str]:
    """``docker compose -f FILE -p PROJECT``; ``UsageError`` without Docker or Compose v2."""
    if not compose_file.is_file():
        raise UsageError(
            f"the docker provider needs {compose_file}, which this installation lacks: "
            "reinstall lockchaos"
        )
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
    return [docker, "compose", "-f", str(compose_file), "-p", project]


def compose_images(server: str | None = None) -> dict[str, str]:
    """Variable → image the Compose file will run: ``server``'s image (``redis-8.0`` →
    ``lockchaos/redis:8.0``) if given, else the environment's, else lockchaos's default."""
    chosen = {name: os.environ.get(name) or own for name, own in IMAGE_VARIABLES.items()}
    if server is not None:
        chosen["LOCKCHAOS_REDIS_IMAGE"] = server_image(server)
    return chosen


def server_image(server: str) -> str:
    """The image of ``server`` (``UsageError`` naming the choices for an unknown one)."""
    if server not in SERVERS:
        raise UsageError(f"--server must be one of {', '.join(SERVERS)} (got {server!r})")
    return image_for(server)


def check_images(client: Any, chosen: dict[str, str]) -> None:
    """``UsageError`` naming how to get lockchaos's own images when one is missing (the
    official ones, named through the variables, are pulled by Compose instead)."""
    for variable, image in chosen.items():
        if own_image(image) and labels(client, image) is None:
            raise UsageError(
                f"the docker provider needs the image {image}: to build lockchaos's images, "
                f"{setup_hint('--docker')} (docs/images.md); or set {variable} to an image a "
                "registry here provides"
            )


def check_faketime(client: Any, image: str) -> None:
    """``UsageError`` when ``image`` does not run its server under libfaketime (the official
    ``redis`` images do not): a clock fault would write an offset nothing reads."""
    import docker

    try:
        env = client.images.get(image).attrs.get("Config", {}).get("Env") or []
    except docker.errors.ImageNotFound:
        env = []  # not here yet (Compose would pull it): not one of lockchaos's
    if not any(entry.startswith("FAKETIME_TIMESTAMP_FILE=") for entry in env):
        raise UsageError(
            f"clock faults need a server image that preloads libfaketime, and {image} does "
            f"not: use lockchaos's own (--server {'|'.join(SERVERS)}, "
            "docs/images.md), or drop the clock fault"
        )


def published_ports(container: Any) -> dict[int, int]:
    """Container port → the host port the engine published it on (127.0.0.1)."""
    ports = container.attrs["NetworkSettings"]["Ports"] or {}
    return {
        int(spec.partition("/")[0]): int(bindings[0]["HostPort"])
        for spec, bindings in ports.items()
        if bindings
    }


@dataclass
class DockerNode(RemoteNode):
    """A Redis container; server faults act on the container.

    ``crash-restart`` kills the redis-server *in* the container (SIGKILL) and the shell that
    supervises it there (``COMPOSE_FILE``, ``x-supervise``) starts it again once
    ``start`` removes ``DOWN_FLAG``. Killing the container instead would take its network
    address away for the 0.6 s a restart takes: connections to it would hang rather than be
    refused, and Toxiproxy would deliver a client's acquire after the client gave up on it
    (the key taken on the server by an acquire the client saw fail, for a whole TTL)."""

    provider: ClassVar[str] = "docker"
    container: Any = field(default=None, repr=False)  # docker.models.containers.Container
    _clock: subprocess.Popen[str] | None = field(default=None, repr=False)

    def pause(self) -> None:
        self.container.pause()

    def resume(self) -> None:
        """Unpause, if paused: idempotent, as SIGCONT is (``explore`` resumes every node
        before each program)."""
        self.container.reload()
        if self.container.status == "paused":
            self.container.unpause()

    def kill(self) -> None:
        """SIGKILL to the server, as a power loss would (unpaused first if need be); it stays
        down until ``start``."""
        self.container.reload()
        if self.container.status == "paused":
            self.container.unpause()
        self._exec(f"touch {DOWN_FLAG}; kill -9 $(cat {SERVER_PID}) 2>/dev/null; true")

    def wipe(self) -> None:
        """Nothing to delete: nodes keep no RDB or AOF file, so a restart comes back empty."""

    def start(self) -> None:
        self._exec(f"rm -f {DOWN_FLAG}")

    def set_clock_offset(self, seconds: float) -> None:
        """Move the container's wall clock to true time + ``seconds``: lockchaos's server
        images preload libfaketime, which reads ``FAKETIME_FILE`` at every clock read. The
        offset is written (beside the file, then renamed: the server never reads half a
        file) by a shell that ``docker exec -i`` keeps open in the container, so a jump
        takes a millisecond or two, not the ~60 ms of a ``docker exec`` each (a clock jump
        on three nodes one after another would straddle several 50 ms holds). The monotonic
        clock stays true."""
        shell = self.clock_shell()
        assert shell.stdin is not None and shell.stdout is not None
        try:
            shell.stdin.write(f"{seconds:+.3f}\n")
            shell.stdin.flush()
            ready, _, _ = select.select([shell.stdout], [], [], CLOCK_TIMEOUT_S)
            answer = shell.stdout.readline().strip() if ready else ""
        except OSError as exc:
            answer = str(exc)
        if answer != "ok":
            self.close_clock_shell()
            raise RuntimeError(
                f"{self.name}: could not move its clock ({answer or 'no answer'} within "
                f"{CLOCK_TIMEOUT_S:g} s)"
            )

    def clock_shell(self) -> subprocess.Popen[str]:
        """The shell that writes this node's clock offsets (started on first use)."""
        if self._clock is None or self._clock.poll() is not None:
            script = (f'f={FAKETIME_FILE}; while read -r offset; do echo "$offset" > "$f.tmp" '
                      '&& mv -f "$f.tmp" "$f" && echo ok || echo failed; done')  # fmt: skip
            self._clock = subprocess.Popen(
                [shutil.which("docker") or "docker", "exec", "-i", self.container.id,
                 "sh", "-c", script],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                text=True, bufsize=1,
            )  # fmt: skip
        return self._clock

    def close_clock_shell(self) -> None:
        """End the clock shell (closing its stdin ends its loop). Idempotent."""
        shell, self._clock = self._clock, None
        if shell is None:
            return
        with contextlib.suppress(OSError):
            if shell.stdin is not None:
                shell.stdin.close()
        try:
            shell.wait(timeout=CLOCK_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            shell.kill()
            shell.wait(timeout=CLOCK_TIMEOUT_S)
        if shell.stdout is not None:
            shell.stdout.close()

    def _exec(self, script: str) -> None:
        done = self.container.exec_run(["sh", "-c", script])
        if done.exit_code != 0:
            output = done.output.decode(errors="replace").strip()[:200]
            raise RuntimeError(f"{self.name}: `{script}` failed in its container: {output}")


class DockerTopology(RemoteTopology):
    """The Compose project, up. ``close()`` takes it down, volumes included."""

    provider = "docker"
    capabilities = frozenset({PAUSE, RESTART, CLOCK, CLUSTER_LINKS})
    shapes = SHAPES

    def __init__(
        self,
        kind: str = "standalone",
        *,
        nodes: int = 5,
        persistence: str = "none",
        compose_file: Path = COMPOSE_FILE,
        server: str | None = None,
        clock: bool = False,
        clients: int | None = None,
    ) -> None:
        """``server``: the Redis-compatible server (one of ``SERVERS``: ``redis-7.0``,
        ``valkey-9.1``…; None: ``LOCKCHAOS_REDIS_IMAGE``, else redis-7.0). ``clock``: a clock
        fault will run, so the server image must preload libfaketime (lockchaos's do).
        ``clients``: how many clients will get links (None: as many as the range allows)."""
        super().__init__(kind)
        if persistence != "none":
            raise refuse(self.provider, PERSISTENCE)
        data = LAYOUT.data_nodes(kind)
        if kind == "standalone" and not 1 <= nodes <= len(data):
            raise UsageError(
                f"the docker provider has {len(data)} standalone nodes (got --nodes {nodes})"
            )
        data = data[:nodes] if kind == "standalone" else data
        self.run_id = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.project = project_name(self.run_id)
        self._compose = compose_command(self.project, compose_file)
        images = compose_images(server)
        self.server = server
        self.engine = engine()
        check_images(self.engine, images)
        if clock:
            check_faketime(self.engine, images["LOCKCHAOS_REDIS_IMAGE"])
        own = all(own_image(image) for image in images.values())
        self._env = {
            **os.environ,
            **images,
            "LOCKCHAOS_RUN": self.run_id,
            "LOCKCHAOS_PULL_POLICY": "never" if own else "missing",
        }
        # Each published port costs the engine about 15 ms to set up and 50 ms to tear down
        # (its NAT rules): publish as many as this run's clients need, not the whole range.
        ports = LAYOUT.client_ports
        if clients is not None:
            if clients * len(data) > len(ports):
                raise UsageError(
                    f"the docker provider has {len(ports)} ports for clients' links: "
                    f"{clients} clients × {len(data)} nodes need {clients * len(data)}; run "
                    f"at most {len(ports) // len(data)} clients"
                )
            ports = ports[: max(1, clients * len(data))]
        self._env["LOCKCHAOS_CLIENT_PORTS"] = f"{ports[0]}-{ports[-1]}"
        self._ports: Iterator[int] = iter(ports)
        self._closed = False
        self.images: dict[str, str] = {}  # image → its id, once up (campaign.json records it)
        self._reaper = Reaper(containers=self.run_id)
        self._services = list(data)
        services = [LAYOUT.toxiproxy, LAYOUT.resource, *data]
        if kind == "sentinel":
            services += [name for name, _ in LAYOUT.sentinels]
        try:
            self._compose_run("up", "--detach", "--wait", *services)
            self.images = {image: self.engine.images.get(image).id for image in images.values()}
            # the Toxiproxy's container ports (API, links) → where this host reaches them
            self._proxy_ports = published_ports(self._container(LAYOUT.toxiproxy))
            self.toxiproxy = ToxiproxyAPI(self._proxy_ports[LAYOUT.api_port])
            self.toxiproxy.wait_ready()
            resource = published_ports(self._container(LAYOUT.resource))[LAYOUT.redis_port]
            self.resource = RemoteServer("resource", "127.0.0.1", resource)
            self.nodes = []
            for i, service in enumerate(data):
                container = self._container(service)
                port = published_ports(container)[LAYOUT.redis_port]
                self.nodes.append(DockerNode(f"n{i}", "127.0.0.1", port, container=container))
            for endpoint in [self.resource, *self.nodes]:
                endpoint.wait_ready()
            if clock:  # a clock fault will run: its shells are open before the first jump
                for node in self.nodes:
                    node.set_clock_offset(0.0)
            if kind == "sentinel":
                self._wire_sentinels()
            if kind == "cluster":
                self._form_cluster()
        except BaseException:
            self.close()
            raise

    def _form_cluster(self) -> None:
        """Nodes announce the Toxiproxy container's IP (``CLUSTER MEET`` and the slot map
        take IPs, not names), so clients' routes are keyed by it too."""
        count = len(self.nodes)
        self.internal = [self.toxiproxy.existing(LAYOUT.internal_link(i, "cluster"))
                         for i in range(count)]  # fmt: skip
        self.bus = [self.toxiproxy.existing(LAYOUT.bus_link(i)) for i in range(count)]
        networks = self._container(LAYOUT.toxiproxy).attrs["NetworkSettings"]["Networks"]
        self._announced_host = next(iter(networks.values()))["IPAddress"]
        form_cluster(self.nodes, self._announced_host, LAYOUT.cluster_ports,
                     LAYOUT.cluster_bus_ports)  # fmt: skip

    def _wire_sentinels(self) -> None:
        self.internal = [self.toxiproxy.existing(LAYOUT.internal_link(i)) for i in range(3)]
        self.sentinels = []
        for j in range(len(LAYOUT.sentinels)):
            link = self.toxiproxy.existing(LAYOUT.sentinel_link(j))
            port = self._proxy_ports[link.listen_port]
            self.sentinels.append(RemoteServer(f"s{j}", "127.0.0.1", port))
        self.master_name = LAYOUT.master_name
        for replica in self.nodes[1:]:
            wait_until(partial(_synced, replica), f"{replica.name} to sync with its master")
        wait_until(self._sentinels_name_n0, "the Sentinels to name n0 the master")
        # A Sentinel that has not heard of its peers yet (hello messages every 2 s) cannot
        # win the vote a failover needs: a failover right after start would never happen.
        for sentinel in self.sentinels:
            wait_until(partial(_knows_all, sentinel), f"{sentinel.name} to see the cluster")

    def _sentinels_name_n0(self) -> bool:
        try:
            return self.master_index() == 0
        except RuntimeError:  # none answers yet
            return False

    def _compose_run(self, *args: str) -> None:
        done = subprocess.run(
            [*self._compose, *args],
            capture_output=True,
            text=True,
            timeout=COMPOSE_TIMEOUT_S,
            env=self._env,
        )
        if done.returncode != 0:
            tail = done.stderr.strip().splitlines()[-1:] or ["(no output)"]
            raise RuntimeError(f"docker compose {args[0]} failed: {tail[0]}")

    def _container(self, service: str) -> Any:
        labels = [f"com.docker.compose.project={self.project}",
                  f"com.docker.compose.service={service}"]  # fmt: skip
        found = self.engine.containers.list(all=True, filters={"label": labels})
        if not found:
            raise RuntimeError(f"no container for service {service} in project {self.project}")
        return found[0]

    def _new_link(self, client_id: str, node: int) -> Link:
        port = next(self._ports, None)
        if port is None:
            raise UsageError(
                f"the docker provider published {self._env['LOCKCHAOS_CLIENT_PORTS']} for "
                f"clients' links ({len(self.nodes)} per client): it was started for fewer "
                "clients"
            )
        link = self.toxiproxy.create(
            f"{client_id}-{self.nodes[node].name}",
            port,
            LAYOUT.redis_port,
            upstream_host=self._services[node],
            listen_host="0.0.0.0",  # inside the container; Compose publishes it on 127.0.0.1
        )
        # the client connects where the engine published the container's port
        return dataclasses.replace(link, listen_port=self._proxy_ports[port])

    def _reported(self, node: int) -> str:
        if self.kind == "cluster":
            return f"{self._announced_host}:{LAYOUT.cluster_ports[node]}"
        if self.kind != "sentinel":  # no Sentinel reports standalone nodes: their own names
            return f"{self._services[node]}:{LAYOUT.redis_port}"
        return f"{LAYOUT.toxiproxy}:{LAYOUT.internal_ports[node]}"

    def close(self) -> None:
        """``docker compose down`` of this run's project: its containers, network and volumes
        go (never another run's); then the reaper, with nothing left to do, is dismissed.
        Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            for node in getattr(self, "nodes", []):
                node.close_clock_shell()
            # `down` can stop at a network whose endpoint outlived its container for a moment
            # ("has active endpoints": a fresh clone's CI); what it left goes next, and only a
            # failure there fails the teardown.
            with contextlib.suppress(RuntimeError):
                self._down()
        finally:
            remove_containers(self.run_id, self.engine)  # what `down` left
            self._reaper.dismiss()

    def _down(self) -> None:
        # the profiles: `down` must see every shape's services too
        self._compose_run(
            "--profile", "sentinel", "--profile", "cluster",
            "down", "--volumes", "--remove-orphans", "--timeout", "1",
        )  # fmt: skip


def _knows_all(sentinel: RemoteServer) -> bool:
    with sentinel.client(decode_responses=True) as conn:
        return sentinel_knows_all(conn, LAYOUT.master_name, len(LAYOUT.replicated) - 1,
                                  len(LAYOUT.sentinels) - 1)


def _synced(replica: RemoteServer) -> bool:
    with replica.client(decode_responses=True) as conn:
        return bool(conn.info("replication").get("master_link_status") == "up")
