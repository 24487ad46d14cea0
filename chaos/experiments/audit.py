"""An audit: what lockchaos throws at a lock nobody has told it anything about, within a time
budget, ending in one verdict a CI gate can act on.

By default it uses every fault a lock must survive whatever its deployment (``MUST_SURVIVE``:
client pauses, pause points, crashes, slow work, latency, partitions, resets, lost replies,
server pauses);
``--faults`` replaces that set, and ``--faults +f`` adds to it the infrastructure faults an
algorithm claims to survive (``+crash-restart-delayed`` for Redlock). Every catalog fault left
out is *assumed away*, and the audit says so.

The budget is spent in two phases. First short seeded campaigns, each on a fresh topology and
stopping at its first hard violation: every fault alone, then — when the lock can extend —
every fault with holders extending while they work, then pairs of faults in a seeded order,
as many as fit in ``CAMPAIGN_SHARE`` of the budget. Then ``explore`` (Hypothesis step
programs, shrunk) in small batches, each a new seed, until the budget is spent. Unless
``--full`` is given, the audit ends at the first hard violation: nothing can make the verdict
worse, and a CI gate wants the answer fast.

The deployment a user gives (``--nodes``, ``--clients``, ``--ttl-ms``, ``--work-ms``) holds in
every phase; left unset, the campaigns run the campaign's defaults and explore its own (two
clients, a short TTL).
"""

from __future__ import annotations

import random
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import msgspec

from chaos import locks
from chaos.campaign import DEFAULTS, Campaign, choose_layout, stamped_path
from chaos.checker import Verdict, fails
from chaos.checker.coverage import FaultCoverage
from chaos.checker.exercised import MIN_LOCK_CYCLES
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
from chaos.explore import ExploreResult, explore
from chaos.explore.explorer import EXPLORE_TTL_MS
from chaos.explore.fault_steps import BUILT_IN, CLIENT_CRASH, explorable
from chaos.nemesis import FAULTS, parse_faults
from chaos.report import REPORT
from chaos.report.audit_page import AuditFile, AuditRun, save_audit, write_audit_reports

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
CELL_S = 3.0  # each campaign runs at most this long (less when it breaks the lock)
MIN_CELL_S = 1.5  # shorter, when a small budget must still try every fault alone
CELL_OVERHEAD_S = 0.8  # a fresh topology, the checker and the reports, per campaign
CAMPAIGN_SHARE = 0.6  # of the budget, for the campaigns; the rest explores
EXPLORE_BATCH = 4  # programs per explore call: a new seed (and topology) per batch
EXPLORE_CLIENTS = 2  # in the explore batches, unless told
MIN_BUDGET_S, MAX_BUDGET_S = 10.0, 3600.0
RUNS = "runs"

Faults = list[tuple[str, dict[str, Any]]]


# The campaign options ``lockchaos audit`` takes: every campaign of the audit (and its
# explore batches) runs with them.
OPTIONS = ("lock", "topology", "nodes", "provider", "provider_config", "server", "clients",
           "ttl_ms", "work_ms", "seed", "fail_on", "allow_inconclusive")
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

    def tested(self) -> Faults:
        """The faults the audit injects (``UsageError`` for an unknown one)."""
        entries = [part.strip() for part in self.faults.split(",") if part.strip()]
        added = [entry[1:] for entry in entries if entry.startswith("+")]
        replacing = [entry for entry in entries if not entry.startswith("+")]
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
                 **chosen: Any) -> Campaign:
        """One campaign of the audit: the base's, with ``faults``, and ``chosen`` — the
        audit's own choice of fields of ``DEPLOYMENT`` for this phase — where not ``kept``."""
        unknown = sorted(set(chosen) - set(DEPLOYMENT))
        if unknown:
            raise TypeError(f"the audit chooses no {unknown[0]!r}")
        kept = self.kept
        own = {name: value for name, value in chosen.items() if name not in kept}
        return msgspec.structs.replace(
            self.base, faults=faults, seed=seed, duration_s=duration_s, stop_on_first=True,
            extend_during_work=extend, **own,
        )

    def step_campaign(self, index: int, step: Step) -> Campaign:
        """The campaign of the ``index``-th step: its own seed, ``cell_seconds`` long."""
        return self.campaign(step.faults, seed=self.base.seed + index, extend=step.extend,
                             duration_s=cell_seconds(self))

    def explore_campaign(self, batch: int) -> Campaign:
        """The campaign explore batch ``batch`` starts from: its own seed, and unless kept
        ``EXPLORE_CLIENTS`` and a short TTL (steps are TTL multiples: more programs)."""
        return self.campaign(self.stepped(), seed=self.base.seed + 1000 + batch, extend=False,
                             duration_s=CELL_S, clients=EXPLORE_CLIENTS, ttl_ms=EXPLORE_TTL_MS)

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
    """One seeded campaign of the audit: some faults, extending or not."""

    faults: Faults
    extend: bool = False

    @property
    def name(self) -> str:
        label = " + ".join(name for name, _ in self.faults)
        return f"{label} (extending)" if self.extend else label


def cell_seconds(plan: AuditPlan) -> float:
    """How long each campaign may run: ``CELL_S``, or less when the campaigns' share of the
    budget could not otherwise try every fault alone (never under ``MIN_CELL_S``)."""
    share = plan.budget_s * CAMPAIGN_SHARE / max(len(plan.tested()), 1) - CELL_OVERHEAD_S
    return max(MIN_CELL_S, min(CELL_S, share))


def plan_steps(plan: AuditPlan, extendable: bool) -> list[Step]:
    """Singles, singles extending (if the lock can extend), then pairs in a seeded order,
    cut to what fits in the campaigns' share of the budget (at least every single)."""
    tested = plan.tested()
    singles = [Step([fault]) for fault in tested]
    extending = [Step([fault], extend=True) for fault in tested] if extendable else []
    pairs = [Step(list(pair)) for pair in combinations(tested, 2)]
    random.Random(plan.base.seed).shuffle(pairs)
    fit = int(plan.budget_s * CAMPAIGN_SHARE // (cell_seconds(plan) + CELL_OVERHEAD_S))
    return [*singles, *extending, *pairs][: max(fit, len(singles))]


@dataclass
class StepResult:
    step: Step
    outcome: Outcome
    started_s: float  # since the audit began


@dataclass
class AuditResult:
    plan: AuditPlan
    directory: Path
    steps: list[StepResult] = field(default_factory=list)
    explored: list[ExploreResult] = field(default_factory=list)
    skipped: list[Step] = field(default_factory=list)  # planned, not run: a hard one was found
    wall_s: float = 0.0

    @property
    def verdicts(self) -> list[tuple[str, Verdict, Path]]:
        """(what ran, its verdict, its run directory), the worst first."""
        found = [(s.step.name, s.outcome.verdict, s.outcome.run_dir) for s in self.steps]
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
        reason), or a tested fault had no effect on the lock in any run."""
        verdicts = [s.outcome.verdict for s in self.steps]
        if verdicts and all(v.counts.get("lock_cycles", 0) < MIN_LOCK_CYCLES for v in verdicts):
            first = next((v.inconclusive_reasons[0] for v in verdicts if v.inconclusive_reasons),
                         "no campaign completed two lock cycles")
            return [f"no campaign exercised the lock: {first}"]
        covered = self.coverage
        return [f"{name} had no effect on the lock in any run" for name, _ in self.plan.tested()
                if name in covered and not covered[name].effective]

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
    def failed(self) -> bool:
        return any(fails(verdict, self.plan.base.fail_on) for _, verdict, _ in self.verdicts)

    @property
    def exit_status(self) -> int:
        """As ``run``'s: 1 a violation at or above ``fail_on``, 3 inconclusive, else 0."""
        if self.failed:
            return EXIT_VIOLATION
        if self.verdict == INCONCLUSIVE and not self.plan.base.allow_inconclusive:
            return EXIT_INCONCLUSIVE
        return EXIT_OK

    @property
    def first_hard_s(self) -> float | None:
        """Seconds from the audit's start to the end of the first run that found a hard one."""
        for s in self.steps:
            if s.outcome.verdict.hard_violations:
                first = s.outcome.verdict.first_hard_violation_s or 0.0
                return s.started_s + first
        return None

    @property
    def examples(self) -> int:
        return sum(result.examples for result in self.explored)


Event = Callable[[str], None]


def run_audit(plan: AuditPlan, out: Path, on_event: Event | None = None) -> AuditResult:
    """Run the audit of ``plan`` into a new directory under ``out``."""
    plan.validate()
    say = on_event or (lambda _: None)
    info = locks.info(plan.base.lock)
    extendable = info.extend if info is not None else True  # a user's lock: try it
    steps = plan_steps(plan, extendable)
    directory = stamped_path(out, f"audit-{plan.base.lock}".replace(":", "_").replace("/", "_"))
    directory.mkdir(parents=True)
    result = AuditResult(plan, directory)
    started = time.monotonic()
    deadline = started + plan.budget_s

    def broke() -> bool:
        return not plan.full and any(v.hard_violations for _, v, _ in result.verdicts)

    for index, step in enumerate(steps):
        if broke() or time.monotonic() + CELL_OVERHEAD_S > deadline:
            result.skipped = steps[index:]
            break
        say(f"campaign {index + 1}/{len(steps)}: {step.name}")
        campaign = plan.step_campaign(index, step)
        at = time.monotonic() - started
        result.steps.append(StepResult(step, run_campaign(campaign, directory / RUNS), at))
    batch = 0
    while not broke() and time.monotonic() + 2 * CELL_OVERHEAD_S < deadline:
        batch += 1
        say(f"explore batch {batch} ({result.examples} programs so far)")
        explored = explore(plan.explore_campaign(batch), max_examples=EXPLORE_BATCH,
                           out=directory / RUNS)
        result.explored.append(explored)
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
    return AuditFile(
        lock=plan.base.lock, budget_s=plan.budget_s, seed=plan.base.seed, fail_on=plan.base.fail_on,
        verdict=result.verdict, failed=result.failed, exit_status=result.exit_status,
        inconclusive_reasons=result.inconclusive_reasons, coverage=result.coverage,
        tested=[name for name, _ in plan.tested()], explored=explored_faults(plan),
        assumed_away=plan.assumed_away(), runs=runs,
        skipped=[step.name for step in result.skipped], examples=result.examples,
        first_hard_s=None if result.first_hard_s is None else round(result.first_hard_s, 3),
        wall_s=round(result.wall_s, 3), replay=replay_command(plan),
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
