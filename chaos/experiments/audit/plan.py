"""What an audit tests and how each of its campaigns is made: the plan (the base campaign, the
budget, the faults tested and assumed away), a campaign of it (``Trial``), and the plan fitted to
what the warm-up learned.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import msgspec

from chaos.campaign import DEFAULTS, Campaign
from chaos.campaign.spec import fault_spec
from chaos.errors import UsageError
from chaos.experiments.surface import (
    WARM_UP_NEST_DEPTH,
    WARM_UP_S,
    WARM_UP_WORK_TTLS,
    Learned,
    point_name,
)
from chaos.explore.explorer import EXPLORE_TTL_MS
from chaos.explore.fault_steps import CLIENT_CRASH, explorable
from chaos.nemesis import FAULTS, FaultSpec, parse_faults
from chaos.nemesis.client_faults import ClientCrash, ClientPauseAt
from chaos.nemesis.server_faults import ScriptFlush

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
CELL_S = 3.0  # each campaign runs at most this long (less when it breaks the lock)
# ... and, whatever the budget, at least this many TTLs (``AuditPlan.cell_bounds``): at a 2 s
# TTL a campaign squeezed to 1.5 s saw one lock cycle (inconclusive), and a pause of 1.5-3
# TTLs outlived it.
MIN_CELL_TTLS = 3.0
MIN_CELL_S = 1.5  # shorter than ``CELL_S``, when a small budget must still try every fault
# A fault added by name runs alone at least this many TTLs (``CELL_S`` is 15 at the default
# TTL, 3 at 1 s). At 3 s, ``+client-clock:client=c2`` missed Redis in Action's semaphore with a
# lock (1 s TTL) in 1 seed of 10: c2 took the permit again right after each release, so it
# never acquired while c1 held, which is when its clock breaks the lock. A found violation
# ends the campaign at once: the length costs only a lock that survives.
NAMED_CELL_TTLS = 6.0
EXPLORE_CLIENTS = 2  # in the explore phase, unless told
# The faults that aim at a command (``command=``, ``op=``): once before each command learned.
AIMED = (ClientPauseAt.name, ClientCrash.name)
MIN_BUDGET_S, MAX_BUDGET_S = 10.0, 3600.0
# The shortest TTL the audit gives a lock whose TTLs come in steps (whole seconds):
# ``kept_ttl``.
MIN_COARSE_TTL_MS = 1000

# The campaign options ``lockchaos audit`` takes: every campaign of the audit (and its
# explore batches) runs with them.
AUDIT_OPTIONS = ("lock", "topology", "nodes", "provider", "provider_config", "server", "clients",
           "ttl_ms", "work_ms", "seed", "fail_on", "allow_inconclusive", "capacity", "renews")
# Of those, the deployment the audit chooses per phase unless told (explore: 2 clients and a
# short TTL, for more programs): a value the user gave wins in every phase.
DEPLOYMENT = ("clients", "ttl_ms", "work_ms")


@dataclass(frozen=True)
class AuditPlan:
    """What to audit, and how long for: ``base`` is the campaign every trial starts from
    (its lock, seed, ``fail_on``, topology…: ``AUDIT_OPTIONS``), each with its own faults.
    ``told``: fields of ``DEPLOYMENT`` the user gave even at their default (``--clients 5``):
    with those the base sets away from their default, every phase keeps the base's value."""

    base: Campaign
    budget_s: float = 60.0
    # Which faults it tests, as its --faults spells them: empty for MUST_SURVIVE, entries
    # replacing them, "+f" entries adding to them.
    selection: str = ""
    full: bool = False  # run the whole budget even after a hard violation
    told: frozenset[str] = frozenset()

    def _entries(self) -> tuple[list[str], list[str]]:
        """``selection``'s entries: those added to the defaults (``+f``, without the ``+``), and
        those replacing them."""
        entries = [part.strip() for part in self.selection.split(",") if part.strip()]
        return ([entry[1:] for entry in entries if entry.startswith("+")],
                [entry for entry in entries if not entry.startswith("+")])

    def added(self) -> set[str]:
        """The names of the faults added to the defaults (``+f``): the user's, and those the
        lock's commands call for (``fitted``)."""
        added, _ = self._entries()
        return {name for name, _ in parse_faults(",".join(added))}

    def tested(self) -> list[FaultSpec]:
        """The faults the audit injects (``UsageError`` for an unknown one)."""
        added, replacing = self._entries()
        kept = ",".join(replacing) if replacing else ",".join(MUST_SURVIVE)
        # The added ones first: what the user asked for by name is tried soonest.
        chosen = parse_faults(",".join([*added, kept]))
        seen: dict[str, FaultSpec] = {}
        for name, overrides in chosen:
            seen.setdefault(name, (name, overrides))
        return list(seen.values())

    def stepped(self) -> list[FaultSpec]:
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

    def campaign(self, faults: list[FaultSpec], *, seed: int, extend: bool, duration_s: float,
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

    def warm_up_campaign(self, tries: int = 1) -> Campaign:
        """The warm-up (``chaos.experiments.surface``): no fault, ``WARM_UP_S`` long, holders
        extending and acquiring again while they hold, working ``WARM_UP_WORK_TTLS``; it
        stops only at a hard violation (a lock that refuses its own holder is not
        reentrant: that is what it asks). Its ``tries``-th run (one that saw the lock grant
        or release nothing runs again) is twice as long as the one before, on the next seed."""
        warm = self.campaign([], seed=self.base.seed + tries - 1, extend=True,
                             duration_s=WARM_UP_S * 2 ** (tries - 1),
                             nest_depth=WARM_UP_NEST_DEPTH,
                             work_ms=WARM_UP_WORK_TTLS * self.base.ttl_ms)
        return msgspec.structs.replace(warm, fail_on="hard")

    @property
    def cell_bounds(self) -> tuple[float, float]:
        """The shortest and the longest a campaign runs (``cell_s``): ``MIN_CELL_S`` and
        ``CELL_S``, each at least ``MIN_CELL_TTLS``."""
        ttls = MIN_CELL_TTLS * self.base.ttl_ms / 1000
        return max(MIN_CELL_S, ttls), max(CELL_S, ttls)

    def trial_length(self, trial: Trial, cell_s: float) -> float:
        """How long ``trial``'s campaign runs: its own ``length_s``, or ``cell_s`` (if
        ``named`` or ``in_order``, ``CELL_S`` or ``NAMED_CELL_TTLS``, whichever is longer: a
        point armed first waits for the fault that follows); with holders told to work long
        (an extending one's 3 TTLs and more), until a second hold has begun, a TTL after the
        first ended — one hold is no lock cycle to judge; all after its faults had time to
        act (``Trial.acts_after_s``)."""
        named_s = max(CELL_S, NAMED_CELL_TTLS * self.base.ttl_ms / 1000)
        length = named_s if trial.named or trial.in_order else cell_s
        if trial.length_s is not None:
            length = trial.length_s
        if trial.work_ms is not None:
            length = max(length, (trial.work_ms + self.base.ttl_ms) / 1000)
        return length + trial.acts_after_s

    def trial_campaign(self, index: int, trial: Trial, cell_s: float) -> Campaign:
        """The campaign of the ``index``-th trial: its own seed, ``trial_length`` long."""
        offset = index if trial.seed_offset is None else trial.seed_offset
        return self.campaign(trial.faults, seed=self.base.seed + offset, extend=trial.extend,
                             duration_s=self.trial_length(trial, cell_s),
                             nest_depth=trial.nest_depth, work_ms=trial.work_ms,
                             in_order=trial.in_order)

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
        campaign.validate()  # a shape the campaigns could not run on too, before any starts


@dataclass(frozen=True)
class Trial:
    """One trial of the audit — a seeded campaign of its own (explore's ``Step`` is one
    operation of a program): some faults, holders extending or not (working ``work_ms``,
    None: the campaign's), acquiring ``nest_depth`` deep."""

    faults: list[FaultSpec]
    extend: bool = False
    work_ms: float | None = None
    nest_depth: int = 1
    # Its seed, from the base's: its place among singles, capabilities, pairs — not its place
    # in the run order, so that running some capability campaigns first leaves every other
    # campaign's seed (and schedule) as it was. None: its index.
    seed_offset: int | None = None
    # It comes first: a fault alone, or one of the first capability campaigns
    # (``plan_trials``), run within ``REQUIRED_SHARE`` of the budget. Under load those took
    # longer than the budget and the last singles were skipped: a fault never tried, and
    # the audit still went green — now one campaign carries those faults (``packed``).
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
    # A run again of a campaign that did not do what it was there for (``again_trials``).
    again: bool = False
    # Its own length (None: the cell's, ``AuditPlan.trial_length``): several faults the
    # budget could not try one by one run as long as it takes each to fire once
    # (``chaos.experiments.audit.trials.packed``).
    length_s: float | None = None

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

    @property
    def carries(self) -> bool:
        """Whether it carries faults the budget could not try one by one (``length_s``)."""
        return self.length_s is not None

    def tests(self) -> set[str]:
        """What it is there for, as ``AuditResult.untested`` names it: its fault, if alone
        (each of them, if it ``carries`` several), and the point it aims at."""
        aim = self.aim()
        alone = len(self.faults) == 1 or self.carries
        return ({name for name, _ in self.faults} if alone else set()) | (
            {point_name(*aim)} if aim else set())



def kept_ttl(plan: AuditPlan) -> AuditPlan:
    """``plan`` with a TTL its lock can keep in every phase. A lock whose TTLs are multiples
    of a step (``ttl_granularity_ms``: whole seconds, 1000) gets, unless the user chose one
    (which the campaigns then check, one line if the lock cannot keep it), the first multiple
    of its step from ``MIN_COARSE_TTL_MS``: at the default 200 ms the audit exited 2 for it.
    The TTL is the base's, so explore keeps it too (its own, 50 ms, is no whole second)."""
    step = plan.base.lock_spec.ttl_granularity_ms
    if "ttl_ms" in plan.kept or plan.base.ttl_ms % step == 0:
        return plan
    ttl_ms = step * math.ceil(MIN_COARSE_TTL_MS / step)
    return replace(plan, base=msgspec.structs.replace(plan.base, ttl_ms=ttl_ms))


def fitted(plan: AuditPlan, learned: Learned) -> AuditPlan:
    """``plan`` fitted to what the warm-up learned. A lock seen renewing is held to it in
    every phase (``--renews``): a lease that lapses while its holder runs is hard, as for a
    bundled watchdog (a user's lock declares nothing). The faults its commands call for
    (``CALLED_FOR``) are added to the default ones (``+f``); a list the user chose is kept."""
    if learned.declared.renews and not plan.base.renews:
        plan = replace(plan, base=msgspec.structs.replace(plan.base, renews=True))
    entries = [entry.strip() for entry in plan.selection.split(",") if entry.strip()]
    if any(not entry.startswith("+") for entry in entries):
        return plan
    sent = {command for commands in learned.surface.values() for command in commands}
    tested = {name for name, _ in plan.tested()}
    added = [f"+{fault}" for command, fault in CALLED_FOR.items()
             if command in sent and fault not in tested]
    return replace(plan, selection=",".join([*entries, *added])) if added else plan

