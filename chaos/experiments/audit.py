"""An audit: what lockchaos throws at a lock nobody has told it anything about, within a time
budget, ending in one verdict a CI gate can act on.

By default it uses every fault a lock must survive whatever its deployment (``MUST_SURVIVE``:
client pauses, pause points, crashes, slow work, latency, partitions, resets, lost replies,
server pauses);
``--faults`` replaces that set, and ``--faults +f`` adds to it the infrastructure faults an
algorithm claims to survive (``+crash-restart-delayed`` for Redlock). Every catalog fault left
out is *assumed away*, and the audit says so.

It first learns the lock (``chaos.experiments.surface``): a warm-up run with no fault, holders
extending and acquiring again while they hold, whose history says which commands each operation
sends and what the lock has (extend, renewals, reentrancy, fences, nodes). audit.json lists
both; a lock seen renewing is held to renewing in every phase (``--renews``: a lease that
lapses while its holder runs is hard), and one that sends EVALSHA is also flushed of its
scripts (``CALLED_FOR``). Then the budget is spent in two phases. First short seeded campaigns,
each on a fresh topology and stopping at its first hard violation: every fault alone — a pause
point and a crash once before *each* command of each operation learned, its last-sent first (an
extend's with holders extending; a pause in an acquire shorter than the TTL) —, then the
capabilities under every fault: holders extending, their work alternately long and short
against the TTL, and a reentrant lock's holders nesting; then pairs of faults in a seeded
order, as many as fit in ``CAMPAIGN_SHARE`` of the budget (every single and the first
``MIN_CAPABILITY_STEPS`` capability campaigns always run; so does, again with a new seed, in
up to ``AGAIN_ROUNDS`` rounds, the first campaign there for a fault that had no effect or a
point never reached: ``again_steps``). The first
``EARLY_CAPABILITY_STEPS`` capability campaigns run before the singles: a bug in an extend or a
nested release shows only when holders extend or nest, and a dozen singles first would leave it
half a minute unfound. Before them still, each fault added to the defaults (``+f``: the user
suspects it, or the lock's commands call for it) runs alone, ``CELL_S`` (at a long TTL,
``NAMED_CELL_TTLS``) long whatever the budget. Then ``explore`` (Hypothesis step programs,
shrunk) on one topology until the budget is spent, as ``lockchaos explore`` does. Unless
``--full`` is given, the audit ends at the first hard violation: nothing can make the
verdict worse, and a CI gate wants the answer fast. It reports per capability what its
campaigns exercised (``Exercised``).

The deployment a user gives (``--nodes``, ``--clients``, ``--ttl-ms``, ``--work-ms``) holds in
every phase; left unset, the campaigns run the campaign's defaults, the warm-up its own work
(``WARM_UP_WORK_TTLS``) and explore its own clients and TTL (two, a short one).
"""

from __future__ import annotations

import random
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from itertools import combinations, zip_longest
from pathlib import Path
from typing import Any

import msgspec

from chaos.campaign import DEFAULTS, HISTORY, Campaign, choose_layout, stamped_path
from chaos.campaign.spec import fault_spec
from chaos.checker import Verdict, fails
from chaos.checker.coverage import FaultCoverage
from chaos.checker.exercised import MIN_LOCK_CYCLES, RELOADS
from chaos.checker.verdict import (
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    EXIT_VIOLATION,
    INCONCLUSIVE,
    RANK,
    VIOLATION_KINDS,
)
from chaos.errors import UsageError
from chaos.experiments.execute import Outcome, run_campaign
from chaos.experiments.surface import (
    WARM_UP_NEST_DEPTH,
    WARM_UP_S,
    WARM_UP_WORK_TTLS,
    Learned,
    Tally,
    learn,
    point_name,
    tally,
)
from chaos.explore import ExploreResult, explore
from chaos.explore.explorer import EXPLORE_TTL_MS, MAX_EXAMPLES
from chaos.explore.fault_steps import BUILT_IN, CLIENT_CRASH, explorable
from chaos.history import STALLS_CLIENT
from chaos.nemesis import FAULTS, parse_faults
from chaos.nemesis.client_faults import ClientCrash, ClientPause, ClientPauseAt
from chaos.nemesis.fault import DURATION
from chaos.nemesis.generator import FIRST_AT_S
from chaos.nemesis.server_faults import ScriptFlush
from chaos.report import REPORT
from chaos.report.audit_page import (
    AuditFile,
    AuditRun,
    Exercised,
    save_audit,
    write_audit_reports,
)

MUST_SURVIVE = (
    "client-pause",
    "client-pause-at",
    "client-crash",
    "slow-work",
    "latency",
    "partition",
    "reset",
    "server-pause",
    "reply-lost",
)
# The faults a command the lock sends calls for, beyond ``MUST_SURVIVE``: a lock that sends
# EVALSHA relies on the servers' script cache, which a restart or a failover empties.
CALLED_FOR = {"EVALSHA": ScriptFlush.name}
# The fault that makes a lock send a command it sends only on demand (``RELOADS``): a point
# aimed there is armed on every client, then the fault comes (``Step.in_order``), and the
# first client to run a script after it stops there. Aimed alone, the point waited for a
# ``SCRIPT LOAD`` that redis-py sends only at a script's first run on a fresh node, before
# any fault's first turn: never reached, in 3 audits of 3. A lock that loads its scripts once
# per process (``lua-loaded-once``) sends it again only from a new one: then ``RESTARTED_BY``
# crashes ``c1`` at its next acquire, and its replacement, armed too (``replaced=1``), loads
# them.
REACHED_BY = dict.fromkeys(RELOADS, ScriptFlush.name)
RESTARTED_BY = ClientCrash.name
RESTARTED = "c1"
# The operations a fault can make fail, and how: a holder stopped ``OUTLAST_TTLS`` loses its
# lease, another client takes the lock, and its next extend (or its release) finds its key
# gone. A command the warm-up saw only in such an operation (``Learned.on_failure``: Redis in
# Action's semaphore cleans up with MULTI/ZREM/EXEC when its refresh finds its entry gone) is
# aimed at on every client, then the holder is stopped. Aimed alone, the point waited for an
# extend that no fault made fail: never reached, in 2 audits of 10. (An acquire fails
# without a fault: another client holds the lock.)
FAILED_BY = {"extend": ClientPause.name, "release": ClientPause.name}
CELL_S = 3.0  # each campaign runs at most this long (less when it breaks the lock)
MIN_CELL_S = 1.5  # shorter, when a small budget must still try every fault alone
# A fault added by name runs alone at least this many TTLs (``CELL_S`` is 15 at the default
# TTL, 3 at 1 s). At 3 s, ``+client-clock:client=c2`` missed Redis in Action's semaphore with a
# lock (1 s TTL) in 1 seed of 10: c2 took the permit again right after each release, so it
# never acquired while c1 held, which is when its clock breaks the lock. A found violation
# ends the campaign at once: the length costs only a lock that survives.
NAMED_CELL_TTLS = 6.0
CELL_OVERHEAD_S = 0.8  # a fresh topology, the checker and the reports, per campaign
CAMPAIGN_SHARE = 0.6  # of the budget, for the campaigns; the rest explores
# A campaign that did not do what it was there for — its fault, alone, had no effect; its point
# was never reached — runs again with a new seed, in up to this many rounds, whatever the
# budget. One reset of 100 ms on a Redisson holder whose renewal, late on a loaded machine,
# went out 4 ms after it ended did nothing, and the audit had no other reset campaign in its
# budget: inconclusive, 1 seed of 10.
AGAIN_ROUNDS = 2
AGAIN_SEED_OFFSET = 2000  # above every planned campaign's and the explorations' (1000 + i)
EXPLORE_CLIENTS = 2  # in the explore phase, unless told
# Extending holders' work, alternately long (extends keep the lease alive through work
# longer than the TTL, every TTL/3) and short (``EXTEND_SHORT_TTLS``: one extend, halfway). In
# a long one a fault that stays on lasts ``OUTLAST_TTLS``: longer than what the last extend
# left of the lease, so another client takes the lock meanwhile, and short enough that the
# holder goes on to extend after it — an extend that does not check whose key it extends then
# claims the other's lock. The long work lasts until a short campaign's first fault has
# started (``FIRST_AT_S``: 0.2–0.6 s in, whatever the TTL) and ``EXTEND_AFTER_FAULT_TTLS``
# more: a pause aimed at the extend fires at the next one (TTL/3), lasts ``OUTLAST_TTLS``, and
# the holder extends again within TTL/3 of its end, with a TTL to spare. With one TTL after
# it (4 TTLs at 200 ms) a pause often ended after the holder's work had, and no extend
# followed (6 of 10 seeds). Counted in TTLs alone (8), the work held a holder 8 s at a 1 s
# TTL: each such campaign took 9.5 s of its 3.
EXTEND_AFTER_FAULT_TTLS = 3.0
EXTEND_SHORT_TTLS = 0.25
OUTLAST_TTLS = 1.25
# Nesting holders' work, in TTLs: the outer hold works a quarter of it after the inner
# release (``Worker.hold``), a window in which a lock whose inner release freed the whole
# lock is taken by another client while the outer lease is still valid. At the default
# (a quarter TTL) that window, 12 ms, was shorter than the waiters' retry.
NEST_WORK_TTLS = 0.5
# A pause aimed inside an acquire, in TTLs: shorter than the lease, which is measured from
# the acquire's invoke. At the fault's default (1.5-3 TTLs, to outlast a holder's lease before
# its release) the paused acquire was granted a lease already lapsed, and what it overlapped
# was soft at most: Redis in Action's fair semaphore, paused before its ZADD, never hard.
# Shorter, the others acquire meanwhile (their back-off is milliseconds) and the paused client
# then acts on what it checked before, its lease still valid: a check-then-act race is hard
# (the truth table's cells pause 0.3 and 0.5 TTLs there).
ACQUIRE_PAUSE_TTLS = 0.3
MIN_CAPABILITY_STEPS = 3  # capability campaigns that run whatever the budget
EARLY_CAPABILITY_STEPS = 2  # of those, run right after the warm-up, before the singles
# The faults that aim at a command (``command=``, ``op=``): once before each command learned.
AIMED = (ClientPauseAt.name, ClientCrash.name)
# Of those, the one whose default does something no point does (kill a holder mid-work):
# its default campaign runs too.
KEEPS_DEFAULT = (ClientCrash.name,)
MIN_BUDGET_S, MAX_BUDGET_S = 10.0, 3600.0
RUNS = "runs"

Faults = list[tuple[str, dict[str, Any]]]


# The campaign options ``lockchaos audit`` takes: every campaign of the audit (and its
# explore batches) runs with them.
OPTIONS = ("lock", "topology", "nodes", "provider", "provider_config", "server", "clients",
           "ttl_ms", "work_ms", "seed", "fail_on", "allow_inconclusive", "capacity", "renews")
# Of those, the deployment the audit chooses per phase unless told (explore: 2 clients and a
# short TTL, for more programs): a value the user gave wins in every phase.
DEPLOYMENT = ("clients", "ttl_ms", "work_ms")


@dataclass(frozen=True)
class AuditPlan:
    """What to audit, and how long for: ``base`` is the campaign every step starts from
    (its lock, seed, ``fail_on``, topology…: ``OPTIONS``), each with its own faults.
    ``told``: fields of ``DEPLOYMENT`` the user gave even at their default (``--clients 5``):
    with those the base sets away from their default, every phase keeps the base's value."""

    base: Campaign
    budget_s: float = 60.0
    faults: str = ""  # as --faults: empty for MUST_SURVIVE, "+f" entries add to it
    full: bool = False  # run the whole budget even after a hard violation
    told: frozenset[str] = frozenset()

    def _entries(self) -> tuple[list[str], list[str]]:
        """``faults``' entries: those added to the defaults (``+f``, without the ``+``), and
        those replacing them."""
        entries = [part.strip() for part in self.faults.split(",") if part.strip()]
        return ([entry[1:] for entry in entries if entry.startswith("+")],
                [entry for entry in entries if not entry.startswith("+")])

    def added(self) -> set[str]:
        """The names of the faults added to the defaults (``+f``): the user's, and those the
        lock's commands call for (``fitted``)."""
        added, _ = self._entries()
        return {name for name, _ in parse_faults(",".join(added))}

    def tested(self) -> Faults:
        """The faults the audit injects (``UsageError`` for an unknown one)."""
        added, replacing = self._entries()
        kept = ",".join(replacing) if replacing else ",".join(MUST_SURVIVE)
        # The added ones first: what the user asked for by name is tried soonest.
        chosen = parse_faults(",".join([*added, kept]))
        seen: dict[str, tuple[str, dict[str, Any]]] = {}
        for name, overrides in chosen:
            seen.setdefault(name, (name, overrides))
        return list(seen.values())

    def stepped(self) -> Faults:
        """The tested faults explore can switch on and off as steps (a crash, and those with
        ``stepping``); the client faults of ``BUILT_IN`` it explores anyway."""
        return [(name, overrides) for name, overrides in self.tested()
                if name in explorable() or name == CLIENT_CRASH]

    def assumed_away(self) -> list[str]:
        """Catalog faults the audit does not inject: what a pass does not vouch for."""
        tested = {name for name, _ in self.tested()}
        return [name for name in FAULTS if name not in tested]

    @property
    def kept(self) -> frozenset[str]:
        """The fields of ``DEPLOYMENT`` whose base value every phase keeps: ``told``, and
        those the base sets away from their default."""
        moved = {name for name in DEPLOYMENT if getattr(self.base, name) != DEFAULTS[name]}
        return self.told | moved

    def campaign(self, faults: Faults, *, seed: int, extend: bool, duration_s: float,
                 nest_depth: int = 1, in_order: bool = False, **chosen: Any) -> Campaign:
        """One campaign of the audit: the base's, with ``faults``, and ``chosen`` — the
        audit's own choice of fields of ``DEPLOYMENT`` for this phase — where not ``kept``."""
        unknown = sorted(set(chosen) - set(DEPLOYMENT))
        if unknown:
            raise TypeError(f"the audit chooses no {unknown[0]!r}")
        kept = self.kept
        own = {name: value for name, value in chosen.items()
               if name not in kept and value is not None}
        return msgspec.structs.replace(
            self.base, faults=faults, seed=seed, duration_s=duration_s, stop_on_first=True,
            extend_during_work=extend, nest_depth=nest_depth, faults_in_order=in_order, **own,
        )

    def warm_up_campaign(self) -> Campaign:
        """The warm-up (``chaos.experiments.surface``): no fault, ``WARM_UP_S`` long, holders
        extending and acquiring again while they hold, working ``WARM_UP_WORK_TTLS``; it
        stops only at a hard violation (a lock that refuses its own holder is not
        reentrant: that is what it asks)."""
        warm = self.campaign([], seed=self.base.seed, extend=True, duration_s=WARM_UP_S,
                             nest_depth=WARM_UP_NEST_DEPTH,
                             work_ms=WARM_UP_WORK_TTLS * self.base.ttl_ms)
        return msgspec.structs.replace(warm, fail_on="hard")

    def step_campaign(self, index: int, step: Step, cell_s: float) -> Campaign:
        """The campaign of the ``index``-th step: its own seed, ``cell_s`` long (if ``named``
        or ``in_order``, ``CELL_S`` or ``NAMED_CELL_TTLS``, whichever is longer: a point armed
        first waits for the fault that follows) after its faults had time to act
        (``Step.acts_after_s``)."""
        offset = index if step.seed_offset is None else step.seed_offset
        named_s = max(CELL_S, NAMED_CELL_TTLS * self.base.ttl_ms / 1000)
        length = named_s if step.named or step.in_order else cell_s
        return self.campaign(step.faults, seed=self.base.seed + offset, extend=step.extend,
                             duration_s=length + step.acts_after_s, nest_depth=step.nest_depth,
                             work_ms=step.work_ms, in_order=step.in_order)

    def explore_campaigns(self) -> list[Campaign]:
        """The explorations of the explore phase, one after the other: first with the
        client's own faults only (a crash; pauses always), as ``lockchaos explore`` runs by
        default, then with every fault it can step. A program under a partition or a paused
        server waits out socket timeouts: about four times slower (0.8 programs/s against
        3.3 for ``lua``), and its many more kinds of step make a lock's own logic (an
        extend, a release) rarer in each program. Each has its own seed and, unless kept,
        ``EXPLORE_CLIENTS`` and a short TTL (steps are TTL multiples: more programs)."""
        stepped = self.stepped()
        own = [fault for fault in stepped if fault[0] == CLIENT_CRASH]
        phases = [own, stepped] if own != stepped else [stepped]
        return [self.campaign(faults, seed=self.base.seed + 1000 + i, extend=False,
                              duration_s=CELL_S, clients=EXPLORE_CLIENTS,
                              ttl_ms=EXPLORE_TTL_MS)
                for i, faults in enumerate(phases)]

    def validate(self) -> None:
        if not MIN_BUDGET_S <= self.budget_s <= MAX_BUDGET_S:
            raise UsageError(
                f"--budget must be between {MIN_BUDGET_S:g} and {MAX_BUDGET_S:g} s "
                f"(got {self.budget_s:g})"
            )
        campaign = self.campaign(self.tested(), seed=self.base.seed, extend=False,
                                 duration_s=CELL_S)
        campaign.validate()
        choose_layout(campaign)  # a shape the campaigns could not run on, before any starts


@dataclass(frozen=True)
class Step:
    """One seeded campaign of the audit: some faults, holders extending or not (working
    ``work_ms``, None: the campaign's), acquiring ``nest_depth`` deep."""

    faults: Faults
    extend: bool = False
    work_ms: float | None = None
    nest_depth: int = 1
    # Its seed, from the base's: its place among singles, capabilities, pairs — not its place
    # in the run order, so that running some capability campaigns first leaves every other
    # campaign's seed (and schedule) as it was. None: its index.
    seed_offset: int | None = None
    # It runs whatever the budget: a fault alone, or one of the first capability campaigns
    # (``plan_steps``). Under load those took longer than the budget and the last singles
    # were skipped: a fault never tried, and the audit still went green.
    required: bool = False
    # A fault added by name alone (``AuditPlan.added``): it runs at least ``CELL_S`` long
    # (``NAMED_CELL_TTLS``), not as short as a small budget squeezes the others. Squeezed to
    # 1.5 s at a 1 s TTL (six lock cycles), ``+client-clock:client=c2`` missed Redis in
    # Action's semaphore with a lock in 2 seeds of 10: c2 re-acquired 2 ms after each release
    # and held the permit the whole campaign, and its clock breaks the lock only when it
    # acquires while c1 holds.
    named: bool = False
    # Its faults take turns in the order listed (``--faults-in-order``), not shuffled: a
    # point armed before the fault that makes the lock reach it (``REACHED_BY``).
    in_order: bool = False
    # A run again of a campaign that did not do what it was there for (``again_steps``).
    again: bool = False

    @property
    def name(self) -> str:
        joint = " then " if self.in_order else " + "
        label = joint.join(fault_spec(name, overrides) for name, overrides in self.faults)
        work = f"work {self.work_ms:g} ms" if self.work_ms is not None else ""
        if self.extend:
            label += f" (extending{', ' if work else ''}{work})"
        elif work and self.nest_depth == 1:
            label += f" ({work})"
        if self.nest_depth > 1:
            label += f" (nested, {work})"
        return f"{label}, again" if self.again else label

    @property
    def acts_after_s(self) -> float:
        """How long its slowest fault may take to act (``Fault.acts_after_s``): its campaign
        runs that much longer than the others. A failover fired 0.7 s into a 2 s campaign
        once split the clients 2.1 s later, after they had all stopped."""
        return max((FAULTS[name].acts_after_s for name, _ in self.faults), default=0.0)

    def aim(self) -> tuple[str, str] | None:
        """The (operation, command) its first fault aims at, if that is one of ``AIMED``."""
        name, overrides = self.faults[0]
        if name not in AIMED or "command" not in overrides:
            return None
        return str(overrides.get("op")), str(overrides["command"])

    def tests(self) -> set[str]:
        """What it is there for, as ``AuditResult.untested`` names it: its fault, if alone,
        and the point it aims at."""
        aim = self.aim()
        return ({self.faults[0][0]} if len(self.faults) == 1 else set()) | (
            {point_name(*aim)} if aim else set())


def cell_seconds(plan: AuditPlan, steps: int) -> float:
    """How long each campaign may run: ``CELL_S``, or less when the campaigns' share of the
    budget could not otherwise run the ``steps`` that always run (never under
    ``MIN_CELL_S``)."""
    share = plan.budget_s * CAMPAIGN_SHARE / max(steps, 1) - CELL_OVERHEAD_S
    return max(MIN_CELL_S, min(CELL_S, share))


def _aimed(fault: tuple[str, dict[str, Any]], op: str, command: str, ttl_ms: int,
           everyone: bool = False) -> tuple[str, dict[str, Any]]:
    """``fault`` aimed at the first ``command`` of each ``op`` (``nth=1``: not the second
    round trip a crash's default aims at), at every client (``everyone``) for a command sent
    only after another fault (``REACHED_BY``, ``FAILED_BY``: whoever sends it) — and at
    their replacements, for one sent on demand (a process loading its scripts); a pause in an
    acquire, unless told how long, ``ACQUIRE_PAUSE_TTLS`` long."""
    name, overrides = fault
    aimed = {**overrides, "command": command, "op": op, "nth": 1}
    if everyone:
        aimed.setdefault("client", "*")
    if everyone and command in REACHED_BY:
        aimed.setdefault("replaced", 1)
    if op == "acquire" and "duration_ms" not in overrides and _stalls_for_a_while(name):
        aimed["duration_ms"] = round(ACQUIRE_PAUSE_TTLS * ttl_ms)
    return name, aimed


def _aim_order(learned: Learned) -> list[tuple[str, str]]:
    """The points the singles aim at: per operation (acquire's first), its commands last-sent
    first. A pause or a crash between a check and the act that trusts it stops the client
    before the act, which comes after; before an operation's first command it only stops the
    client before it asks, as ``client-pause`` and ``client-crash`` alone do. Redis in
    Action's fair semaphore sends eight commands in its acquire, the act (``ZADD``) sixth.
    A command sent only on demand (``RELOADS``, seen after the one that asked for it) or only
    when the operation failed comes after those sent every time (``Learned.every_time``)."""
    points = learned.points()
    order = []
    for op in dict.fromkeys(op for op, _ in points):
        commands = [command for o, command in points if o == op]
        every_time = learned.every_time(op)
        order += [(op, command) for command in [*reversed(every_time),
                                                *(c for c in commands if c not in every_time)]]
    return order


def fitted(plan: AuditPlan, learned: Learned) -> AuditPlan:
    """``plan`` fitted to what the warm-up learned. A lock seen renewing is held to it in
    every phase (``--renews``): a lease that lapses while its holder runs is hard, as for a
    bundled watchdog (a user's lock declares nothing). The faults its commands call for
    (``CALLED_FOR``) are added to the default ones (``+f``); a list the user chose is kept."""
    if learned.declared.renews and not plan.base.renews:
        plan = replace(plan, base=msgspec.structs.replace(plan.base, renews=True))
    entries = [entry.strip() for entry in plan.faults.split(",") if entry.strip()]
    if any(not entry.startswith("+") for entry in entries):
        return plan
    sent = {command for commands in learned.surface.values() for command in commands}
    tested = {name for name, _ in plan.tested()}
    added = [f"+{fault}" for command, fault in CALLED_FOR.items()
             if command in sent and fault not in tested]
    return replace(plan, faults=",".join([*entries, *added])) if added else plan


def single_steps(plan: AuditPlan, learned: Learned) -> list[Step]:
    """Every tested fault alone; one of ``AIMED`` the user did not aim (no ``command=``)
    once before each command of each operation learned instead (``_aim_order``) — before an
    extend's with holders extending — and a crash also as its default. A command sent only
    after something went wrong is aimed at first, then comes the fault that makes the lock
    send it (``reached_by``)."""
    steps = []
    for fault in plan.tested():
        name, overrides = fault
        if name not in AIMED or "command" in overrides or not learned.points():
            steps.append(Step([fault]))
            continue
        if name in KEEPS_DEFAULT:
            steps.append(Step([fault]))
        for op, command in _aim_order(learned):
            then, work_ms = reached_by(op, command, learned, plan.base.ttl_ms)
            aimed = _aimed(fault, op, command, plan.base.ttl_ms, everyone=bool(then))
            steps.append(Step([aimed, *then], extend=op == "extend", work_ms=work_ms,
                              in_order=bool(then)))
    return steps


def reached_by(op: str, command: str, learned: Learned,
               ttl_ms: int) -> tuple[Faults, float | None]:
    """The faults that make ``op`` send ``command``, if it is sent only on demand
    (``REACHED_BY``: a script flush, then a client's crash) or only when ``op`` failed
    (``FAILED_BY``: a holder stopped past its lease, with work as long as an extending
    campaign's first, for an extend: a hold to stop it in); none for a command sent every
    time. And the holders' work it needs (None: the campaign's)."""
    if command in REACHED_BY:
        then: Faults = [(REACHED_BY[command], {})]
        if act := learned.every_time("acquire"):
            then.append((RESTARTED_BY, {"command": act[-1], "op": "acquire", "nth": 1,
                                        "client": RESTARTED}))
        return then, None
    if op in FAILED_BY and learned.only_on_failure(op, command):
        stop = (FAILED_BY[op], {"duration_ms": round(OUTLAST_TTLS * ttl_ms)})
        return [stop], extend_work_ms(0, ttl_ms) if op == "extend" else None
    return [], None


def capability_steps(plan: AuditPlan, learned: Learned) -> list[Step]:
    """Every tested fault with holders extending (a lock that has extend; a lock that renews
    in the background: holding as long): first those that stop a client for a while, with
    long work, then the others with work alternately long and short against the TTL
    (``extend_work_ms``); interleaved with every tested fault with holders nesting (a
    reentrant lock, ``NEST_WORK_TTLS``). One of ``AIMED`` aims at the last command of the
    operation exercised: the extend's (the release's without one), the release's — the last
    it sends every time (``Learned.every_time``), not a ``SCRIPT LOAD`` seen after its first
    run, nor the clean-up of an extend that found its lease gone."""
    declared, tested = learned.declared, plan.tested()

    def aim(fault: tuple[str, dict[str, Any]], op: str) -> tuple[str, dict[str, Any]]:
        commands = learned.every_time(op)
        if fault[0] not in AIMED or "command" in fault[1] or not commands:
            return fault
        return _aimed(fault, op, commands[-1], plan.base.ttl_ms)

    def extending(index: int, fault: tuple[str, dict[str, Any]]) -> Step:
        work_ms = extend_work_ms(index, plan.base.ttl_ms)
        name, overrides = aim(fault, "extend" if declared.extend else "release")
        if (work_ms > plan.base.ttl_ms and "duration_ms" not in overrides
                and FAULTS[name].parameters.get("duration_ms") is DURATION):
            overrides = {**overrides, "duration_ms": round(OUTLAST_TTLS * plan.base.ttl_ms)}
        return Step([(name, overrides)], extend=declared.extend, work_ms=work_ms)

    # First the faults that stop the holder for a while (a pause; one aimed at the extend's
    # command, so always mid-work, first), each with long work: the holder outlives its
    # lease, another client takes the lock, and the holder then extends again — the one
    # history that tells an extend checking its owner from one that does not. The others
    # after, alternately long and short.
    stalling = sorted((fault for fault in tested if _stalls_for_a_while(fault[0])),
                      key=lambda fault: fault[0] not in AIMED)
    others = [fault for fault in tested if fault not in stalling]
    # A lock that renews in the background gets the same campaigns: its watchdog, not the
    # holder, extends then (a renewal that does not check its owner shows the same way).
    extend_steps = [*(extending(0, fault) for fault in stalling),
                    *(extending(i, fault) for i, fault in enumerate(others))] \
        if declared.extend or declared.renews else []
    nest_ms = NEST_WORK_TTLS * plan.base.ttl_ms
    nesting = [Step([aim(fault, "release")], work_ms=nest_ms, nest_depth=WARM_UP_NEST_DEPTH)
               for fault in tested] if declared.reentrant else []
    mixed = [step for pair in zip_longest(extend_steps, nesting) for step in pair if step]
    return mixed


def extend_work_ms(index: int, ttl_ms: int) -> float:
    """The ``index``-th extending campaign's work: long, then short, alternately."""
    if index % 2:
        return EXTEND_SHORT_TTLS * ttl_ms
    return FIRST_AT_S[1] * 1000 + EXTEND_AFTER_FAULT_TTLS * ttl_ms


def _stalls_for_a_while(name: str) -> bool:
    """A fault that stops a client for its ``duration_ms`` (a pause, a pause point)."""
    fault = FAULTS[name]
    return STALLS_CLIENT in fault.effects and fault.parameters.get("duration_ms") is DURATION


def again_steps(steps: list[Step], untested: set[str], round_: int) -> list[Step]:
    """The first of ``steps`` there for each of ``untested`` (a fault that had no effect, a
    point never reached), to run again in round ``round_``, each with a new seed."""
    again, left = [], set(untested)
    for step in steps:
        if step.tests() & left:
            left -= step.tests()
            again.append(step)
    return [replace(step, again=True, seed_offset=AGAIN_SEED_OFFSET + round_ * len(steps) + index)
            for index, step in enumerate(again)]


def plan_steps(plan: AuditPlan, learned: Learned) -> tuple[list[Step], float]:
    """The singles of the faults added to the defaults (``AuditPlan.added``), the first
    ``EARLY_CAPABILITY_STEPS`` capability campaigns, the other singles, the other capability
    campaigns, then pairs in a seeded order, cut to what fits in the campaigns' share of the
    budget (at least every single and ``MIN_CAPABILITY_STEPS`` capability campaigns); and how
    long each may run. A fault added is one the user suspects, or the lock's commands call
    for: at a 1 s TTL the early capability campaigns' long holds took 19 s, and a
    ``+client-clock`` that broke the lock in its first second waited behind them."""
    singles = single_steps(plan, learned)
    capabilities = capability_steps(plan, learned)
    tested = plan.tested()
    pairs = [Step(list(pair)) for pair in combinations(tested, 2)]
    random.Random(plan.base.seed).shuffle(pairs)
    always = len(singles) + min(len(capabilities), MIN_CAPABILITY_STEPS)
    cell_s = cell_seconds(plan, always)
    fit = int(plan.budget_s * CAMPAIGN_SHARE // (cell_s + CELL_OVERHEAD_S))
    seeded = [replace(step, seed_offset=i) for i, step in
              enumerate([*singles, *capabilities, *pairs])]
    singles, capabilities, pairs = (seeded[:len(singles)],
                                    seeded[len(singles):len(singles) + len(capabilities)],
                                    seeded[len(singles) + len(capabilities):])
    early, late = capabilities[:EARLY_CAPABILITY_STEPS], capabilities[EARLY_CAPABILITY_STEPS:]
    added = plan.added()
    named = [replace(step, named=True) for step in singles if step.faults[0][0] in added]
    others = [step for step in singles if step.faults[0][0] not in added]
    ordered = [*named, *early, *others, *late, *pairs]
    required = [replace(step, required=True) for step in ordered[:always]]
    return [*required, *ordered[always:max(fit, always)]], cell_s


@dataclass
class StepResult:
    step: Step
    outcome: Outcome
    started_s: float  # since the audit began

    @cached_property
    def tally(self) -> Tally:
        """What its history shows the lock did (``chaos.experiments.surface.tally``): read
        once, the history being final once its campaign has run (the audit's verdict, exit
        status and record each ask)."""
        return tally(self.outcome.run_dir / HISTORY)


WARM_UP = "warm-up"  # the warm-up's name among the runs


@dataclass
class AuditResult:
    plan: AuditPlan
    directory: Path
    learned: Learned | None = None
    warm_up: Outcome | None = None
    steps: list[StepResult] = field(default_factory=list)
    explored: list[ExploreResult] = field(default_factory=list)
    skipped: list[Step] = field(default_factory=list)  # planned, not run: a hard one was found
    explored_at_s: list[float] = field(default_factory=list)  # each exploration's start
    required: int = 0  # planned campaigns that run whatever the budget
    wall_s: float = 0.0

    @property
    def verdicts(self) -> list[tuple[str, Verdict, Path]]:
        """(what ran, its verdict, its run directory), the worst first. The warm-up counts
        only when it broke the lock with no fault at all (a hard violation): what else it
        finds is what it asked (a lock refusing its own holder is not reentrant)."""
        found = [(s.step.name, s.outcome.verdict, s.outcome.run_dir) for s in self.steps]
        if self.warm_up is not None and self.warm_up.verdict.hard_violations:
            found.append((WARM_UP, self.warm_up.verdict, self.warm_up.run_dir))
        for result in self.explored:
            if result.failure is not None and result.run_dir is not None:
                found.append(("explore", result.failure.verdict, result.run_dir))
        return sorted(found, key=lambda item: -RANK[item[1].verdict])

    @property
    def verdict(self) -> str:
        """The worst violation of any run; else ``inconclusive`` when the audit as a whole
        did not exercise the lock (``inconclusive_reasons``); else ``ok``. One campaign that
        a fault missed is not enough to call the audit inconclusive: the others may cover it.
        """
        worst = [v.verdict for _, v, _ in self.verdicts if v.verdict in VIOLATION_KINDS]
        if worst:
            return worst[0]
        return INCONCLUSIVE if self.inconclusive_reasons else "ok"

    @property
    def inconclusive_reasons(self) -> list[str]:
        """Why the audit tested nothing: no campaign exercised the lock (the first one's
        reason), or something it asked for was never exercised (``untested``)."""
        verdicts = [s.outcome.verdict for s in self.steps]
        if verdicts and all(v.counts.get("lock_cycles", 0) < MIN_LOCK_CYCLES for v in verdicts):
            first = next((v.inconclusive_reasons[0] for v in verdicts if v.inconclusive),
                         "no campaign completed two lock cycles")
            return [f"no campaign exercised the lock: {first}"]
        return [why for _, why in self.untested]

    @property
    def untested(self) -> list[tuple[str, str]]:
        """What the audit asked for and never exercised, as (what, why): a tested fault with
        no effect on the lock in any run, a command it aimed at that was never reached, a
        capability the lock has that the campaigns asking for it never exercised."""
        covered = self.coverage
        missed = [(name, f"{name} had no effect on the lock in any run" if name in covered else
                   f"{name} never fired in any run") for name, _ in self.plan.tested()
                  if name not in covered or not covered[name].effective]
        exercised = self.exercised
        reached = {**exercised.pause_points, **exercised.crashes}
        for op, command in dict.fromkeys(aim for s in self.steps if (aim := s.step.aim())):
            if not reached.get(point := point_name(op, command)):
                missed.append((point, self._unreached(op, command)))
        return missed + self._capabilities_unused(exercised)

    def _unreached(self, op: str, command: str) -> str:
        """Why no client stopped or crashed before ``command`` in ``op``, by how the warm-up
        saw the lock send it: a point the user aimed at a command the lock never sent said
        "this lock sends it" (``--faults client-pause-at:command=HGET`` on ``lua``)."""
        said = f"no client ever stopped or crashed before {point_name(op, command)}"
        learned = self.learned
        if learned is None:
            return f"{said}: never while a point was armed"
        sent = learned.surface.get(op, [])
        if command not in sent:
            return (f"{said}: this lock's {op} never sent it in the warm-up"
                    + (f" (it sent {', '.join(sent)})" if sent else ""))
        how = (f"sent it only when its {op} failed" if learned.only_on_failure(op, command)
               else "sends it")
        return f"{said}: this lock {how}, but never while a point was armed"

    def _capabilities_unused(self, exercised: Exercised) -> list[tuple[str, str]]:
        """A capability the warm-up found that the campaigns asking for it never exercised."""
        if self.learned is None:
            return []
        declared, asked = self.learned.declared, [s.step for s in self.steps]
        unused = [
            (declared.extend and any(step.extend for step in asked) and not exercised.extends_ok,
             "extend", "the lock can extend, but no extend returned a lease in any campaign"),
            (declared.renews and not exercised.renewals, "renewals",
             "the lock renews in the background, but no renewal was recorded in any campaign"),
            (declared.reentrant and any(step.nest_depth > 1 for step in asked)
             and not exercised.nested_grants, "reentrancy",
             "the lock let its holder in during the warm-up, but no nested acquire was granted "
             "in any campaign"),
        ]
        return [(capability, why) for missed, capability, why in unused if missed]

    @property
    def coverage(self) -> dict[str, FaultCoverage]:
        """Each fault's coverage, summed over the campaigns."""
        total: dict[str, FaultCoverage] = {}
        for s in self.steps:
            for name, entry in s.outcome.verdict.coverage.items():
                into = total.setdefault(name, FaultCoverage(fired=0, effective=0, active_s=0.0))
                into.fired += entry.fired
                into.effective += entry.effective
                into.active_s = round(into.active_s + entry.active_s, 3)
        return total

    @property
    def exercised(self) -> Exercised:
        """Per capability, what the campaigns made the lock do (the warm-up not counted)."""
        seen = Tally()
        extends = renewals = nested = 0
        for s in self.steps:
            seen.add(s.tally)
            counts = s.outcome.verdict.counts
            extends += counts.get("extend_ok", 0)
            renewals += counts.get("renew_ok", 0)
            nested += counts.get("reacquired", 0)  # the grants that re-entered, as `run` says
        return Exercised(extends_ok=extends, renewals=renewals, nested_grants=nested,
                         pause_points=seen.pauses, crashes=seen.crashes)

    @property
    def failed(self) -> bool:
        return any(fails(verdict, self.plan.base.fail_on) for _, verdict, _ in self.verdicts)

    @property
    def exit_status(self) -> int:
        """As ``run``'s: 1 a violation at or above ``fail_on``; 3 when the audit did not
        exercise the lock or did not test all it planned (``inconclusive_reasons``, beside
        violations below the gate too); else 0."""
        if self.failed:
            return EXIT_VIOLATION
        if self.inconclusive_reasons and not self.plan.base.allow_inconclusive:
            return EXIT_INCONCLUSIVE
        return EXIT_OK

    @property
    def first_hard_s(self) -> float | None:
        """Seconds from the audit's start to the end of the first run that found a hard one."""
        if self.warm_up is not None and self.warm_up.verdict.hard_violations:
            return self.warm_up.verdict.first_hard_violation_s
        for s in self.steps:
            if s.outcome.verdict.hard_violations:
                first = s.outcome.verdict.first_hard_violation_s or 0.0
                return s.started_s + first
        for at, result in zip(self.explored_at_s, self.explored, strict=True):
            if result.failure is not None and result.failure.verdict.hard_violations:
                return at + (result.time_to_find_s or 0.0)
        return None

    @property
    def examples(self) -> int:
        return sum(result.examples for result in self.explored)


Event = Callable[[str], None]


def run_audit(plan: AuditPlan, out: Path, on_event: Event | None = None) -> AuditResult:
    """Run the audit of ``plan`` into a new directory under ``out``."""
    plan.validate()
    say = on_event or (lambda _: None)
    directory = stamped_path(out, f"audit-{plan.base.lock}".replace(":", "_").replace("/", "_"))
    directory.mkdir(parents=True)
    result = AuditResult(plan, directory)
    started = time.monotonic()
    deadline = started + plan.budget_s

    say("warm-up: learning the lock's commands and capabilities")
    warm = plan.warm_up_campaign()
    result.warm_up = run_campaign(warm, directory / RUNS)
    result.learned = learn(result.warm_up.run_dir / HISTORY, choose_layout(warm).nodes)
    plan = result.plan = fitted(plan, result.learned)
    steps, cell_s = plan_steps(plan, result.learned)
    result.required = sum(step.required for step in steps)

    def broke() -> bool:
        return not plan.full and any(v.hard_violations for _, v, _ in result.verdicts)

    def run_step(index: int, step: Step, of: int) -> None:
        say(f"campaign {index + 1}/{of}: {step.name}")
        campaign = plan.step_campaign(index, step, cell_s)
        at = time.monotonic() - started
        result.steps.append(StepResult(step, run_campaign(campaign, directory / RUNS), at))

    for index, step in enumerate(steps):
        if broke() or (not step.required and time.monotonic() + CELL_OVERHEAD_S > deadline):
            result.skipped = steps[index:]
            break
        run_step(index, step, len(steps))
    for round_ in range(AGAIN_ROUNDS):
        for step in again_steps(steps, {what for what, _ in result.untested}, round_):
            if broke():
                break
            run_step(len(result.steps), step, len(result.steps) + 1)
    if not broke():
        # Each exploration on one topology until its share of the budget is spent, as
        # `lockchaos explore` runs (not a topology and a new seed, Hypothesis starting over
        # from its smallest programs, every 4 programs).
        campaigns = plan.explore_campaigns()  # shared locks too: explore steps their asks
        for index, campaign in enumerate(campaigns):
            left = deadline - CELL_OVERHEAD_S - time.monotonic()
            if broke() or left < CELL_OVERHEAD_S:
                break
            say(f"exploring with {', '.join(campaign.fault_names) or 'client pauses'}")
            until = time.monotonic() + left / (len(campaigns) - index)
            result.explored_at_s.append(time.monotonic() - started)
            result.explored.append(explore(campaign, max_examples=MAX_EXAMPLES,
                                           out=directory / RUNS, until=until))
    result.wall_s = time.monotonic() - started
    audit = record(result)
    save_audit(directory, audit)
    write_audit_reports(directory, audit)
    return result


def record(result: AuditResult) -> AuditFile:
    """What ``audit.json`` keeps of the audit: enough for its pages and a CI log."""
    plan = result.plan
    runs = [
        AuditRun(
            name=name, verdict=verdict.verdict, hard_violations=verdict.hard_violations,
            soft_violations=verdict.soft_violations,
            liveness_violations=verdict.liveness_violations,
            first_hard_violation_s=verdict.first_hard_violation_s,
            explanation=next(iter([*verdict.explanations, *verdict.inconclusive_reasons]),
                             None),
            duration_s=verdict.duration_s,
            report=str((run_dir / REPORT).relative_to(result.directory)),
        )
        for name, verdict, run_dir in result.verdicts
    ]
    learned = result.learned
    return AuditFile(
        lock=plan.base.lock, budget_s=plan.budget_s, seed=plan.base.seed, fail_on=plan.base.fail_on,
        verdict=result.verdict, failed=result.failed, exit_status=result.exit_status,
        inconclusive_reasons=result.inconclusive_reasons, coverage=result.coverage,
        tested=[name for name, _ in plan.tested()], explored=explored_faults(plan),
        assumed_away=plan.assumed_away(), runs=runs,
        skipped=[step.name for step in result.skipped], examples=result.examples,
        first_hard_s=None if result.first_hard_s is None else round(result.first_hard_s, 3),
        wall_s=round(result.wall_s, 3), replay=replay_command(plan),
        surface=learned.surface if learned else {},
        on_failure=learned.on_failure if learned else {},
        together=learned.together if learned else {},
        declared=learned.declared if learned else None, exercised=result.exercised,
        explore_s=round(sum(explored.elapsed_s for explored in result.explored), 3),
        required=result.required,
    )  # fmt: skip


def replay_command(plan: AuditPlan) -> str:
    """The ``lockchaos audit`` command line that runs ``plan`` again."""
    given = [name for name in OPTIONS if name not in DEPLOYMENT or name in plan.kept]
    words = ["lockchaos", "audit", *plan.base.options(given), "--budget", f"{plan.budget_s:g}"]
    if plan.faults:
        words += ["--faults", plan.faults]
    if plan.full:
        words.append("--full")
    return shlex.join(words)


def explored_faults(plan: AuditPlan) -> list[str]:
    """What the explore phase steps: the client faults it always explores, and the tested
    faults it can switch on and off."""
    return [*BUILT_IN, *(name for name, _ in plan.stepped())]
