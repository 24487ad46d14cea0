"""Running an audit: the warm-up, the plan's campaigns within the budget, again those that missed,
then explore; then its record and pages.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import redis
from hypothesis.errors import Flaky

from chaos.campaign import HISTORY, Campaign, choose_layout, stamped_path
from chaos.experiments.audit.judge import AuditResult, TrialResult, WarmUp
from chaos.experiments.audit.plan import AuditPlan, Trial, fitted, kept_ttl
from chaos.experiments.audit.record import record
from chaos.experiments.audit.trials import (
    AGAIN_ROUNDS,
    CAMPAIGN_SHARE,
    CELL_OVERHEAD_S,
    LATE_SEED_OFFSET,
    REQUIRED_SHARE,
    again_trials,
    campaign_cost,
    carry_now,
    carrying,
    plan_trials,
)
from chaos.experiments.execute import run_campaign
from chaos.experiments.surface import WARM_UP_TRIES, Learned, learn
from chaos.explore import explore
from chaos.explore.explorer import MAX_EXAMPLES
from chaos.report.audit_page import (
    save_audit,
    write_audit_reports,
)

RUNS = "runs"
# The share of the budget the warm-up may take when it runs again (``warm_up``).
WARM_UP_SHARE = 0.25
# The budget an audit advises when some of its campaigns that come first had no time is a
# multiple of this (``AuditResult.fits_in_s``): an estimate, not a promise to the second.
FITS_STEP_S = 10


Event = Callable[[str], None]
# What stops an exploration without a word about the lock: the servers' or the proxy's
# connections (Hypothesis replays a program that failed so, and calls the replay flaky).
MACHINE_FAILURES = (redis.RedisError, OSError, Flaky)


class Clock:
    """The audit's time: its budget's shares as deadlines, and what a campaign of this lock
    costs beyond its length (``overhead_s``: the mean of every campaign measured so far, the
    warm-up's first, never under ``CELL_OVERHEAD_S``) — a JVM driver's five processes took
    seconds to start, each campaign, and an audit planned on 0.8 s took 144 s of 60."""

    def __init__(self, budget_s: float) -> None:
        self.started = time.monotonic()
        self.budget_s = budget_s
        self._extra: list[float] = []

    def at(self, share: float) -> float:
        """The moment ``share`` of the budget is spent."""
        return self.started + share * self.budget_s

    @property
    def spent_s(self) -> float:
        return time.monotonic() - self.started

    @property
    def overhead_s(self) -> float:
        return max(CELL_OVERHEAD_S, sum(self._extra) / len(self._extra)) if self._extra \
            else CELL_OVERHEAD_S

    def ran(self, campaign: Campaign, took_s: float) -> None:
        """A campaign planned ``campaign.duration_s`` long (its holders working on up to
        their work past it) took ``took_s``."""
        self._extra.append(took_s - campaign.duration_s - campaign.holder_work_ms / 1000)


def warm_up(plan: AuditPlan, runs: Path, clock: Clock | None = None,
            say: Event | None = None) -> tuple[WarmUp, Learned]:
    """The warm-up campaign into ``runs``, and what it taught; run again (the next of
    ``AuditPlan.warm_up_campaign``: twice as long, the next seed) while it saw the lock grant
    or release nothing (``Learned.unseen``: their commands were not learned, and no fault
    would be aimed at them), ``WARM_UP_TRIES`` times in all, each within ``WARM_UP_SHARE`` of
    the budget."""
    clock = clock or Clock(plan.budget_s)
    for tries in range(1, WARM_UP_TRIES + 1):
        warm = plan.warm_up_campaign(tries)
        began = clock.spent_s
        outcome = run_campaign(warm, runs)
        clock.ran(warm, clock.spent_s - began)
        learned = learn(outcome.run_dir / HISTORY, choose_layout(warm).nodes)
        if not learned.unseen or tries == WARM_UP_TRIES:
            break
        again = plan.warm_up_campaign(tries + 1)
        if time.monotonic() + campaign_cost(again, clock.overhead_s) > clock.at(WARM_UP_SHARE):
            break
        if say is not None:
            say(f"warm-up: the lock {learned.unseen} nothing in "
                f"{warm.duration_s:g} s; again, {again.duration_s:g} s long")
    return WarmUp(outcome, began, tries), learned


def run_audit(plan: AuditPlan, out: Path, on_event: Event | None = None) -> AuditResult:
    """Run the audit of ``plan`` into a new directory under ``out``; its budget counts from
    here (a driver's ``describe``, in ``validate``, starts a process too)."""
    clock = Clock(plan.budget_s)
    plan = kept_ttl(plan)
    plan.validate()
    say = on_event or (lambda _: None)
    directory = stamped_path(out, f"audit-{plan.base.lock}".replace(":", "_").replace("/", "_"))
    directory.mkdir(parents=True)
    result = AuditResult(plan, directory)

    say("warm-up: learning the lock's commands and capabilities")
    result.warm_up, learned = warm_up(plan, directory / RUNS, clock, say)
    result.learned = learned
    plan = result.plan = fitted(plan, learned)
    trials, cell_s = plan_trials(plan, learned, overhead_s=clock.overhead_s,
                                 spent_s=clock.spent_s)
    result.required = sum(trial.required for trial in trials)

    short_s = 0.0  # what the campaigns that come first and had no time would have cost

    def broke() -> bool:
        return not plan.full and any(v.hard_violations for _, v, _ in result.verdicts)

    def run_trial(index: int, trial: Trial, of: int) -> None:
        """Run ``trial`` if it fits before its deadline (those that come first, and runs
        again, ``REQUIRED_SHARE`` of the budget; the others ``CAMPAIGN_SHARE``; less one
        campaign's overhead, the explore phase's start); else it is not tested, listed so."""
        nonlocal short_s
        campaign = plan.trial_campaign(index, trial, cell_s)
        share = REQUIRED_SHARE if trial.required or trial.again else CAMPAIGN_SHARE
        end = clock.at(share) - clock.overhead_s
        cost = campaign_cost(campaign, clock.overhead_s)
        if time.monotonic() + cost > end:
            result.not_fitted.append(trial)
            if trial.required:
                short_s += cost
            return
        say(f"campaign {index + 1}/{of}: {trial.name}")
        at = clock.spent_s
        result.trials.append(TrialResult(trial, run_campaign(campaign, directory / RUNS), at))
        clock.ran(campaign, clock.spent_s - at)

    carried: set[str] = set()

    def carry_unfired(rest: list[Trial]) -> None:
        """When a tested fault no campaign fired yet would not be reached before their
        deadline by the campaigns left that come first (``rest``) — they cost more than the
        warm-up showed, on a loaded machine — every such fault is carried by one campaign
        now, sized to the time left (once per fault): the last singles were cut, and the
        audit said their faults "never fired in any run". Never ahead of a capability
        campaign that comes first (``carry_now``)."""
        covered = result.coverage
        unfired = {name for name, _ in plan.tested() if name not in carried
                   and (name not in covered or not covered[name].fired)}
        end = clock.at(REQUIRED_SHARE) - clock.overhead_s
        costs = [campaign_cost(plan.trial_campaign(index, trial, cell_s), clock.overhead_s)
                 for index, trial in enumerate(rest)]
        if carry_now(rest, unfired, costs, time.monotonic(), end, plan.base.ttl_ms):
            late = [fault for fault in plan.tested() if fault[0] in unfired]
            carried.update(name for name, _ in late)
            room = end - clock.overhead_s - time.monotonic()
            trial = carrying(plan, learned, late, LATE_SEED_OFFSET, cell_s, room)
            run_trial(len(result.trials), replace(trial, required=True), len(trials))

    for index, trial in enumerate(trials):
        if broke():
            result.skipped = trials[index:]
            break
        carry_unfired(trials[index:])
        run_trial(index, trial, len(trials))
    for round_ in range(AGAIN_ROUNDS):
        for trial in again_trials(trials, {what for what, _ in result.untested}, round_):
            if broke():
                break
            run_trial(len(result.trials), trial, len(result.trials) + 1)
    if short_s:
        result.fits_in_s = FITS_STEP_S * math.ceil(
            (clock.spent_s + short_s) / REQUIRED_SHARE / FITS_STEP_S)
    if not broke():
        # Each exploration on one topology until its share of the budget is spent, as
        # `lockchaos explore` runs (not a topology and a new seed, Hypothesis starting over
        # from its smallest programs, every 4 programs); no program starts later than a
        # campaign's overhead before the budget's end (its clients start, it is checked).
        campaigns = plan.explore_campaigns()  # shared locks too: explore steps their asks
        deadline = clock.at(1.0) - clock.overhead_s
        for index, campaign in enumerate(campaigns):
            left = deadline - time.monotonic()
            if broke() or left < CELL_OVERHEAD_S:
                break
            say(f"exploring with {', '.join(campaign.fault_names) or 'client pauses'}")
            until = time.monotonic() + left / (len(campaigns) - index)
            began = clock.spent_s
            try:
                result.explored.append(explore(campaign, max_examples=MAX_EXAMPLES,
                                               out=directory / RUNS, until=until))
                result.explored_at_s.append(began)
            except MACHINE_FAILURES as exc:
                # A server of the exploration's topology that did not take a connection in
                # time, on a loaded machine: the machine's failure, not the lock's. The
                # audit lost its last minutes to it (a traceback, twice in the corpus).
                result.explore_stopped.append(f"{type(exc).__name__}: {exc}".splitlines()[0])
    result.wall_s = clock.spent_s
    audit = record(result)
    save_audit(directory, audit)
    write_audit_reports(directory, audit)
    return result
