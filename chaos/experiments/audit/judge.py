"""The audit's judgement: its campaigns' and explorations' verdicts, read together — the worst
violation, what it asked for and never exercised, its exit status.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from chaos.campaign import HISTORY
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
from chaos.experiments.audit.plan import AuditPlan, Trial
from chaos.experiments.execute import Outcome
from chaos.experiments.surface import (
    Learned,
    Tally,
    point_name,
    tally,
)
from chaos.explore import ExploreResult
from chaos.report.audit_answer import fits
from chaos.report.audit_page import (
    Exercised,
)


@dataclass
class TrialResult:
    trial: Trial
    outcome: Outcome
    started_s: float  # since the audit began

    @cached_property
    def tally(self) -> Tally:
        """What its history shows the lock did (``chaos.experiments.surface.tally``): read
        once, the history being final once its campaign has run (the audit's verdict, exit
        status and record each ask)."""
        return tally(self.outcome.run_dir / HISTORY)


WARM_UP = "warm-up"  # the warm-up's name among the runs


@dataclass(frozen=True)
class WarmUp:
    """The audit's warm-up as it ran: its last campaign's outcome, when that began (seconds
    since the audit began) and how many campaigns it took (``runner.warm_up``)."""

    outcome: Outcome
    started_s: float
    tries: int


@dataclass
class AuditResult:
    plan: AuditPlan
    directory: Path
    learned: Learned | None = None
    warm_up: WarmUp | None = None
    trials: list[TrialResult] = field(default_factory=list)
    explored: list[ExploreResult] = field(default_factory=list)
    skipped: list[Trial] = field(default_factory=list)  # planned, not run: a hard one was found
    not_fitted: list[Trial] = field(default_factory=list)  # planned, not run: no time left
    explored_at_s: list[float] = field(default_factory=list)  # each exploration's start
    # Explorations the machine stopped, one line each (``run_audit``).
    explore_stopped: list[str] = field(default_factory=list)
    required: int = 0  # planned campaigns that come first (``Trial.required``)
    # The budget that would have run those of them that had no time (``run_audit``'s estimate,
    # on this machine's measured cost of a campaign); None when they all ran.
    fits_in_s: float | None = None
    wall_s: float = 0.0

    @property
    def verdicts(self) -> list[tuple[str, Verdict, Path]]:
        """(what ran, its verdict, its run directory), the worst first. The warm-up counts
        only when it broke the lock with no fault at all (a hard violation): what else it
        finds is what it asked (a lock refusing its own holder is not reentrant)."""
        found = [(s.trial.name, s.outcome.verdict, s.outcome.run_dir) for s in self.trials]
        if self.warm_up is not None and self.warm_up.outcome.verdict.hard_violations:
            found.append((WARM_UP, self.warm_up.outcome.verdict, self.warm_up.outcome.run_dir))
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
        """Why the audit cannot vouch for the lock: a checker rule failed in one of its runs
        (that run's violations of its kinds were not looked for: ``Verdict.rule_errors``),
        and then no campaign exercised the lock (the first one's reason), or something it
        asked for was never exercised (``untested``)."""
        runs = [(s.trial.name, s.outcome.verdict) for s in self.trials]
        if self.warm_up is not None:
            runs.append((WARM_UP, self.warm_up.outcome.verdict))
        broken = list(dict.fromkeys(f"{name}: {error.reason}" for name, verdict in runs
                                    for error in verdict.rule_errors or ()))
        verdicts = [s.outcome.verdict for s in self.trials]
        if verdicts and all(v.counts.get("lock_cycles", 0) < MIN_LOCK_CYCLES for v in verdicts):
            first = next((v.inconclusive_reasons[0] for v in verdicts if v.inconclusive),
                         "no campaign completed two lock cycles")
            return [*broken, f"no campaign exercised the lock: {first}"]
        return broken + [why for _, why in self.untested]

    @property
    def untested(self) -> list[tuple[str, str]]:
        """What the audit asked for and never exercised, as (what, why): a tested fault with
        no effect on the lock in any run, a command it aimed at that was never reached, a
        capability the lock has that the campaigns asking for it never exercised. A fault
        only the campaigns skipped after a hard violation would have injected is not among
        them: the audit stopped before its turn (``skipped_faults``), and says so once."""
        covered = self.coverage
        missed = [(name, self._missed(name, fired=name in covered))
                  for name, _ in self.plan.tested()
                  if (name not in covered or not covered[name].effective)
                  and name not in self.skipped_faults]
        exercised = self.exercised
        missed += [(point_name(op, command), self._unreached(op, command))
                   for op, command in self._unreached_aims(exercised)
                   if not self._optional(op, command)]
        return self._unseen() + missed + self._capabilities_unused(exercised)

    def _missed(self, name: str, *, fired: bool) -> str:
        """Why tested fault ``name`` had no effect, and, when a campaign injecting it came
        first and had no time, that: a loaded machine's audit of a sound lock said "client-crash
        never fired in any run" where its campaigns had all been cut for time."""
        said = f"{name} had no effect on the lock in any run" if fired else \
            f"{name} never fired in any run"
        cut = any(trial.required and name in (fault for fault, _ in trial.faults)
                  for trial in self.not_fitted)
        return f"{said}: {self._no_time}" if cut else said

    @property
    def _no_time(self) -> str:
        return (f"its campaign had no time in the {self.plan.budget_s:g} s budget "
                f"({fits(self.fits_in_s)} would run it)")

    def _unseen(self) -> list[tuple[str, str]]:
        """What the warm-up, every time it ran, never saw the lock do (``Learned.unseen``):
        the commands of that operation were not learned, and no fault was aimed at them."""
        if self.learned is None or not self.learned.unseen:
            return []
        tries = self.warm_up.tries if self.warm_up is not None else 1
        times = "once" if tries == 1 else f"{tries} times"
        return [(WARM_UP, f"the lock {self.learned.unseen} nothing in the warm-up (run {times}): "
                          "what it sends to grant and release was never learned, and no fault "
                          "was aimed at it")]

    @property
    def unreached_optional(self) -> list[str]:
        """The points aimed at that the lock's surface shows but the audit need not reach
        (``Learned.optional``: connection set-up, subscriptions, script loading, a command
        sent once), and no client reached: one line each, never inconclusive by itself."""
        return [f"{point_name(op, command)} ({why})" for op, command in
                self._unreached_aims(self.exercised) if (why := self._optional(op, command))]

    def _unreached_aims(self, exercised: Exercised) -> list[tuple[str, str]]:
        """The (operation, command) points the audit aimed at that no client reached: those
        of the campaigns that ran, and those of the campaigns that come first but had no time
        (``not_fitted``): a pause before each command the lock sends is what the audit
        plans, and one no campaign made was not tested, whatever the budget."""
        reached = {**exercised.pause_points, **exercised.crashes}
        aims = dict.fromkeys([*(aim for s in self.trials if (aim := s.trial.aim())),
                              *self._cut_aims])
        return [(op, command) for op, command in aims if not reached.get(point_name(op, command))]

    @property
    def _cut_aims(self) -> list[tuple[str, str]]:
        """The points of campaigns that come first and had no time, that no campaign that
        ran aimed at."""
        ran = {s.trial.aim() for s in self.trials}
        return [aim for trial in self.not_fitted
                if trial.required and (aim := trial.aim()) and aim not in ran]

    def _optional(self, op: str, command: str) -> str | None:
        """Why the point before ``command`` in ``op`` need not be reached
        (``Learned.optional``); None when it must, or when the user aimed at it by name."""
        named = {(str(overrides.get("op")), str(overrides["command"]))
                 for _, overrides in self.plan.tested() if "command" in overrides}
        if self.learned is None or (op, command) in named:
            return None
        return self.learned.optional(op, command)

    @property
    def skipped_faults(self) -> list[str]:
        """The tested faults that only campaigns skipped after a hard violation would have
        injected, in plan order."""
        ran = {name for s in self.trials for name, _ in s.trial.faults}
        return list(dict.fromkeys(name for trial in self.skipped for name, _ in trial.faults
                                  if name not in ran))

    def _unreached(self, op: str, command: str) -> str:
        """Why no client stopped or crashed before ``command`` in ``op``, by how the warm-up
        saw the lock send it: a point the user aimed at a command the lock never sent said
        "this lock sends it" (``--faults client-pause-at:command=HGET`` on ``lua``)."""
        said = f"no client ever stopped or crashed before {point_name(op, command)}"
        if (op, command) in self._cut_aims:
            return f"{said}: {self._no_time}"
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
        declared, asked = self.learned.declared, [s.trial for s in self.trials]
        unused = [
            (declared.extend and any(trial.extend for trial in asked) and not exercised.extends_ok,
             "extend", "the lock can extend, but no extend returned a lease in any campaign"),
            (declared.renews and not exercised.renewals, "renewals",
             "the lock renews in the background, but no renewal was recorded in any campaign"),
            (declared.reentrant and any(trial.nest_depth > 1 for trial in asked)
             and not exercised.nested_grants, "reentrancy",
             "the lock let its holder in during the warm-up, but no nested acquire was granted "
             "in any campaign"),
        ]
        return [(capability, why) for missed, capability, why in unused if missed]

    @property
    def coverage(self) -> dict[str, FaultCoverage]:
        """Each fault's coverage, summed over the campaigns."""
        total: dict[str, FaultCoverage] = {}
        for s in self.trials:
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
        for s in self.trials:
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
        if self.warm_up is not None and self.warm_up.outcome.verdict.hard_violations:
            first = self.warm_up.outcome.verdict.first_hard_violation_s or 0.0
            return self.warm_up.started_s + first
        for s in self.trials:
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


