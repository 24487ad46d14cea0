"""The ``external`` provider: Redis servers that already run elsewhere (other machines, a
Kubernetes namespace), named in a TOML file, and a Toxiproxy lockchaos may create links on.

lockchaos starts nothing here. For each client it creates that client's own proxies to every
node on the given Toxiproxy (names prefixed with this run's id, deleted at the end), so
network faults (latency, partitions, resets) work as with the other providers; it cannot
pause, kill or restart the servers or move their clocks, and the replication and Sentinel
links are not its to cut, so those faults are refused up front.

Passwords never appear in the file: it names environment variables that hold them
(``password_env``). They go to the connections only — never into ``describe()``, an error
message or the history. See docs/providers.md for the file format.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import tomllib
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

import requests
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from chaos.errors import UsageError
from chaos.topology.base import PERSISTENCE, host_port, refuse
from chaos.topology.remote import RemoteNode, RemoteServer, RemoteTopology
from chaos.topology.toxiproxy import Link, ToxiproxyAPI


def _address(value: object) -> tuple[str, int]:
    """``"host:port"`` → ``(host, port)``."""
    if not isinstance(value, str):
        raise ValueError("expected a string \"host:port\"")
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"expected \"host:port\", got {value!r}")
    return (host, int(port))


def _toxiproxy_url(value: object) -> str:
    url = urlsplit(str(value))
    if url.scheme != "http" or not url.hostname or not url.port:
        raise ValueError(f"expected the Toxiproxy API as \"http://host:port\", got {value!r}")
    return f"http://{url.hostname}:{url.port}"


Address = Annotated[tuple[str, int], BeforeValidator(_address)]
EnvName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SentinelConfig(_Strict):
    master_name: str = Field(min_length=1)
    addresses: list[Address] = Field(min_length=1)
    password_env: EnvName | None = None


class ExternalConfig(_Strict):
    """The TOML file. ``nodes`` are listed by the address the Sentinels report for them
    (when there are Sentinels), which is also how Toxiproxy and lockchaos reach them."""

    toxiproxy: Annotated[str, BeforeValidator(_toxiproxy_url)]
    proxy_host: str | None = None  # where clients reach the proxies (default: the API's host)
    listen_host: str = "0.0.0.0"  # the interface Toxiproxy binds the proxies to
    nodes: list[Address] = Field(min_length=1, max_length=15)
    resource: Address
    password_env: EnvName | None = None  # of the nodes
    resource_password_env: EnvName | None = None
    sentinel: SentinelConfig | None = None


def load_config(path: Path) -> ExternalConfig:
    """The validated file; ``UsageError`` with one line per problem otherwise."""
    try:
        raw = tomllib.loads(path.read_text())
    except OSError as exc:
        raise UsageError(f"--provider-config {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML: {exc}") from None
    try:
        return ExternalConfig.model_validate(raw)
    except ValidationError as exc:
        lines = []
        for error in exc.errors(include_url=False, include_input=False):
            where = ".".join(str(part) for part in error["loc"]) or "the file"
            message = error["msg"]
            if error["type"] == "extra_forbidden" and "password" in where:
                message = "passwords never go in the file: name an environment variable " \
                    "that holds it with password_env"
            lines.append(f"{path}: {where}: {message}")
        raise UsageError("\n".join(lines)) from None


def _password(variable: str | None, source: str, key: str) -> str | None:
    if variable is None:
        return None
    value = os.environ.get(variable)
    if value is None:
        raise UsageError(
            f"{source}: {key} names the environment variable {variable}, which is not set: "
            "export it"
        )
    return value


class ExternalTopology(RemoteTopology):
    """Existing servers behind an existing Toxiproxy. ``close()`` removes this run's links."""

    provider = "external"
    capabilities = frozenset()  # Toxiproxy faults only

    def __init__(
        self,
        config: ExternalConfig,
        *,
        kind: str = "standalone",
        nodes: int | None = None,
        persistence: str = "none",
        source: str = "the external provider's file",
    ) -> None:
        super().__init__(kind)
        if persistence != "none":
            raise refuse(self.provider, PERSISTENCE)
        if kind == "sentinel" and config.sentinel is None:
            raise UsageError(f"{source} has no [sentinel] table: use --topology standalone")
        addresses = config.nodes
        if kind == "standalone" and nodes is not None:
            if nodes < 1:
                raise UsageError(f"--nodes must be at least 1 (got {nodes})")
            if nodes > len(addresses):
                raise UsageError(
                    f"{nodes} nodes are needed but {source} names {len(addresses)}: "
                    f"pass --nodes {len(addresses)} or name more nodes"
                )
            addresses = addresses[:nodes]
        password = _password(config.password_env, source, "password_env")
        self.nodes = [
            RemoteNode(f"n{i}", host, port, password) for i, (host, port) in enumerate(addresses)
        ]
        self.resource = RemoteServer(
            "resource",
            *config.resource,
            _password(config.resource_password_env, source, "resource_password_env"),
        )
        if kind == "sentinel" and config.sentinel is not None:
            sentinel_password = _password(
                config.sentinel.password_env, source, "sentinel.password_env"
            )
            self.sentinels = [
                RemoteServer(f"s{j}", host, port, sentinel_password)
                for j, (host, port) in enumerate(config.sentinel.addresses)
            ]
            self.master_name = config.sentinel.master_name
        for server in [self.resource, *self.nodes, *self.sentinels]:
            server.check_reachable()
        api = urlsplit(config.toxiproxy)
        assert api.hostname is not None and api.port is not None  # validated
        self.toxiproxy = ToxiproxyAPI(api.port, host=api.hostname)
        self.toxiproxy.wait_ready()
        self.listen_host = config.listen_host
        self.proxy_host = config.proxy_host or api.hostname
        self.run_id = f"lockchaos-{secrets.token_hex(3)}"
        self._closed = False

    @classmethod
    def from_file(cls, path: Path, **options: Any) -> ExternalTopology:
        return cls(load_config(path), source=str(path), **options)

    def _new_link(self, client_id: str, node: int) -> Link:
        target = self.nodes[node]
        return self.toxiproxy.create(
            f"{self.run_id}-{client_id}-{target.name}",
            0,  # Toxiproxy picks a free port on its own host
            target.port,
            upstream_host=target.host,
            listen_host=self.listen_host,
            public_host=self.proxy_host,
        )

    def _reported(self, node: int) -> str:
        return host_port(self.nodes[node].address)

    def close(self) -> None:
        """Delete the links this run created (the servers are not ours to stop)."""
        if self._closed:
            return
        self._closed = True
        for links in self._client_links.values():
            for link in links:
                with contextlib.suppress(requests.RequestException):  # Toxiproxy went away
                    self.toxiproxy.destroy(link.name)
        self._client_links.clear()
