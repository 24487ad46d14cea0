"""The fault catalog: how production breaks locks, one small class per fault.

A fault is applied in three steps so the history can say exactly what happened and when:
``params`` draws its parameters from the schedule's seeded RNG, ``aim`` picks a target in the
live run (the current holder, a node the holder counted on, …), ``apply`` breaks something
and returns the function that heals it. The nemesis writes the start event between ``aim``
and ``apply`` and the stop event after healing.

Everything else about a fault is declared on its class, so adding a fault is one class here
(or in a user's module, through ``register``) and nothing else: its ``effects`` go into its
start event for the checker (which knows no fault by name), and so does its ``evidence``: how
the checker tells that a firing did something to the lock (``report_effect`` writes the
event a ``reported`` fault's effect is seen by; ``Target.stakes`` carries what aiming found),
``needs``/``provider_needs``/``persistence`` say what topology it needs, ``client_needs``
what the lock client must be able to do (a driver that cannot is refused up front),
``stepping`` how the explorer switches it on and off (``None``: not as an on/off step), and
``parameters`` which ``--faults name:key=value`` overrides it takes (``check_params``
refuses any other, before anything starts).
"""

from __future__ import annotations

import random
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from types import MappingProxyType
from typing import Any, ClassVar, TypeVar, cast

import redis

from chaos import history as h
from chaos.errors import UsageError
from chaos.locks.contract import FAKED_CLOCK, PAUSE_POINTS
from chaos.topology import base
from chaos.topology.base import Topology, host_port
from chaos.topology.node import restart_nodes
from chaos.workload.clocks import set_offset as set_client_clock
from chaos.workload.harness import WorkloadEnv
from chaos.workload.inject import PausePoint

Heal = Callable[[], None]
FaultT = TypeVar("FaultT", bound="type[Fault]")
AIM_WAIT_S = 1.0  # how long a fault waits for a holder to aim at before picking anyone
FRESH_HOLD_MS = 5.0  # "just acquired"
CLOCK_AIM_WAIT_S = 10.0  # client-clock: how long to wait for the (spawned) clients to hold


def _nothing() -> None:
    """Heal for faults that heal themselves (a crash, a timed pause, a slow section)."""


@dataclass
class Target:
    """Who a fault hits: a client, some nodes, or both. ``describe`` goes into the history."""

    client: str | None = None
    nodes: list[int] = field(default_factory=list)
    fault_id: str = ""  # the firing's id (set when it is recorded): what its effects name
    # What aiming found that makes the firing matter ("n1, n3 carried c2's key"): a fault
    # reports it as its effect when it acts (``report_effect``); empty: nothing known.
    stakes: str = ""

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.client is not None:
            out["client"] = self.client
        if self.nodes:
            out["nodes"] = [f"n{i}" for i in self.nodes]
        return out


def wait_for_holder(
    env: WorkloadEnv,
    rng: random.Random,
    timeout_s: float = AIM_WAIT_S,
    acquired_within_ms: float | None = None,
) -> str:
    """The current holder (waiting briefly for one, or for one that has just acquired), else
    a random live client. Asked for a fresh holder and none came in time, a holder that
    acquired earlier is still better than a client that holds nothing: with long critical
    sections (a 5 s hold) the next fresh grant may be seconds away."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        holders = env.pool.holders(acquired_within_ms)
        if holders:
            return rng.choice(sorted(holders))
        time.sleep(0.002)
    holders = env.pool.holders() if acquired_within_ms is not None else []
    return rng.choice(sorted(holders or env.pool.workers))


def arm(env: WorkloadEnv, client: str, point: PausePoint, params: dict[str, Any]) -> list[str]:
    """Arm ``point`` on ``client`` (``*``: every one), and on the first replacement of each
    if ``params`` say ``replaced=1``; returns the clients armed now."""
    armed = sorted(env.pool.workers) if client == "*" else [client]
    for cid in armed:
        env.pool.arm(cid, point)
    if params.get("replaced"):
        env.pool.keep_for_replacements(point, armed)
    return armed


def named_or_holder(env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
    """The client ``params`` names (``client=c2``, or ``*`` for every one), else the holder."""
    if "client" in params:
        return Target(client=str(params["client"]))
    return Target(client=wait_for_holder(env, rng))


@dataclass(frozen=True)
class TTLs:
    """Parameter values as multiples of the TTL (the explorer draws ``round(f × ttl_ms)``)."""

    factors: tuple[float, ...]


@dataclass(frozen=True)
class Stepping:
    """How the explorer makes a fault an on/off step: ``aims_at`` ``client`` (one client's
    links to some nodes), ``nodes`` or ``master`` (the fault picks it when it fires);
    ``instant`` faults heal themselves at once (a crash followed by a restart) and have no
    off step. ``choices`` are the parameter values it draws from, mildest first (a plain
    tuple, or ``TTLs``), so a shrunk program reads "offset +1.5×TTL"."""

    aims_at: str
    instant: bool = False
    choices: dict[str, tuple[Any, ...] | TTLs] = field(default_factory=dict)


@dataclass(frozen=True)
class Param:
    """One parameter a fault takes: its kind (``number``, ``integer`` or ``text``) and the
    values it can apply. A value outside them is refused before the run starts, in one line,
    rather than failing mid-run (or, worse, doing nothing and passing)."""

    kind: str = "number"
    min: float | None = None  # inclusive
    above: float | None = None  # exclusive lower bound
    max: float | None = None  # inclusive
    choices: tuple[Any, ...] = ()
    nonzero: bool = False
    pattern: str | None = None  # text: a regular expression the whole value must match
    shape: str = ""  # text: how the pattern reads to a person

    def describe(self) -> str:
        if self.choices:
            return "one of " + ", ".join(map(str, self.choices))
        if self.kind == "text":
            return self.shape or "text"
        if self.min is not None and self.max is not None:
            bounds = [f"from {_num(self.min)} to {_num(self.max)}"]
        else:
            bounds = [f"> {_num(self.above)}" if self.above is not None else "",
                      f"≥ {_num(self.min)}" if self.min is not None else "",
                      f"≤ {_num(self.max)}" if self.max is not None else ""]
        bounds.append("not 0" if self.nonzero else "")
        what = "an integer" if self.kind == "integer" else "a number"
        return " ".join([what, ", ".join(b for b in bounds if b)]).strip()

    def accepts(self, value: Any) -> bool:
        if self.choices:
            return value in self.choices
        if self.kind == "text":
            return isinstance(value, str) and (
                self.pattern is None or re.fullmatch(self.pattern, value) is not None
            )
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if self.kind == "integer" and not float(value).is_integer():
            return False
        return not (
            (self.above is not None and not value > self.above)
            or (self.min is not None and value < self.min)
            or (self.max is not None and value > self.max)
            or (self.nonzero and value == 0)
        )


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


DURATION = Param(above=0)  # how long the fault stays on, ms: a fault that is never on tests nothing
ON_ITS_OWN = Param(min=0)  # a fault that heals itself (a crash, a slow section): 0 is fine
OP = Param(choices=("acquire", "release", "extend"))
COMMAND = Param("text", pattern=r"\*|[A-Z][A-Z_.|-]*",
                shape="a Redis command in capitals (DEL) or *")
NTH = Param("integer", min=1)
NAMED_OR_EVERY = Param("text", pattern=r"\*|c[0-9]+", shape="a client id (c2) or * (every one)")
# 1: a point is armed on the first replacement of each client it was armed on as well (a
# fresh process after a crash: ``WorkerPool.keep_for_replacements``).
REPLACED = Param("integer", min=0, max=1)
DAY_MS = 86_400_000


def takes(**parameters: Param) -> Mapping[str, Param]:
    """A fault class's ``parameters``, read-only: the class shares them with every instance."""
    return MappingProxyType(parameters)


class Fault(ABC):
    name: ClassVar[str]
    summary: ClassVar[str]
    effects: ClassVar[frozenset[str]]  # chaos.history.EFFECTS: what the checker may conclude
    # chaos.history.EVIDENCE: what shows that a firing did something to the lock
    evidence: ClassVar[str] = h.ACTIVITY
    stepping: ClassVar[Stepping | None] = None  # how the explorer steps it (None: it does not)
    # "any", or "replicated": a master with replicas to fail over to (sentinel or cluster)
    needs: ClassVar[str] = "any"
    persistence: ClassVar[str] = "none"  # what the data nodes must be started with
    # What it asks of the topology's provider beyond Toxiproxy (chaos.topology.base):
    # a provider that cannot do it refuses the fault before anything starts.
    provider_needs: ClassVar[frozenset[str]] = frozenset()
    # It moves client clocks: every client of its run then starts under libfaketime
    # (chaos.workload.clocks), which a campaign sets up before the clients start.
    fakes_client_clocks: ClassVar[bool] = False
    # What it asks of the lock client (chaos.locks.contract: PAUSE_POINTS, FAKED_CLOCK): every
    # Python lock can do it all; a driver that does not announce it refuses the fault before
    # anything starts.
    client_needs: ClassVar[frozenset[str]] = frozenset()
    # The overrides it takes (``--faults name:key=value``); the keys ``params`` draws.
    parameters: ClassVar[Mapping[str, Param]] = takes(duration_ms=DURATION)
    # How long a firing may take from its start until it acts on the lock (a failover waits
    # for a replica's promotion): a short run that is to see what follows lasts this longer.
    acts_after_s: ClassVar[float] = 0.0

    @classmethod
    def check_params(cls, overrides: dict[str, Any]) -> None:
        """``UsageError`` (one line) for an override this fault does not take, or a value it
        cannot apply: an unknown key, a wrong type, a duration that is not positive."""
        for key, value in overrides.items():
            param = cls.parameters.get(key)
            if param is None:
                known = ", ".join(sorted(cls.parameters)) or "no parameters"
                raise UsageError(f"fault {cls.name} has no parameter {key!r}; it takes {known}")
            if not param.accepts(value):
                raise UsageError(
                    f"fault {cls.name}: {key} must be {param.describe()} (got {value!r})"
                )

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        """Parameters for one occurrence; ``duration_ms`` is how long it stays on."""
        return {"duration_ms": round(rng.uniform(1.0, 2.0) * ttl_ms)}

    def aim(self, env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        return Target(client=wait_for_holder(env, rng))

    def evidence_for(self, env: WorkloadEnv, target: Target) -> str:
        """The evidence this firing's start event declares: the class's ``evidence``, unless
        the fault cannot see its effect at ``target`` (then ``activity``, never a claim of
        ``reported`` that no event could back)."""
        return self.evidence

    @abstractmethod
    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal: ...


# -- client process faults ---------------------------------------------------------------


class ClientPause(Fault):
    """Without a ``duration_ms`` (the explorer's pause step) the client stays stopped until
    healed."""

    name = "client-pause"
    summary = "GC pause: SIGSTOP the holder's process (watchdog threads too), SIGCONT later"
    effects = frozenset({h.STALLS_CLIENT})

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {"duration_ms": round(rng.uniform(1.5, 3.0) * ttl_ms)}

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        assert target.client is not None
        duration = params.get("duration_ms")
        env.pool.pause(target.client, duration or None)
        return _nothing if duration else partial(env.pool.resume, target.client)


class ClientPauseAt(Fault):
    """Pause at a pause-injection point: the window between a check and an act. Without a
    ``duration_ms`` (the explorer's arm step) the client stays stopped there until healed.

    It arms the holder by default. ``client=*`` arms every client instead: a point only some
    waiter reaches — 004's GETSET, sent by whichever client first reads an expired value —
    is then reached by whoever gets there, not only by a holder that may never go there.
    ``replaced=1`` arms each armed client's first replacement too: a command a lock sends
    once per process (``lua-loaded-once``'s ``SCRIPT LOAD``) comes again only from a new one."""

    name = "client-pause-at"
    summary = "pause a client right before a command of its release (default: the DEL)"
    effects = frozenset({h.STALLS_CLIENT})
    evidence = h.REPORTED  # a client stopped at the point (its pause-point event)
    client_needs = frozenset({PAUSE_POINTS})
    parameters = takes(
        duration_ms=DURATION, command=COMMAND, op=OP, nth=NTH,
        client=NAMED_OR_EVERY, replaced=REPLACED,
    )

    def aim(self, env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        return named_or_holder(env, rng, params)

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {
            "duration_ms": round(rng.uniform(1.5, 3.0) * ttl_ms),
            "command": "DEL",
            "op": "release",
        }

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        assert target.client is not None
        point = PausePoint(
            params["command"],
            action="pause",
            duration_ms=params.get("duration_ms", 0),
            op=params["op"],
            nth=params.get("nth", 1),
            fault=target.fault_id,
        )
        armed = arm(env, target.client, point, params)
        if point.duration_ms:
            return _nothing

        def heal() -> None:
            for client in armed:
                env.pool.resume(client)

        return heal


class ClientCrash(Fault):
    """Half the time a plain SIGKILL of the holder; half the time a crash armed between the
    first and second round trip of an acquire (between SETNX and EXPIRE, where there is one).

    ``client=`` names the client instead of the holder; ``client=*`` arms every client (with
    ``command=``: whoever gets there crashes — a ``SCRIPT LOAD`` only the first client to run
    a script after a flush sends) or kills every one (without it); ``replaced=1`` arms each
    one's first replacement too, as ``client-pause-at``'s does."""

    name = "client-crash"
    summary = "SIGKILL a client, or crash it between the round trips of its acquire"
    effects = frozenset({h.KILLS_CLIENT})
    evidence = h.REPORTED  # a crash at the point, or a kill while the client was at the lock
    parameters = takes(duration_ms=ON_ITS_OWN, command=COMMAND, op=OP, nth=NTH,
                       client=NAMED_OR_EVERY, replaced=REPLACED)

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        if rng.random() < 0.5:
            return {"duration_ms": 0}
        return {"duration_ms": 0, "command": "*", "op": "acquire", "nth": 2}

    def aim(self, env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        return named_or_holder(env, rng, params)

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        assert target.client is not None
        if params.get("command"):
            point = PausePoint(params["command"], action="crash", op=params["op"],
                               nth=params.get("nth", 1), fault=target.fault_id)
            arm(env, target.client, point, params)
            return _nothing
        for client in sorted(env.pool.workers) if target.client == "*" else [target.client]:
            env.pool.kill(client, target.fault_id)
        return _nothing


class SlowWork(Fault):
    name = "slow-work"
    summary = "a critical section longer than the TTL (the expiry race)"
    effects = frozenset({h.STALLS_CLIENT})
    evidence = h.REPORTED  # the slow critical section began (the client's effect event)
    parameters = takes(duration_ms=ON_ITS_OWN, work_ms=Param(above=0))

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {"duration_ms": 0, "work_ms": round(rng.uniform(1.5, 3.0) * ttl_ms)}

    def aim(self, env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        # The holder: its critical section under way lasts the slow work from its start
        # (``Worker.work``), or, between sections, its next one does. A random client may
        # never hold again before the run ends: the fault then does nothing, and the run is
        # inconclusive for it.
        return Target(client=wait_for_holder(env, rng))

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        assert target.client is not None
        env.pool.slow_work(target.client, params["work_ms"], fault=target.fault_id)
        return _nothing


# -- network faults (Toxiproxy, on one client's own links) -------------------------------------
#
# A network fault does something to the lock only when a command of a client it hits crosses
# a faulted link while it is on: a holder that only works, sending nothing, is not slowed or
# cut by it. Toxiproxy cannot say when that happens (v2.12's byte counters add a connection's
# bytes once, when it closes), the client can: the fault arms a watch on each client it hits
# (``WorkerPool.watch``, ``chaos.workload.inject.Watch``) naming the client's own links to
# the faulted nodes, live once the toxics are on, and the first command the client sends
# over one of them after that (or a connection there refused) writes the firing's ``effect``
# ("c2 sent EVAL to n0 while latency was on"). The heal ends the watches before it removes
# the toxics. A client whose commands the harness cannot see going to a node (a driver, which
# announces commands but not their node, when the fault is on only some of its links) makes
# the firing declare ``activity`` instead (``LinkFault.evidence_for``).


def toxic_on_client(topology: Topology, client: str, toxic: str,
                    faulted: Callable[[int], None] = lambda node: None, **options: Any) -> Heal:
    """Add one Toxiproxy toxic to every link of ``client`` (telling ``faulted`` each node
    whose link has it); the heal removes them."""
    api, links = topology.toxiproxy, topology.client_links(client)
    names = []
    for node, link in enumerate(links):
        names.append(api.add_toxic(link.name, toxic, **options))
        faulted(node)

    def heal() -> None:
        for link, name in zip(links, names, strict=True):
            api.remove_toxic(link.name, name)

    return heal


def cut_client_links(topology: Topology, client: str, nodes: list[int],
                     faulted: Callable[[int], None] = lambda node: None) -> Heal:
    """Disable ``client``'s links to ``nodes`` (open connections close, new ones are refused;
    ``faulted`` is told each node cut); the heal enables them again."""
    links = [topology.client_links(client)[i] for i in nodes]
    for node, link in zip(nodes, links, strict=True):
        topology.toxiproxy.disable(link.name)
        faulted(node)

    def heal() -> None:
        for link in links:
            topology.toxiproxy.enable(link.name)

    return heal


class LinkFault(Fault):
    """A fault on the links of the clients it hits (``hit_clients``) to some nodes
    (``hit_nodes``): its effect is reported by the watches ``watched`` arms on them."""

    evidence = h.REPORTED  # a command of a hit client crossed a faulted link while it was on

    def hit_clients(self, env: WorkloadEnv, target: Target) -> list[str]:
        assert target.client is not None
        return sorted(env.pool.workers) if target.client == "*" else [target.client]

    def hit_nodes(self, env: WorkloadEnv, target: Target) -> list[int]:
        """The nodes whose links it faults: every one, unless it aims at some."""
        return target.nodes or list(range(len(env.topology.nodes)))

    def evidence_for(self, env: WorkloadEnv, target: Target) -> str:
        everywhere = len(self.hit_nodes(env, target)) == len(env.topology.nodes)
        clients = self.hit_clients(env, target)
        if clients and all(env.pool.watchable(c, everywhere) for c in clients):
            return h.REPORTED
        return h.ACTIVITY

    def watched(self, env: WorkloadEnv, target: Target,
                apply: Callable[[Callable[[str, int], None]], Heal],
                holds_replies: bool = False) -> Heal:
        """``apply`` the fault with a watch on every hit client that can be watched (on any
        other, ``evidence_for`` declared ``activity``): sent before the links are faulted,
        and live for a node once ``apply`` says (``faulted(client, node)``) that client's
        link to it is, so a command counts only if it left after the fault was on its link
        (a cluster's six links take a while to fault); the heal ends them before it undoes
        ``apply``. ``reply-lost:client=*`` watches every client: one command of any of them
        is the firing's effect. ``holds_replies``: the fault keeps replies from coming back (lost,
        delayed downstream, its link cut), so a command whose reply was still awaited once it
        was on counts too (``chaos.workload.inject.Watch``)."""
        nodes = self.hit_nodes(env, target)
        everywhere = len(nodes) == len(env.topology.nodes)
        watches = {client: env.pool.watch(client, target.fault_id, self.name, nodes, everywhere,
                                          holds_replies)
                   for client in self.hit_clients(env, target)
                   if env.pool.watchable(client, everywhere)}

        def faulted(client: str, node: int) -> None:
            if client in watches:
                watches[client].start(node)

        try:
            heal = apply(faulted)
        except BaseException:
            for watch in watches.values():
                watch.stop()
            raise

        def unwatch_then_heal() -> None:
            for watch in watches.values():
                watch.stop()
            heal()

        return unwatch_then_heal


class Latency(LinkFault):
    name = "latency"
    summary = "latency and jitter on one client's links (Toxiproxy), up- or downstream"
    effects = frozenset({h.DISTURBS_NETWORK})
    parameters = takes(
        duration_ms=DURATION,
        latency_ms=Param("integer", min=0),
        jitter_ms=Param("integer", min=0),
        stream=Param(choices=("upstream", "downstream")),
    )
    stepping = Stepping(
        "client",
        choices={
            "latency_ms": TTLs((0.6, 1.2)),
            "jitter_ms": (0,),
            "stream": ("downstream", "upstream"),
        },
    )

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {
            "duration_ms": round(rng.uniform(2.0, 4.0) * ttl_ms),
            "latency_ms": round(rng.uniform(0.3, 0.6) * ttl_ms),
            "jitter_ms": round(0.1 * ttl_ms),
            "stream": rng.choice(["upstream", "downstream"]),
        }

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        assert target.client is not None
        client = target.client
        return self.watched(env, target, lambda faulted: toxic_on_client(
            env.topology,
            client,
            "latency",
            partial(faulted, client),
            stream=params["stream"],
            latency=params["latency_ms"],
            jitter=params["jitter_ms"],
        ), holds_replies=params["stream"] == "downstream")


class Partition(LinkFault):
    name = "partition"
    summary = "cut a client from one node, a minority or a majority of nodes; heal"
    effects = frozenset({h.DISTURBS_NETWORK})
    parameters = takes(duration_ms=DURATION, scope=Param(choices=("one", "minority", "majority")))
    stepping = Stepping("client")

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {
            "duration_ms": round(rng.uniform(2.0, 5.0) * ttl_ms),
            "scope": rng.choice(["one", "minority", "majority"]),
        }

    def aim(self, env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        n = len(env.topology.nodes)
        count = {"one": 1, "minority": max(1, (n - 1) // 2), "majority": n // 2 + 1}
        nodes = sorted(rng.sample(range(n), min(n, count[params["scope"]])))
        return Target(client=wait_for_holder(env, rng), nodes=nodes)

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        assert target.client is not None
        client = target.client
        return self.watched(env, target, lambda faulted: cut_client_links(
            env.topology, client, target.nodes, partial(faulted, client)), holds_replies=True)


class Reset(LinkFault):
    name = "reset"
    summary = "reset one client's connections mid-command (indeterminate outcomes)"
    effects = frozenset({h.DISTURBS_NETWORK})
    parameters = takes(duration_ms=DURATION, toxicity=Param(above=0, max=1))
    stepping = Stepping("client", choices={"toxicity": (1.0,)})

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {"duration_ms": round(rng.uniform(0.5, 1.5) * ttl_ms), "toxicity": 0.5}

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        assert target.client is not None
        client = target.client
        return self.watched(env, target, lambda faulted: toxic_on_client(
            env.topology, client, "reset_peer", partial(faulted, client), stream="upstream",
            toxicity=params["toxicity"], timeout=0,
        ))  # fmt: skip


class ReplyLost(LinkFault):
    """One-way loss: the client's commands reach Redis and are applied, their replies never
    come back. A Toxiproxy ``timeout`` toxic (timeout 0) on the downstream stream of the
    client's links drops what Redis answers; removing it closes the connections whose
    stream it cut. The client's command times out (an indeterminate ``info``): its ``SET NX``
    may have taken the lock, its ``DEL`` may have freed it. A lock that reads the timeout
    as "refused" or stops half-way keeps a key nobody owns (``setnx-expire``'s SETNX applied,
    its EXPIRE never sent: a key with no expiry).

    It hits the holder by default; ``client=*`` hits every client, as a server whose
    outbound traffic is lost does: then the first ``SET NX`` after the holder's lost
    ``DEL`` is applied and unanswered too."""

    name = "reply-lost"
    summary = ("drop the replies to one client (its commands still reach Redis and apply): "
               "indeterminate outcomes")
    effects = frozenset({h.DISTURBS_NETWORK})
    parameters = takes(duration_ms=DURATION, client=NAMED_OR_EVERY)
    stepping = Stepping("client")

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {"duration_ms": round(rng.uniform(1.0, 3.0) * ttl_ms)}

    def aim(self, env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        return named_or_holder(env, rng, params)

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        def apply(faulted: Callable[[str, int], None]) -> Heal:
            heals = [toxic_on_client(env.topology, client, "timeout", partial(faulted, client),
                                     stream="downstream", timeout=0)
                     for client in self.hit_clients(env, target)]

            def heal() -> None:
                for undo in heals:
                    undo()

            return heal

        return self.watched(env, target, apply, holds_replies=True)


# -- server faults -------------------------------------------------------------------------


def holder_nodes(env: WorkloadEnv, client: str) -> list[int]:
    """Nodes on which a key that ``client``'s current acquire wrote still holds a value that
    acquire sent (a string, or a hash field or value): the nodes its grant rests on, whatever
    the lock names its key and whatever it stores (its own UUID, a prefixed key). Learnt from
    what the client's own connections sent (``WorkerPool.written``), confirmed by direct reads
    (the nemesis may look at Redis; the checker never does)."""
    return sorted(i for i, (keys, values) in _written_on(env, client).items()
                  if _still_holds(env.topology.nodes[i], keys, values))


def _written_on(env: WorkloadEnv, client: str) -> dict[int, tuple[list[str], set[str]]]:
    """Per node index, the keys and values ``client``'s current acquire wrote there."""
    routes = {host_port(address): i
              for i, address in enumerate(env.topology.client_view(client).nodes)}
    return {routes[address]: (keys, set(values))
            for address, (keys, values) in env.pool.written(client).items()
            if address in routes}


def _still_holds(node: base.ServerNode, keys: list[str], values: set[str]) -> bool:
    try:
        with node.client(socket_timeout=0.2, decode_responses=True) as conn:
            return _key_holds(conn, keys, values)
    except redis.RedisError:
        return False


def _key_holds(conn: redis.Redis, keys: list[str], values: set[str] | None) -> bool:
    """Whether one of ``keys`` still holds one of ``values`` (a string, or a hash field or
    value); with the values unknown (``None``: a driver's acquire), whether one exists."""
    if values is None:
        return any(conn.exists(key) for key in keys)
    for key in keys:
        kind = conn.type(key)
        if kind == "string" and conn.get(key) in values:
            return True
        if kind == "hash":
            fields = cast(list[str], conn.hkeys(key)) + cast(list[str], conn.hvals(key))
            if values & set(fields):
                return True
    return False


def undermine_grant(env: WorkloadEnv, rng: random.Random) -> Target:
    """The holder and enough of the nodes it counted on that what remains of its grant is no
    longer a majority — so another client can win one (Kleppmann's Redlock scenarios).
    The holder is caught just after it acquired, with its whole critical section ahead."""
    client = wait_for_holder(env, rng, acquired_within_ms=FRESH_HOLD_MS)
    n, quorum = len(env.topology.nodes), len(env.topology.nodes) // 2 + 1
    carried = holder_nodes(env, client)
    held = carried or list(range(n))
    count = max(1, len(held) - quorum + 1)
    nodes = sorted(rng.sample(held, min(count, len(held))))
    named = ", ".join(f"n{i}" for i in nodes)
    stakes = ""
    if carried:
        stakes = f"{named} carried {client}'s key"
    elif client in env.pool.holders():  # a grant it cannot see (a driver's): by counting,
        # n - quorum + 1 of the n nodes include one of the quorum the grant rests on
        stakes = f"{named} ({count} of {n}) carried {client}'s key on at least one"
    return Target(client=client, nodes=nodes, stakes=stakes)


def report_effect(env: WorkloadEnv, target: Target, what: str) -> None:
    """Write the ``effect`` event that shows a ``reported`` fault's firing did something."""
    env.history.log(h.INFO, h.NEMESIS, h.EFFECT, value={"id": target.fault_id, "what": what})


def report_stakes(env: WorkloadEnv, target: Target, when: str) -> None:
    """Report the firing's effect if aiming found what it puts at stake ("n2 carried c1's key
    when it was killed"): a server fault that meets no grant does nothing to the lock. Learnt
    while aiming, so acting on it costs no round trip (the holder's window is short)."""
    if target.stakes:
        report_effect(env, target, f"{target.stakes} {when}")


class ServerPause(Fault):
    name = "server-pause"
    provider_needs = frozenset({base.PAUSE})
    summary = "SIGSTOP a redis-server for less than the TTL, then SIGCONT"
    effects = frozenset({h.STALLS_SERVER})
    stepping = Stepping("nodes")

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {"duration_ms": round(rng.uniform(0.2, 0.8) * ttl_ms)}

    def aim(self, env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        return Target(nodes=[rng.randrange(len(env.topology.nodes))])

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        nodes = [env.topology.nodes[i] for i in target.nodes]
        for node in nodes:
            node.pause()

        def heal() -> None:
            for node in nodes:
                node.resume()

        return heal


class CrashRestart(Fault):
    """kill -9 a node the holder counted on and restart it empty at once: the grant is gone."""

    name = "crash-restart"
    provider_needs = frozenset({base.RESTART})
    summary = "kill -9 nodes the holder counted on, restart them empty at once"
    effects = frozenset({h.RESTARTS_SERVER, h.LOSES_KEYS})
    evidence = h.REPORTED  # a killed node carried a holder's key
    parameters = takes(duration_ms=ON_ITS_OWN)  # how long the node stays down (0: at once)
    stepping = Stepping("nodes", instant=True)
    delay_ttls: ClassVar[float] = 0.0  # restart after this many TTLs (0: at once)

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {"duration_ms": round(self.delay_ttls * ttl_ms * rng.uniform(1.5, 2.0))}

    def aim(self, env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        return undermine_grant(env, rng)

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        nodes = [env.topology.nodes[i] for i in target.nodes]
        empty = self.persistence == "none"
        report_stakes(env, target, "when killed")
        for node in nodes:
            node.kill()

        def heal() -> None:
            restart_nodes(nodes, empty=empty)

        if not params.get("duration_ms", self.delay_ttls):  # the explorer heals on its step
            heal()
            return _nothing
        return heal


class CrashRestartDelayed(CrashRestart):
    name = "crash-restart-delayed"
    summary = "kill -9 a node, restart it empty after more than the TTL (as the Redis docs advise)"
    parameters = takes(duration_ms=DURATION)
    stepping = Stepping("nodes")
    delay_ttls = 1.0


class CrashRestartAof(CrashRestart):
    name = "crash-restart-aof"
    summary = "kill -9 a node running appendfsync always, restart it with its data at once"
    effects = frozenset({h.RESTARTS_SERVER})  # appendfsync always: the keys come back
    persistence = "aof-always"


FILLER_BYTES = 32 * 1024  # evict: the size of one filler value
FILLER_HEADROOM = 4  # evict: maxmemory is used memory plus this many filler values
FILL_LIMIT = 512  # evict: at most this many filler keys per node and firing…
FILL_TIME_S = 0.5  # …written within this long
EVICTION_POLICIES = ("allkeys-lru", "allkeys-lfu", "allkeys-random",
                     "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl")


def _slot_tag(key: str) -> str:
    """A hash tag that puts a filler key in ``key``'s cluster slot (and on its node)."""
    start = key.find("{")
    end = key.find("}", start + 1)
    return key[start + 1:end] if start >= 0 and end > start + 1 else key


class Evict(Fault):
    """Memory pressure on a Redis that evicts (a cache-sized instance the lock shares): a
    key the lock relies on is evicted before it expires, and another client acquires.

    On the nodes the holder counted on, ``maxmemory`` is set just above the memory in use
    and ``maxmemory-policy`` to ``policy``; filler keys (with a long TTL, so every policy,
    ``volatile-*`` too, may evict them) are written until the holder's key is gone, at most
    ``FILL_LIMIT`` of them within ``FILL_TIME_S``. The firing's effect is reported only when
    the holder's key was really evicted while it still held the lock. Healing restores both
    settings and deletes the filler. ``noeviction`` (Redis's default) is not a policy this
    fault takes: under it nothing is evicted (writes fail with OOM instead)."""

    name = "evict"
    summary = ("maxmemory just above used memory with an eviction policy, filler keys until "
               "the holder's key is evicted")
    effects = frozenset({h.LOSES_KEYS})
    evidence = h.REPORTED  # the holder's key was evicted while it held the lock
    parameters = takes(duration_ms=DURATION, policy=Param(choices=EVICTION_POLICIES))

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {"duration_ms": round(rng.uniform(1.0, 2.0) * ttl_ms), "policy": "allkeys-lru"}

    def aim(self, env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        return undermine_grant(env, rng)

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        assert target.client is not None
        written = _written_on(env, target.client)
        fillers: dict[int, list[str]] = {}
        restore: dict[int, dict[str, str]] = {}
        evicted: list[str] = []
        for i in target.nodes:
            node = env.topology.nodes[i]
            keys, values = written.get(i, ([env.config.lock_name], None))
            with node.client(socket_timeout=1.0, decode_responses=True) as conn:
                restore[i] = {name: conn.config_get(name)[name]
                              for name in ("maxmemory", "maxmemory-policy")}
                conn.config_set("maxmemory-policy", params["policy"])
                used = int(conn.info("memory")["used_memory"])
                conn.config_set("maxmemory", used + FILLER_HEADROOM * FILLER_BYTES)
                fillers[i], gone = _fill_until_gone(conn, keys, values)
            if gone and target.client in env.pool.holders():
                evicted.append(f"n{i}")
        if evicted:
            report_effect(env, target, f"{', '.join(evicted)} evicted {target.client}'s key "
                                       "while it held the lock")

        def heal() -> None:
            for i, settings in restore.items():
                with env.topology.nodes[i].client(socket_timeout=1.0) as conn:
                    conn.config_set("maxmemory", settings["maxmemory"])
                    conn.config_set("maxmemory-policy", settings["maxmemory-policy"])
                    if fillers[i]:
                        conn.unlink(*fillers[i])

        return heal


def _fill_until_gone(
    conn: redis.Redis, keys: list[str], values: set[str] | None
) -> tuple[list[str], bool]:
    """Write filler keys until none of ``keys`` holds one of ``values`` (``_key_holds``);
    the fillers written, and whether the keys went. Keys already gone (or never there: a
    driver that prefixes the lock's name) are not the filler's doing: nothing is written."""
    if not _key_holds(conn, keys, values):
        return [], False
    tag = _slot_tag(keys[0])
    blob = "x" * FILLER_BYTES
    names: list[str] = []
    deadline = time.monotonic() + FILL_TIME_S
    while len(names) < FILL_LIMIT and time.monotonic() < deadline:
        if names and not _key_holds(conn, keys, values):
            return names, True
        names.append(f"{{{tag}}}:lockchaos-filler:{len(names)}")
        try:
            conn.set(names[-1], blob, px=3_600_000)
        except redis.ResponseError:  # OOM: nothing left this policy may evict
            return names, not _key_holds(conn, keys, values)
    return names, not _key_holds(conn, keys, values)


class ScriptFlush(Fault):
    """A node forgets its cached scripts — a restart or a failover to a replica does it, and
    so does ``SCRIPT FLUSH`` — and the lock keeps its keys. A lock that sends ``EVALSHA``
    must answer ``NOSCRIPT`` by loading the script again (redis-py's ``Script`` does); one
    that loaded its scripts once (redlock-rb #148, resque-scheduler #298) cannot acquire or
    release any more. The firing's effect is reported when a node answered ``NOSCRIPT``
    between the flush and the heal (``INFO errorstats``, Redis ≥ 6.2): a lock that sends
    ``EVAL`` never notices a flush, and a run of it is inconclusive, as it should be."""

    name = "script-flush"
    summary = "SCRIPT FLUSH every node (as a restart does): a cached EVALSHA gets NOSCRIPT"
    effects = frozenset({h.FORGETS_SCRIPTS})
    evidence = h.REPORTED  # a node answered NOSCRIPT after the flush

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {"duration_ms": round(rng.uniform(2.0, 4.0) * ttl_ms)}

    def aim(self, env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        return Target(nodes=list(range(len(env.topology.nodes))))

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        nodes = {i: env.topology.nodes[i] for i in target.nodes}
        before = {}
        for i, node in nodes.items():
            with node.client(socket_timeout=1.0) as conn:
                before[i] = _noscript_errors(conn)
                conn.script_flush()

        def heal() -> None:
            answered = []
            for i, node in nodes.items():
                with node.client(socket_timeout=1.0) as conn:
                    if (grew := _noscript_errors(conn) - before[i]) > 0:
                        answered.append(f"n{i} {grew}×")
            if answered:
                report_effect(env, target, "NOSCRIPT after the flush: " + ", ".join(answered))

        return heal


def _noscript_errors(conn: redis.Redis) -> int:
    """How many NOSCRIPT errors the node has answered since it started (0 before 6.2)."""
    stats = cast(dict[str, Any], conn.info("errorstats")).get("errorstat_NOSCRIPT", {})
    return int(stats.get("count", 0)) if isinstance(stats, dict) else 0


class ClockJump(Fault):
    """Kleppmann's Redlock scenario: a node's wall clock jumps and the key expires early."""

    name = "clock-jump"
    provider_needs = frozenset({base.CLOCK})
    summary = "jump the wall clock of nodes the holder counted on (libfaketime), then back"
    effects = frozenset({h.MOVES_CLOCK, h.LOSES_KEYS})
    evidence = h.REPORTED  # a node whose clock jumped carried a holder's key
    # An offset of 0 moves nothing; libfaketime takes ±a day at most from this fault.
    parameters = takes(
        duration_ms=DURATION, offset_ms=Param("integer", min=-DAY_MS, max=DAY_MS, nonzero=True)
    )
    stepping = Stepping("nodes", choices={"offset_ms": TTLs((1.5, 3.0, -1.5))})

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {
            "duration_ms": round(rng.uniform(2.0, 4.0) * ttl_ms),
            "offset_ms": round(rng.uniform(1.5, 3.0) * ttl_ms) * rng.choice([1, 1, 1, -1]),
        }

    def aim(self, env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        return undermine_grant(env, rng)

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        nodes = [env.topology.nodes[i] for i in target.nodes]
        report_stakes(env, target, "when its clock jumped")
        for node in nodes:
            node.set_clock_offset(params["offset_ms"] / 1000)

        def heal() -> None:
            for node in nodes:
                node.set_clock_offset(0.0)

        return heal


class Failover(Fault):
    """Seed 003's cluster problem: the master is lost before the lock reached any replica.

    Cutting the master's cluster links (``Topology.cluster_links``: replication and
    Sentinel's view, or in a Redis Cluster replication and its and its replicas' cluster bus)
    stops replication and hides it from whoever elects a new master, and the new master from
    it, while clients still reach it through their own links and keep locking it. Once a
    replica (which never got the key) is promoted — by Sentinel, or by its own takeover in a
    cluster — every client but the current holder loses its links to the old master until
    healed, as clients on the majority's side of a partition do, and finds the new one
    (through Sentinel, or the cluster's slot map: with its link only closed and opened again
    a cluster client could reconnect to the old master, which still claims the slots, and
    lock it in turn with the holder, no split): the holder still locks the old master, the
    others the new one. Healing rejoins the old master, which is then demoted, and then the
    others' links to it; in a cluster it waits for that demotion, as the next failover elects
    one of the new master's replicas (``Topology.await_demotion``). The split is its effect,
    reported only while the run's clients still run: a promotion that came after they had
    stopped did nothing to the lock.
    """

    name = "failover"
    summary = "cut replication from the master, let Sentinel promote a replica, split clients"
    effects = frozenset({h.LOSES_KEYS, h.SPLITS_MASTER})
    evidence = h.REPORTED  # the clients were split between two masters
    parameters = takes(duration_ms=DURATION, promote_timeout_ms=Param(above=0, max=600_000))
    stepping = Stepping("master", choices={"promote_timeout_ms": (8000,)})
    needs = "replicated"
    provider_needs = frozenset({base.CLUSTER_LINKS})
    # Sentinel promotes a replica 2.1–2.9 s after the master is cut off (down-after 600 ms,
    # then its vote, then its next INFO of the replica; measured on 2 busy cores).
    acts_after_s = 3.0

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {"duration_ms": round(rng.uniform(3.0, 5.0) * ttl_ms), "promote_timeout_ms": 8000}

    def aim(self, env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        return Target(nodes=[env.topology.master_index(env.config.lock_name)])

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        (old,) = target.nodes
        api, links = env.topology.toxiproxy, env.topology.cluster_links(old)
        try:
            for link in links:
                api.disable(link.name)
            env.topology.elect(old)
        except BaseException:  # an error returns no heal: what was cut would stay cut
            for link in links:
                api.enable(link.name)
            raise
        deadline = time.monotonic() + params["promote_timeout_ms"] / 1000
        key = env.config.lock_name
        new = old
        while time.monotonic() < deadline and (new := env.topology.master_index(key)) == old:
            time.sleep(0.02)
        keep = wait_for_holder(env, random.Random(params.get("seed", 0)))
        target.client = keep
        moved = [env.topology.client_links(client)[old] for client in sorted(env.pool.workers)
                 if client != keep]
        for link in moved:
            api.disable(link.name)  # closes the client's connections to the old master
        if new == old:  # not promoted: the others reconnect to the only master there is
            for link in moved:
                api.enable(link.name)
            moved = []
        elif h.now() < (env.pool.deadline_ns or 0):
            report_effect(env, target, f"{keep} kept n{old}; the others were moved to n{new}, "
                                       "promoted")

        def heal() -> None:
            for link in links:
                api.enable(link.name)  # the old master rejoins and is demoted to a replica
            for link in moved:
                api.enable(link.name)
            if new != old:
                env.topology.await_demotion(old)

        return heal


class ClientClock(Fault):
    """Seed 004's first flaw of ``wrongGetLock2``: "由于是客户端自己生成过期时间，所以需要强制要求
    分布式下每个客户端的时间必须同步". ``clock-jump`` moves the servers' clocks, which a lock
    that judges expiry by its own clock never reads; this moves one *client's* wall clock.

    Every client of a run with this fault runs under libfaketime from its start, at offset 0
    (``chaos.workload.clocks``; the campaign asks for it because of ``fakes_client_clocks``).
    When the fault fires, ``client`` (default: a client that does not hold the lock, so it is
    the one judging someone else's expiry) jumps ``skew_ms`` ahead (negative: behind) and stays
    skewed until healed. Only the wall clock moves: the history's monotonic clock is true.
    """

    name = "client-clock"
    summary = ("skew one client's wall clock by skew_ms (libfaketime on its process; seed 004: "
               "expiry judged by client clocks), then heal")
    effects = frozenset({h.MOVES_CLOCK})
    fakes_client_clocks: ClassVar[bool] = True
    # A driver whose binary reads the clock without libc (pure Go) would run on the true
    # clock, a silent pass: refused up front.
    client_needs = frozenset({FAKED_CLOCK})
    parameters = takes(
        duration_ms=DURATION,
        skew_ms=Param("integer", min=-DAY_MS, max=DAY_MS, nonzero=True),
        client=Param("text", pattern=r"c[0-9]+", shape="a client id (c2)"),
    )

    def params(self, rng: random.Random, ttl_ms: int) -> dict[str, Any]:
        return {"duration_ms": round(rng.uniform(8.0, 16.0) * ttl_ms), "skew_ms": 4 * ttl_ms}

    def aim(self, env: WorkloadEnv, rng: random.Random, params: dict[str, Any]) -> Target:
        if "client" in params:
            return Target(client=str(params["client"]))
        # Waits for a holder longer than other faults do: clients with a fakeable clock are
        # spawned, not forked, and take a few seconds to start on a loaded machine.
        holder = wait_for_holder(env, rng, timeout_s=CLOCK_AIM_WAIT_S)
        others = [c for c in sorted(env.pool.workers) if c != holder]
        return Target(client=rng.choice(others or [holder]))

    def apply(self, env: WorkloadEnv, target: Target, params: dict[str, Any]) -> Heal:
        assert target.client is not None
        directory = env.config.client_clocks
        if directory is None:
            raise RuntimeError(
                "client-clock needs clients started under libfaketime "
                "(WorkloadConfig.client_clocks): run it through a campaign"
            )
        if target.client not in env.pool.workers:
            raise UsageError(f"client-clock: no client {target.client!r} in this run")
        set_client_clock(directory, target.client, params["skew_ms"])
        return partial(set_client_clock, directory, target.client, 0.0)


FAULTS: dict[str, Fault] = {}


def register(cls: FaultT) -> FaultT:
    """Add a fault class to the catalog (``--faults``, ``lockchaos list``, the explorer):
    the bundled ones below, and any a user or a test defines."""
    if not getattr(cls, "effects", None) or not all(e in h.EFFECTS for e in cls.effects):
        raise ValueError(f"{cls.__name__} must declare effects from chaos.history.EFFECTS")
    if cls.evidence not in h.EVIDENCE:
        raise ValueError(f"{cls.__name__}.evidence must be one of {h.EVIDENCE}")
    FAULTS[cls.name] = cls()
    return cls


for _fault in (
    ClientPause,
    ClientPauseAt,
    ClientCrash,
    SlowWork,
    Latency,
    Partition,
    Reset,
    ReplyLost,
    ServerPause,
    CrashRestart,
    CrashRestartDelayed,
    CrashRestartAof,
    ClockJump,
    Evict,
    ScriptFlush,
    Failover,
    ClientClock,
):
    register(_fault)
