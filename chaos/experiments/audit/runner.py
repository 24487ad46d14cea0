"""Running an audit: the warm-up, the plan's campaigns within the budget, again those that missed,
then explore; then its record and pages.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from chaos.campaign import HISTORY, choose_layout, stamped_path
from chaos.experiments.audit.judge import AuditResult, TrialResult
from chaos.experiments.audit.plan import AuditPlan, Trial, fitted
from chaos.experiments.audit.record import record
from chaos.experiments.audit.trials import AGAIN_ROUNDS, CELL_OVERHEAD_S, again_trials, plan_trials
from chaos.experiments.execute import run_campaign
from chaos.experiments.surface import (
    learn,
)
from chaos.explore import explore
from chaos.explore.explorer import MAX_EXAMPLES
from chaos.report.audit_page import (
    save_audit,
    write_audit_reports,
)

RUNS = "runs"


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
    trials, cell_s = plan_trials(plan, result.learned)
    result.required = sum(trial.required for trial in trials)

    def broke() -> bool:
        return not plan.full and any(v.hard_violations for _, v, _ in result.verdicts)

    def run_trial(index: int, trial: Trial, of: int) -> None:
        say(f"campaign {index + 1}/{of}: {trial.name}")
        campaign = plan.trial_campaign(index, trial, cell_s)
        at = time.monotonic() - started
        result.trials.append(TrialResult(trial, run_campaign(campaign, directory / RUNS), at))

    for index, trial in enumerate(trials):
        if broke() or (not trial.required and time.monotonic() + CELL_OVERHEAD_S > deadline):
            result.skipped = trials[index:]
            break
        run_trial(index, trial, len(trials))
    for round_ in range(AGAIN_ROUNDS):
        for trial in again_trials(trials, {what for what, _ in result.untested}, round_):
            if broke():
                break
            run_trial(len(result.trials), trial, len(result.trials) + 1)
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


