"""Handles on real redis-server and redis-sentinel processes.

A ``RedisNode`` runs under libfaketime (``FAKETIME_TIMESTAMP_FILE`` + ``FAKETIME_NO_CACHE`` +
``FAKETIME_DONT_FAKE_MONOTONIC``), so its wall clock can be jumped by rewriting one file while
its monotonic clock stays true: Redis key expiry follows the wall clock, which is exactly the
fault Kleppmann describes for Redlock. Sentinels never run under libfaketime: a clock jump
puts a Sentinel into TILT mode. A node started with ``faketime=False`` (a topology without
clock faults, on a redis-server libfaketime cannot wrap) runs on the true clock.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis

from chaos.errors import UsageError
from chaos.topology import binaries
from chaos.topology.processes import Supervisor

if TYPE_CHECKING:
    from chaos.topology.base import ServerNode

READY_TIMEOUT_S = 15.0
CLUSTER_CONFIG = "nodes.conf"
CLUSTER_NODE_TIMEOUT_MS = 1000  # how long the cluster takes to call a cut-off master failed
POLL_S = 0.002


def wait_until(
    predicate: Callable[[], bool], what: str, timeout_s: float = READY_TIMEOUT_S
) -> None:
    """Poll ``predicate`` until true; ``TimeoutError`` naming ``what`` otherwise."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except (redis.RedisError, OSError):
            pass
        time.sleep(POLL_S)
    raise TimeoutError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def sentinel_knows_all(conn: redis.Redis, master_name: str, replicas: int, peers: int) -> bool:
    """The Sentinel behind ``conn`` sees an up master, ``replicas`` replicas it would promote
    and ``peers`` other Sentinels. A replica counts once connected *and* its own INFO was read
    (``master-link-status`` ok): until then Sentinel knows it only from the master's INFO and
    promotes none — a failover asked for then answered ``NOGOODSLAVE No suitable replica to
    promote`` (a set-up from nothing, 2026-11-27)."""
    master = _pairs(conn.execute_command("SENTINEL", "MASTER", master_name))
    known = [_pairs(r) for r in conn.execute_command("SENTINEL", "REPLICAS", master_name)]
    promotable = [r for r in known if "disconnected" not in r.get("flags", "")
                  and r.get("master-link-status") == "ok"]
    return (
        "master" in master.get("flags", "")
        and "down" not in master.get("flags", "")
        and len(promotable) == replicas
        and len(conn.execute_command("SENTINEL", "SENTINELS", master_name)) == peers
    )


def _pairs(flat: Any) -> dict[str, Any]:
    """Sentinel replies are flat [key, value, key, value, …] lists (or already dicts)."""
    if isinstance(flat, dict):
        return flat
    return dict(zip(flat[::2], flat[1::2], strict=False))


def direct_client(
    host: str,
    port: int,
    password: str | None = None,
    *,
    socket_timeout: float = 2.0,
    decode_responses: bool = False,
) -> redis.Redis:
    """A connection straight to a server (no proxy): what the harness and the nemesis use."""
    return redis.Redis(
        host=host,
        port=port,
        password=password,
        socket_timeout=socket_timeout,
        socket_connect_timeout=1.0,
        decode_responses=decode_responses,
    )


@dataclass
class _Server:
    """What both node kinds share: a port, a directory, a supervised process."""

    name: str
    port: int
    directory: Path
    supervisor: Supervisor
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def address(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)

    @property
    def log(self) -> Path:
        return self.directory / "server.log"

    def client(self, *, socket_timeout: float = 2.0, decode_responses: bool = False) -> redis.Redis:
        """A direct (un-proxied) connection, for the harness and the nemesis."""
        return direct_client(
            "127.0.0.1", self.port, socket_timeout=socket_timeout, decode_responses=decode_responses
        )

    def ping(self) -> bool:
        with self.client(socket_timeout=0.5) as conn:
            return bool(conn.ping())

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        def answers() -> bool:
            self._check_alive()  # a server that exited says why at once, not in 15 s
            return self.ping()

        wait_until(answers, f"{self.name} to answer PING", timeout_s)

    def _check_alive(self) -> None:
        if self.process is not None and self.process.poll() is not None:
            tail = self.log.read_text(errors="replace")[-600:] if self.log.exists() else ""
            raise RuntimeError(f"{self.name} exited with {self.process.returncode}: {tail}")

    @property
    def pid(self) -> int:
        if self.process is None:
            raise RuntimeError(f"{self.name} is not running")
        return self.process.pid

    def pause(self) -> None:
        """SIGSTOP: the server stops answering but keeps its sockets and memory."""
        os.kill(self.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.pid, signal.SIGCONT)

    def kill(self) -> None:
        """kill -9, as a power loss would."""
        if self.process is not None and self.process.poll() is None:
            os.kill(self.pid, signal.SIGKILL)
            os.kill(self.pid, signal.SIGCONT)
            self.process.wait(timeout=10)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


@dataclass
class RedisNode(_Server):
    """A redis-server with a fakeable wall clock.

    ``persistence="aof-always"`` starts it with ``appendonly yes`` + ``appendfsync always``,
    so a restart keeps every acknowledged write; the default keeps nothing (restart = empty).
    """

    replicaof: int | None = None  # port (usually a proxy) of the master to replicate
    announce_port: int | None = None  # the port others (Sentinels) see it on
    # Cluster mode: (bus port, announced port, announced bus port). The announced ones are
    # proxies, so the rest of the cluster (and the slot map clients get) goes through them.
    cluster: tuple[int, int, int] | None = None
    persistence: str = "none"
    clock_offset_s: float = 0.0
    faketime: bool = True  # under libfaketime (its clock can be jumped)

    @property
    def clock_file(self) -> Path:
        return self.directory / "faketime"

    def argv(self) -> list[str]:
        args = [
            binaries.find("redis-server"),
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--protected-mode", "no",
            "--daemonize", "no",
            "--dir", str(self.directory),
            "--logfile", "",
            "--save", "",
            "--repl-diskless-sync", "yes",
            "--repl-diskless-sync-delay", "0",
            "--repl-ping-replica-period", "1",
            "--repl-timeout", "5",
        ]  # fmt: skip
        if self.persistence == "aof-always":
            args += ["--appendonly", "yes", "--appendfsync", "always"]
        else:
            args += ["--appendonly", "no"]
        if self.announce_port is not None:
            args += ["--replica-announce-ip", "127.0.0.1"]
            args += ["--replica-announce-port", str(self.announce_port)]
        if self.replicaof is not None:
            args += ["--replicaof", "127.0.0.1", str(self.replicaof)]
        if self.cluster is not None:
            bus, announced, announced_bus = self.cluster
            args += [
                "--cluster-enabled", "yes",
                "--cluster-config-file", CLUSTER_CONFIG,
                "--cluster-node-timeout", str(CLUSTER_NODE_TIMEOUT_MS),
                "--cluster-port", str(bus),
                "--cluster-announce-ip", "127.0.0.1",
                "--cluster-announce-port", str(announced),
                "--cluster-announce-bus-port", str(announced_bus),
                # a replica may take over however long it has been cut off (the fault's point)
                "--cluster-replica-validity-factor", "0",
                "--cluster-require-full-coverage", "no",
            ]  # fmt: skip
        return args

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self._write_clock(self.clock_offset_s)
        env: dict[str, str] = {}
        if self.faketime:
            env = {
                "LD_PRELOAD": binaries.libfaketime(),
                "FAKETIME_TIMESTAMP_FILE": str(self.clock_file),
                "FAKETIME_NO_CACHE": "1",
                "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            }
        self.process = self.supervisor.spawn(self.argv(), log=self.log, env=env)

    def restart(self, *, empty: bool = True) -> None:
        """Kill -9 (if running) and start again on the same port (see ``restart_nodes``)."""
        restart_nodes([self], empty=empty)

    def wipe(self) -> None:
        """Delete the node's data files (not its clock file or log)."""
        for path in self.directory.iterdir():
            if path.name not in {"faketime", "server.log", CLUSTER_CONFIG}:  # a cluster node
                # restarts empty but still a member, as after a power loss with its config
                _remove(path)

    def set_clock_offset(self, seconds: float) -> None:
        """Move this node's wall clock to true time + ``seconds`` (negative: into the past).

        Takes effect on the node's next clock read; the monotonic clock is untouched."""
        if not self.faketime:
            raise UsageError(
                f"{self.name} runs without libfaketime (no clock fault was asked for when the "
                "topology started): its clock cannot be moved"
            )
        self._write_clock(seconds)
        self.clock_offset_s = seconds

    def _write_clock(self, seconds: float) -> None:
        tmp = self.clock_file.with_suffix(".tmp")
        tmp.write_text(f"{seconds:+.3f}\n")
        os.replace(tmp, self.clock_file)  # atomic: the node never reads half a file

    def info(self, section: str) -> dict[str, Any]:
        with self.client() as conn:
            return dict(conn.info(section))


@dataclass
class SentinelNode(_Server):
    """A redis-sentinel process (real clock, always)."""

    config_lines: list[str] = field(default_factory=list)

    @property
    def config(self) -> Path:
        return self.directory / "sentinel.conf"

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        header = [
            f"port {self.port}",
            "bind 127.0.0.1",
            "protected-mode no",
            "daemonize no",
            f'dir "{self.directory}"',
            "sentinel resolve-hostnames no",
        ]
        self.config.write_text("\n".join(header + self.config_lines) + "\n")
        argv = [binaries.find("redis-sentinel"), str(self.config)]
        self.process = self.supervisor.spawn(argv, log=self.log)


def restart_nodes(nodes: Sequence[ServerNode], *, empty: bool = True) -> None:
    """Kill -9 every node, then start them all again on their ports, in parallel.

    ``empty`` wipes the data first; with ``persistence="aof-always"`` and ``empty=False`` a
    node comes back with every write it acknowledged.
    """
    for node in nodes:
        node.kill()
        if empty:
            node.wipe()
    for node in nodes:
        node.start()
    for node in nodes:
        node.wait_ready()


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()


def check_node_count(nodes: int) -> None:
    if not 1 <= nodes <= 15:
        raise UsageError(f"--nodes must be between 1 and 15 (got {nodes})")
