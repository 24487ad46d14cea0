"""What ``audit.json`` keeps of an audit, and the command line that runs it again.
"""

from __future__ import annotations

import shlex

from chaos.experiments.audit.judge import AuditResult
from chaos.experiments.audit.plan import AUDIT_OPTIONS, DEPLOYMENT, AuditPlan
from chaos.explore.fault_steps import BUILT_IN
from chaos.report import REPORT
from chaos.report.audit_page import (
    AuditFile,
    AuditRun,
)


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
            wedged=verdict.wedged,
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
        skipped=[trial.name for trial in result.skipped], examples=result.examples,
        first_hard_s=None if result.first_hard_s is None else round(result.first_hard_s, 3),
        wall_s=round(result.wall_s, 3), replay=replay_command(plan),
        surface=learned.surface if learned else {},
        on_failure=learned.on_failure if learned else {},
        together=learned.together if learned else {},
        declared=learned.declared if learned else None, exercised=result.exercised,
        explore_s=round(sum(explored.elapsed_s for explored in result.explored), 3),
        required=result.required, skipped_faults=result.skipped_faults,
        optional=learned.optional_points() if learned else {},
        unreached_optional=result.unreached_optional,
        not_fitted=[trial.name for trial in result.not_fitted], fits_in_s=result.fits_in_s,
        explore_stopped=result.explore_stopped,
    )  # fmt: skip


def replay_command(plan: AuditPlan) -> str:
    """The ``lockchaos audit`` command line that runs ``plan`` again."""
    given = [name for name in AUDIT_OPTIONS if name not in DEPLOYMENT or name in plan.kept]
    words = ["lockchaos", "audit", *plan.base.options(given), "--budget", f"{plan.budget_s:g}"]
    if plan.selection:
        words += ["--faults", plan.selection]
    if plan.full:
        words.append("--full")
    return shlex.join(words)


def explored_faults(plan: AuditPlan) -> list[str]:
    """What the explore phase steps: the client faults it always explores, and the tested
    faults it can switch on and off."""
    return [*BUILT_IN, *(name for name, _ in plan.stepped())]
