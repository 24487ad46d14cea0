"""The one place lockchaos talks to Toxiproxy.

toxiproxy-python is the project's Toxiproxy client, and ``ToxiproxyAPI`` is the only code that
calls it; everything else asks this module for links by name. The library keeps its server
address in class attributes (``APIConsumer.host/port``), shared by every object in the
process, so each call goes through ``_on_our_server``: it points the library at this
object's server, under one lock, for the duration of the call. Two ``ToxiproxyAPI``s (a local
and a docker topology in one test process, the nemesis thread and the main thread) thus
never talk to each other's server.

Toxiproxy semantics worth knowing (they shape the faults): disabling a proxy closes its
existing connections and refuses new ones; the ``timeout`` toxic drops data rather than
holding it and closes the connection when removed; ``reset_peer`` resets a connection on the
first bytes it gets, which it drops.

Its byte counters (``-proxy-metrics``: Prometheus ``/metrics``, per proxy and direction,
bytes received and bytes sent on) add a connection's bytes once, when that connection closes
(v2.12's ``link.go``: after its ``io.Copy`` returns), never while it is open; bytes a toxic
dropped are counted received and never sent (``Traffic``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import requests
from prometheus_client.parser import text_string_to_metric_families
from toxiproxy.api import APIConsumer
from toxiproxy.proxy import Proxy
from toxiproxy.server import Toxiproxy

from chaos.errors import UsageError
from chaos.topology import conntrack

READY_TIMEOUT_S = 10.0
METRICS_TIMEOUT_S = 2.0  # one read of the byte counters
# The counters of ``-proxy-metrics``, by the direction of the stream: upstream carries what a
# client sends to the server behind the proxy, downstream the server's replies.
RECEIVED, SENT = "toxiproxy_proxy_received_bytes_total", "toxiproxy_proxy_sent_bytes_total"
_LIBRARY = threading.Lock()  # held while the library's class attributes name one server
T = TypeVar("T")


@dataclass(frozen=True)
class Link:
    """A proxy: clients connect to ``listen_port``; Toxiproxy forwards to ``upstream_port``.

    ``host`` is where clients reach the proxy: 127.0.0.1 for a Toxiproxy on this machine (or
    one whose ports Docker publishes here), another host for an external Toxiproxy."""

    name: str
    listen_port: int
    upstream_port: int
    host: str = "127.0.0.1"

    @property
    def address(self) -> tuple[str, int]:
        return (self.host, self.listen_port)


@dataclass(frozen=True)
class Traffic:
    """One proxy's byte counters, summed over the connections it has closed: what it received
    and what it passed on, each way (upstream: client to server; downstream: the replies)."""

    received_up: float = 0
    sent_up: float = 0
    received_down: float = 0
    sent_down: float = 0

    @property
    def dropped_requests(self) -> float:
        """Bytes a client wrote that never reached the server: a toxic (or a cut) dropped them.
        Toxiproxy adds a connection's ``sent`` a moment after its ``received`` when the client
        closes it, so a reading taken in between shows a drop that is not one
        (``chaos.nemesis.link_faults.DropCounter`` confirms a drop over two readings)."""
        return self.received_up - self.sent_up

    @property
    def dropped_replies(self) -> float:
        """Bytes the server answered that never reached the client (lost replies)."""
        return self.received_down - self.sent_down


class ToxiproxyAPI:
    """Proxies and toxics on one Toxiproxy server."""

    def __init__(self, port: int, host: str = "127.0.0.1") -> None:
        self.host, self.port = host, port
        self._server = Toxiproxy()
        self._proxies: dict[str, Proxy] = {}
        self._counts: bool | None = None  # whether it serves ``/metrics`` (``counts_traffic``)

    def _on_our_server(self, call: Callable[[], T]) -> T:
        """Run one library call with the library pointed at this object's server."""
        with _LIBRARY:
            APIConsumer.host, APIConsumer.port = self.host, self.port
            return call()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Wait until the API answers; ``UsageError`` if it never does."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                if requests.get(f"{self.url}/version", timeout=0.5).ok:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.02)
        why = conntrack.saturated() or "is toxiproxy-server running?"
        raise UsageError(f"Toxiproxy at {self.url} is unreachable ({why})")

    def create(
        self,
        name: str,
        listen_port: int,
        upstream_port: int,
        *,
        upstream_host: str = "127.0.0.1",
        listen_host: str = "127.0.0.1",
        public_host: str = "127.0.0.1",
    ) -> Link:
        """A new proxy; ``listen_port`` 0 lets Toxiproxy pick a free port (the link says which).

        ``listen_host`` is the interface Toxiproxy binds, ``public_host`` where clients reach it.
        """
        proxy = self._on_our_server(
            lambda: self._server.create(
                upstream=f"{upstream_host}:{upstream_port}",
                name=name,
                listen=f"{listen_host}:{listen_port}",
            )
        )
        self._proxies[name] = proxy
        return Link(name, _port(proxy.listen), upstream_port, host=public_host)

    def existing(self, name: str, public_host: str = "127.0.0.1") -> Link:
        """A proxy the server already has (from its ``-config`` file), to fault it by name."""
        proxy = self._on_our_server(lambda: self._server.get_proxy(name))
        if proxy is None:
            raise UsageError(f"Toxiproxy at {self.url} has no proxy named {name!r}")
        self._proxies[name] = proxy
        return Link(name, _port(proxy.listen), _port(proxy.upstream), host=public_host)

    def destroy(self, name: str) -> None:
        """Delete a proxy this API created or adopted."""
        self._on_our_server(self._proxy(name).destroy)
        del self._proxies[name]

    def proxy_names(self) -> set[str]:
        """The names of every proxy the server has now (whoever created them)."""
        return set(self._on_our_server(self._server.proxies))

    def _proxy(self, name: str) -> Proxy:
        try:
            return self._proxies[name]
        except KeyError:
            raise UsageError(f"no Toxiproxy link named {name!r}") from None

    def disable(self, name: str) -> None:
        """Cut the link: open connections are closed, new ones refused."""
        self._on_our_server(self._proxy(name).disable)

    def enable(self, name: str) -> None:
        self._on_our_server(self._proxy(name).enable)

    def add_toxic(
        self,
        name: str,
        toxic_type: str,
        *,
        stream: str = "downstream",
        toxic_name: str | None = None,
        toxicity: float = 1.0,
        **attributes: Any,
    ) -> str:
        """Add a toxic (``latency``, ``timeout``, ``reset_peer``, …); returns its name."""
        toxic_name = toxic_name or f"{toxic_type}_{stream}"
        proxy = self._proxy(name)
        self._on_our_server(
            lambda: proxy.add_toxic(
                type=toxic_type,
                stream=stream,
                name=toxic_name,
                toxicity=toxicity,
                attributes=attributes,
            )
        )
        return toxic_name

    def remove_toxic(self, name: str, toxic_name: str) -> None:
        proxy = self._proxy(name)
        self._on_our_server(lambda: proxy.destroy_toxic(toxic_name))

    def reset(self) -> None:
        """Enable every proxy and remove every toxic."""
        self._on_our_server(self._server.reset)

    @property
    def counts_traffic(self) -> bool:
        """Whether the server counts each proxy's bytes (started with ``-proxy-metrics``, as
        the local and docker providers start it; an external Toxiproxy may not be): asked
        once. (A server with ``-runtime-metrics`` alone answers too, and never counts.)"""
        if self._counts is None:
            try:
                self._counts = requests.get(f"{self.url}/metrics", timeout=METRICS_TIMEOUT_S).ok
            except requests.RequestException:
                self._counts = False
        return self._counts

    def traffic(self, names: set[str]) -> dict[str, Traffic]:
        """The byte counters of the proxies named (a proxy none of whose connections has
        closed yet has none: absent). ``requests.RequestException`` when the server does not
        answer, ``requests.HTTPError`` when it does not count (``counts_traffic``)."""
        answer = requests.get(f"{self.url}/metrics", timeout=METRICS_TIMEOUT_S)
        answer.raise_for_status()
        counts: dict[str, dict[str, float]] = {}
        for family in text_string_to_metric_families(answer.text):
            for sample in family.samples:
                proxy = sample.labels.get("proxy")
                if sample.name in (RECEIVED, SENT) and proxy in names:
                    way = "received" if sample.name == RECEIVED else "sent"
                    up = sample.labels.get("direction") == "upstream"
                    counts.setdefault(proxy, {})[f"{way}_{'up' if up else 'down'}"] = sample.value
        return {proxy: Traffic(**values) for proxy, values in counts.items()}


def _port(address: str) -> int:
    """The port of Toxiproxy's ``host:port`` (``[::]:8000`` included)."""
    return int(address.rsplit(":", 1)[1])
