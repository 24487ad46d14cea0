"""An exploration's session: runs step programs against one live topology, one example at a time.

A topology takes seconds to start and an example a fraction of one, so one topology serves
a whole exploration and is put back to a clean slate before every example (``reset``):
Toxiproxy links enabled without toxics, killed nodes restarted, paused nodes resumed, clocks
true, every key gone — or only every key gone when no fault but a client's own (a pause, a
pause point, a crash) fired since the last reset, since then nothing else was touched. Each
example gets a fresh history and fresh client processes, so examples are independent: what
one left behind can never explain another's failure.

Faults go through ``chaos.nemesis.record``, as in a campaign, so a program's history reads
like any other run's and the checker explains it the same way.

A wait is the only step during which time passes, and what it is for is expiry: after "wait
1.5×TTL" every lease and key that would run out within 1.5×TTL has. So a wait ends as soon
as every lease in the history and every key on the nodes has run out (``Session._settled_at``,
asked again after sleeping until then, so a renewal meanwhile keeps the wait going): from
then on nothing but the clock would change until the wait's end, and the program goes on
from the same state sooner. When a fault other than a stopped client is on (a partition, a
paused server, a moved clock, a failover under way), or a key has no expiry, the wait lasts
its full length.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import redis

from chaos import checker
from chaos import history as h
from chaos.checker import Verdict
from chaos.checker.reader import HistoryReader
from chaos.explore.fault_steps import CLIENT_CRASH, explorable
from chaos.explore.model import Model
from chaos.explore.program import CLIENT_OPS, Program, Step
from chaos.locks.context import build_context
from chaos.lockspec import can_extend
from chaos.nemesis import record
from chaos.nemesis.client_faults import ClientPause, ClientPauseAt
from chaos.nemesis.fault import FAULTS, Heal, Target
from chaos.topology import Topology
from chaos.topology.base import CLOCK, PAUSE, Endpoint, ServerNode
from chaos.topology.node import restart_nodes, wait_until
from chaos.workload.harness import WorkloadEnv, record_end, record_lock_key, record_start
from chaos.workload.stepper import StepperPool
from chaos.workload.worker import WorkloadConfig

MAX_IDLE_TTLS = 3.0
ENDED_EARLY = "ended early: every lease and key had run out"  # a wait's outcome
# A wait that ends early ends this long after the last lease and key ran out: the slack every
# full wait keeps from a whole TTL (docs/explore.md), so expiry never hangs on scheduling.
SETTLE_MARGIN_TTLS = 0.2
# Faults that only freeze a client process: nothing changes in Redis while they are on.
CLIENT_STOPS = (ClientPause.name, ClientPauseAt.name)
CLIENT_FAULTS = (*CLIENT_STOPS, CLIENT_CRASH)  # they touch no link, node or clock
# Every key's PTTL, read in one script (server time stands still in it): only keys KEYS
# returns, which are live, so the read never deletes a key that expired meanwhile.
_PTTLS = """
local ttls = {}
for _, key in ipairs(redis.call('KEYS', '*')) do ttls[#ttls + 1] = redis.call('PTTL', key) end
return ttls
"""


def reset(topology: Topology, *, faults_fired: bool = True) -> None:
    """Put ``topology`` back to a clean slate (see the module docstring); without
    ``faults_fired`` (no fault but a client's own since the last reset) only empty it."""
    if faults_fired:
        _repair(topology)
    servers: list[Endpoint] = [topology.resource, *topology.nodes]
    for server in servers:
        # Again until it takes it, within a bound: on a loaded machine a connection timed
        # out once, and the whole audit went with it.
        wait_until(partial(_flushed, server), f"{server.name} to take FLUSHALL")


def _flushed(server: Endpoint) -> bool:
    """FLUSHALL on ``server`` (a replica refuses it and follows its master's)."""
    with server.client() as conn, contextlib.suppress(redis.ReadOnlyError):
        conn.flushall()
    return True


def _repair(topology: Topology) -> None:
    """Links enabled without toxics, paused nodes resumed, clocks true, dead nodes restarted."""
    topology.toxiproxy.reset()
    for node in topology.nodes:
        if PAUSE in topology.capabilities:
            with contextlib.suppress(ProcessLookupError):  # a dead node: restarted below
                node.resume()
        if CLOCK in topology.capabilities:
            node.set_clock_offset(0.0)
    dead = [node for node in topology.nodes if not _answers(node)]
    if dead:
        restart_nodes(dead, empty=True)
    if topology.kind == "sentinel":
        wait_until(lambda: _replicas_synced(topology), "the Sentinel group to settle")


def _answers(node: ServerNode) -> bool:
    try:
        return node.ping()
    except (redis.RedisError, OSError):
        return False


def _replicas_synced(topology: Topology) -> bool:
    with topology.nodes[topology.master_index()].client() as conn:
        replication = conn.info("replication")
    return int(replication.get("connected_slaves", 0)) == len(topology.nodes) - 1


@dataclass(frozen=True)
class Played:
    """A program as far as it ran, what each step returned, and the verdict on its history."""

    program: Program
    outcomes: list[str]
    verdict: Verdict


@dataclass
class _Open:
    """A fault that is on: its name, its heal, and the client it stopped (a pause point or a
    pause), if any."""

    name: str
    client: str | None
    heal: Heal


class Session:
    """Runs programs shaped like ``shape`` (its steps are ignored) on ``topology``: its
    clients run the workload of the shape's campaign (``Program.campaign``), checked first
    (``UsageError``: a replayed program whose lock is gone, say)."""

    def __init__(self, topology: Topology, shape: Program, seed: int) -> None:
        self.topology = topology
        self.shape = shape.with_steps(())
        self.seed = seed
        self.clients = [f"c{i}" for i in range(1, shape.clients + 1)]
        campaign = shape.campaign()
        campaign.validate()
        self.config = campaign.workload()
        self._env: WorkloadEnv | None = None
        self.can_extend = _can_extend(topology, self.config)
        self._faults_fired = True  # since the last reset (who knows before the first)

    # -- one example ----------------------------------------------------------------------

    def begin(self, history_path: Path) -> None:
        """Reset the topology, open a fresh history, start fresh client processes."""
        reset(self.topology, faults_fired=self._faults_fired)
        self._faults_fired = False
        history_path.unlink(missing_ok=True)
        history = h.HistoryWriter(history_path)
        try:
            self._resource = record_start(
                history,
                self.topology,
                self.config,
                clients=len(self.clients),
                seed=self.seed,
                mode="explore",
            )
            pool = StepperPool(
                self.topology, self.config, history, clients=len(self.clients), seed=self.seed
            )
            pool.start()
        except BaseException:
            history.close()
            raise
        self._env = WorkloadEnv(self.topology, pool, history, self.config, self.seed)
        self._open: dict[str, _Open] = {}
        self._rng = random.Random(f"targets:{self.seed}")
        config = self.config
        self.model = Model.of(self.clients, config.capacity, config.modes, config.max_permits)
        self._idle_ttls = 0.0  # waited since the last step that was not a wait

    @property
    def env(self) -> WorkloadEnv:
        if self._env is None:
            raise RuntimeError("no example is running: call begin() first")
        return self._env

    @property
    def pool(self) -> StepperPool:
        pool = self.env.pool
        assert isinstance(pool, StepperPool)
        return pool

    def verdict(self) -> Verdict:
        """The checker's verdict on the history so far."""
        return checker.check_file(self.env.history.path)

    def end(self) -> Verdict:
        """Heal what is still on, stop the clients, record the final read; the verdict."""
        env, pool = self.env, self.pool
        try:
            for ref in reversed(list(self._open)):
                self._heal(ref, strict=False)
        finally:
            pool.stop()
            try:
                record_lock_key(env.history, self.topology, self.config.lock_name)
                record_end(env.history, self._resource, pool.completed)
            finally:
                env.history.close()
                self._env = None
        return checker.check_file(env.history.path)

    def play(self, program: Program, history_path: Path, fail_on: str | None = None) -> Played:
        """Run ``program`` as one example (stopping at the first step after which the
        history fails at ``fail_on``, if given); its verdict, once the history is finished."""
        self.begin(history_path)
        outcomes: list[str] = []
        try:
            for step in program.steps:
                outcomes.append(self.run(step))
                if fail_on is not None and checker.fails(self.verdict(), fail_on):
                    break
        finally:
            verdict = self.end()
        return Played(program.with_steps(program.steps[: len(outcomes)]), outcomes, verdict)

    # -- steps ----------------------------------------------------------------------------

    def run(self, step: Step) -> str:
        """Perform one step; what came of it, in a few words (for the printed program)."""
        if step.kind in CLIENT_OPS:
            return self._operate(step)
        if step.kind == "contend":
            asks = [
                (cid, self._operate(Step("acquire", cid, mode=step.mode, permits=step.permits)))
                for cid in step.params["order"]
            ]
            return "; ".join(f"{cid} {outcome}" for cid, outcome in asks)
        if step.kind == "sleep":
            return self._sleep(step)
        self.model.apply(step)
        self._idle_ttls = 0.0
        if step.kind == "fault-off":
            if step.ref is None:
                return f"no {step.fault} is on"
            self._heal(step.ref)
            return ""
        return self._fire(step)

    def _operate(self, step: Step) -> str:
        """A client operation; a client stopped at a pause point finishes that one first."""
        cid = step.client or ""
        resumed = ""
        if self.model.clients[cid].stopped:
            resumed = f"resumed ({self._resume(cid) or 'nothing in flight'}), then "
        self.model.apply(step)
        self._idle_ttls = 0.0
        failed = self._fire(step) if step.stops else ""  # arm the pause point first
        outcome = self.pool.step(cid, step.kind, step.ask)
        return resumed + (f"{failed}; " if failed else "") + outcome

    def _sleep(self, step: Step) -> str:
        """Wait (with a client paused, if the step says so) until every lease and key has run
        out (see the module docstring), at most the step's length; not at all if the program
        has already waited ``MAX_IDLE_TTLS`` in a row (by then every lease nobody renews is
        over, and waiting on costs time and changes nothing)."""
        assert step.ttls is not None
        self.model.apply(step)
        if self._idle_ttls + step.ttls > MAX_IDLE_TTLS:
            return f"skipped: already waited {self._idle_ttls:g}×TTL in a row"
        self._idle_ttls += step.ttls
        failed = self._fire(step) if step.client else ""
        end = time.monotonic() + step.ttls * self.shape.ttl_ms / 1000
        ended = ""
        while (settled := self._settled_at()) is not None and settled < end:
            if settled <= time.monotonic():
                ended = ENDED_EARLY
                break
            time.sleep(max(0.0, settled - time.monotonic()))
        else:
            time.sleep(max(0.0, end - time.monotonic()))
        if step.ref is not None:
            self._heal(step.ref)
        return "; ".join(part for part in (failed, ended) if part)

    def _settled_at(self) -> float | None:
        """When (``time.monotonic()``) every lease granted so far and every key on the nodes
        will have run out, plus ``SETTLE_MARGIN_TTLS``; None if a fault other than a stopped
        client is on, a key has no expiry or a node does not answer: then only the clock can
        tell, and the wait lasts its full length.

        A lease ends at its ``valid_until``; an acquire with no outcome yet (stopped at a pause
        point) may still be granted a lease for up to a TTL from its invoke."""
        if any(opened.name not in CLIENT_STOPS for opened in self._open.values()):
            return None
        ttl_ns = self.shape.ttl_ms * 1_000_000
        latest = 0
        asking: dict[str, int] = {}  # process -> its acquire's invoke, until it has an outcome
        for event in HistoryReader(self.env.history.path).events():
            if event.valid_until is not None:
                latest = max(latest, event.valid_until)
            if event.f == h.ACQUIRE:
                asking.pop(event.process, None)
                if event.type == h.INVOKE:
                    asking[event.process] = event.t
        latest = max([latest, *(invoked + ttl_ns for invoked in asking.values())])
        for node in self.topology.nodes:
            try:
                with node.client() as conn:
                    ttls = conn.eval_ro(_PTTLS, 0)
            except (redis.RedisError, OSError):
                return None
            if -1 in ttls:  # a key without expiry: a wait's length may be the story (liveness)
                return None
            read_at = h.now()
            latest = max([latest, *(read_at + (ttl + 1) * 1_000_000 for ttl in ttls)])
        return (latest + SETTLE_MARGIN_TTLS * ttl_ns) / 1e9

    def _fire(self, step: Step) -> str:
        """Fire the fault ``step`` names; an error message if it could not be applied."""
        assert step.ref is not None
        name, instant, aim = self._fault_of(step)
        self._faults_fired |= name not in CLIENT_FAULTS
        try:
            target, heal = record.fire(self.env, step.ref, name, step.params, aim)
        except Exception as exc:  # recorded as the fault's stop; the program goes on
            return f"{name} could not be applied: {type(exc).__name__}: {exc}"
        if instant:
            record.heal(self.env, step.ref, heal)
            if step.kind == "crash":  # the pause points of the killed process are over too
                self._heal_client(target.client or "")
        else:
            self._open[step.ref] = _Open(name, target.client if step.client else None, heal)
        if step.kind == "fault-on" and not step.nodes and target.nodes:
            return "on " + ", ".join(f"n{i}" for i in target.nodes)  # picked when it fired
        return ""

    def _fault_of(self, step: Step) -> tuple[str, bool, Callable[[], Target]]:
        """The catalog fault a step fires, whether it heals at once, and how it aims."""
        chosen = Target(client=step.client, nodes=list(step.nodes))
        if step.kind in CLIENT_OPS:
            return ClientPauseAt.name, False, lambda: chosen
        if step.kind == "sleep":
            return ClientPause.name, False, lambda: chosen
        if step.kind == "crash":
            return CLIENT_CRASH, True, lambda: chosen
        assert step.kind == "fault-on" and step.fault is not None
        name, kind = step.fault, explorable()[step.fault]
        if kind.aims_at == "master":
            return name, kind.instant, lambda: FAULTS[name].aim(self.env, self._rng, step.params)
        return name, kind.instant, lambda: chosen

    def _heal(self, ref: str, *, strict: bool = True) -> None:
        opened = self._open.pop(ref, None)
        if opened is None:
            return  # it could not be applied, or healed itself
        try:
            record.heal(self.env, ref, opened.heal)
        except Exception:
            if strict:
                raise  # recorded in the history either way; the next reset repairs it

    def _resume(self, cid: str) -> str:
        """Heal the pauses holding ``cid`` (SIGCONT) and let a stopped operation finish."""
        self._heal_client(cid)
        return self.pool.finish(cid) or ""

    def _heal_client(self, cid: str) -> None:
        for ref in [ref for ref, opened in self._open.items() if opened.client == cid]:
            self._heal(ref)


def _can_extend(topology: Topology, config: WorkloadConfig) -> bool:
    """Whether the lock has ``extend``: as it declares (``LockSpec.extend``: a bundled lock's
    entry, an ``exec:`` driver's ``describe``); a user's ``module:attr`` lock, whose
    declaration says only what it grants, is made once (its connections are not used) and
    asked."""
    declared = config.lock.extend
    if declared is not None:
        return declared
    context = build_context(
        topology.client_view("c1"), lock_name=config.lock_name, ttl_ms=config.ttl_ms,
        capacity=config.capacity,
    )
    try:
        return can_extend(config.lock.create(context))
    finally:
        context.close()
