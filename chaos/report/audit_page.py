"""An audit's record and pages: ``audit.json`` (typed, like ``matrix.json``), ``index.html``
linking every run's report, and ``junit.xml`` with one test case per campaign and one for
the explore phase. They are built from ``audit.json`` alone, so ``lockchaos report
AUDIT_DIR`` rebuilds them at any time."""

from __future__ import annotations

from pathlib import Path

import msgspec

from chaos.checker.coverage import FaultCoverage
from chaos.checker.verdict import EXIT_INCONCLUSIVE, INCONCLUSIVE, reaches
from chaos.report.junit import JUNIT, Case, write_junit
from chaos.report.matrix import INDEX
from chaos.report.page import render
from chaos.report.records import load_record, save_record

AUDIT = "audit.json"


class AuditRun(msgspec.Struct, kw_only=True):
    """One run of the audit (a campaign, or the explore program that broke the lock)."""

    name: str  # its faults (and "(extending)"), or "explore"
    verdict: str
    hard_violations: int
    soft_violations: int
    liveness_violations: int
    first_hard_violation_s: float | None
    explanation: str | None  # the first one
    duration_s: float
    report: str  # its report.html, relative to the audit's directory
    wedged: bool = False  # the lock wedged for good (``Verdict.wedged``): fails every gate


class Declared(msgspec.Struct, kw_only=True):
    """What the audit's warm-up found the lock to have (``chaos.experiments.surface``)."""

    extend: bool  # its clients' locks started with an extend
    renews: bool  # it declares background renewals
    reentrant: bool  # a nested acquire by the holder was granted
    fencing: bool  # its leases carry fences
    nodes: int | None  # the masters it ran on


class Exercised(msgspec.Struct, kw_only=True):
    """Per capability, what the audit's runs made the lock do: extends that returned a new
    lease, background renewals, nested acquires granted, and per ``op COMMAND`` how often a
    client stopped (``pause_points``) or crashed (``crashes``) right before it."""

    extends_ok: int = 0
    renewals: int = 0
    nested_grants: int = 0
    pause_points: dict[str, int] = {}
    crashes: dict[str, int] = {}


class AuditFile(msgspec.Struct, kw_only=True):
    """``audit.json``: what was tested, what was assumed away, and what came of it."""

    lock: str
    budget_s: float
    seed: int
    fail_on: str
    verdict: str  # the worst verdict of any run
    failed: bool  # a run's verdict reaches fail_on
    exit_status: int  # the audit's: 0 ok, 1 a violation at or above fail_on, 3 inconclusive
    inconclusive_reasons: list[str]  # why the audit as a whole tested nothing (if it did not)
    coverage: dict[str, FaultCoverage]  # per fault, summed over the campaigns
    tested: list[str]  # faults injected
    explored: list[str]  # faults the explore phase stepped
    assumed_away: list[str]  # catalog faults not injected: what a pass does not vouch for
    runs: list[AuditRun]  # worst first
    skipped: list[str]  # planned campaigns not run (a hard violation ended the audit)
    examples: int  # programs explored
    first_hard_s: float | None  # from the audit's start
    wall_s: float
    replay: str  # the command that runs this audit again
    # Learned by the warm-up: per operation the commands the lock sends, of those the ones it
    # sent only when the operation failed and the ones first sent in one write after another
    # (with that one), and what it has (None: an audit.json written before the warm-up was).
    surface: dict[str, list[str]] = {}
    on_failure: dict[str, list[str]] = {}
    together: dict[str, dict[str, str]] = {}
    declared: Declared | None = None
    exercised: Exercised = msgspec.field(default_factory=Exercised)
    explore_s: float = 0.0  # the explore phase's time (examples / explore_s: programs per s)
    required: int = 0  # campaigns that ran whatever the budget (every tested fault alone…)
    # Per operation, the commands its surface shows that are never a point the audit must
    # reach, and why (connection set-up, a subscription, script loading, sent once); and
    # those of them aimed at and never reached (one line each, not a reason to be
    # inconclusive).
    optional: dict[str, dict[str, str]] = {}
    unreached_optional: list[str] = []
    # Planned campaigns not run because the budget had no time left for them: not tested;
    # and, when some came first, the budget that would have run them (an estimate).
    not_fitted: list[str] = []
    fits_in_s: float | None = None
    # Explorations the machine stopped (a server that did not take a connection in time):
    # one line each; the campaigns' findings stand.
    explore_stopped: list[str] = []
    # Tested faults that only the skipped campaigns would have injected: never tried.
    skipped_faults: list[str] = []


# An audit that took this much more than its budget says why (``overran``).
OVERRUN = 1.1


def overran(audit: AuditFile) -> str | None:
    """Why an audit took well past its budget, if it did: the campaigns that run whatever
    the budget (every tested fault alone, before each command the lock sends, and the first
    capability campaigns; ``chaos.experiments.audit.trials.plan_trials``) did not fit in it, or its
    campaigns outlasted their length (a campaign ends when its clients' operations do: work,
    pauses, acquires that wait out their timeout — ``lua-retry-busy``'s is three times its TTL
    rounded up to whole seconds, 3 s at 200 ms). A CI job's timeout is set from this, not
    from ``--budget``."""
    if audit.wall_s <= audit.budget_s * OVERRUN or not audit.required:
        return None
    return (f"took {audit.wall_s:.0f} s of a {audit.budget_s:.0f} s budget: --budget does not "
            f"cut the {audit.required} campaigns that always run (every tested fault alone, "
            f"before each command the lock sends, and its capabilities), nor a campaign whose "
            f"clients are still working, paused or waiting to acquire when its time is up")


def surface_line(audit: AuditFile) -> str:
    """"acquire SET; extend ZADD (only when it failed: MULTI+ZREM+EXEC)": per operation, the
    commands the lock sends (those first sent in one write joined by ``+``), those it sent
    only when the operation failed last."""
    def sends(op: str, commands: list[str]) -> str:
        followers = audit.together.get(op, {})
        writes: dict[str, list[str]] = {}
        for command in commands:
            writes.setdefault(followers.get(command, command), []).append(command)
        failing = audit.on_failure.get(op, [])
        named = {leader: "+".join(write) for leader, write in writes.items()}
        always = [named[leader] for leader in writes if leader not in failing]
        failed = [named[leader] for leader in writes if leader in failing]
        only = f"(only when it failed: {', '.join(failed)})" if failed else ""
        return " ".join(word for word in (op, ", ".join(always), only) if word)

    return "; ".join(sends(op, commands) for op, commands in audit.surface.items()) or \
        "nothing learned"


def declared_line(declared: Declared) -> str:
    """"extend, reentrant, no renewals, no fencing, 1 node": what the warm-up found."""
    words = [name if getattr(declared, name) else f"no {label}" for name, label in
             (("extend", "extend"), ("renews", "renewals"), ("reentrant", "reentrancy"),
              ("fencing", "fencing"))]
    if declared.nodes is not None:
        words.append(f"{declared.nodes} node{'s' if declared.nodes != 1 else ''}")
    return ", ".join(words)


def exercised_line(exercised: Exercised) -> str:
    """"12 extends ok, 0 renewals, 3 nested grants; stopped before release EVAL 3×; crashed
    before acquire SET 1×": what the campaigns made each capability do."""
    parts = [f"{exercised.extends_ok} extends ok, {exercised.renewals} renewals, "
             f"{exercised.nested_grants} nested grants"]
    for verb, points in (("stopped", exercised.pause_points), ("crashed", exercised.crashes)):
        if points:
            parts.append(f"{verb} before " + ", ".join(f"{name} {count}×"
                                                       for name, count in points.items()))
    return "; ".join(parts)


def save_audit(directory: Path, audit: AuditFile) -> None:
    save_record(directory / AUDIT, audit)


def load_audit(path: Path) -> AuditFile:
    """``audit.json`` read back; ``UsageError`` (one line) when it is not one."""
    return load_record(path, AuditFile, "audit")


def write_audit_reports(directory: Path, audit: AuditFile) -> Path:
    """``index.html`` and ``junit.xml`` of the audit in ``directory``; returns the index."""
    index = directory / INDEX
    render("audit.html.j2", index, audit=audit,
           surface=surface_line(audit),
           declared=declared_line(audit.declared) if audit.declared else None,
           exercised=exercised_line(audit.exercised), overran=overran(audit))
    cases, classname = [], f"lockchaos.audit.{audit.lock}"
    for run in audit.runs:
        failure = None
        if reaches(run.verdict, audit.fail_on, wedged=run.wedged):
            failure = (run.verdict, f"{run.explanation or run.verdict}\nreplay: {audit.replay}")
        cases.append(Case(
            name=f"{audit.lock} × {run.name}", classname=classname,
            time_s=run.duration_s, failure=failure,
            output=f"verdict {run.verdict}: hard {run.hard_violations}, soft "
                   f"{run.soft_violations}, liveness {run.liveness_violations}; {run.report}",
        ))  # fmt: skip
    if not any(run.name == "explore" for run in audit.runs):
        cases.append(Case(
            name=f"{audit.lock} × explore", classname=classname,
            output=f"{audit.examples} programs explored, none broke the lock",
            skipped=None if audit.examples else (
                "not run: the audit had already found a hard violation"
                if audit.first_hard_s is not None else "no time was left to explore"
            ),
        ))  # fmt: skip
    cases += [Case(name=f"{audit.lock} × {name}", classname=classname,
                   skipped="not run: the audit had already found a hard violation")
              for name in audit.skipped]
    if audit.exit_status == EXIT_INCONCLUSIVE:  # no run failed, and the audit did not pass
        cases.append(Case(
            name=f"{audit.lock} × what the audit asked for", classname=classname,
            failure=(INCONCLUSIVE, "\n".join([*audit.inconclusive_reasons,
                                              f"replay: {audit.replay}"])),
        ))
    write_junit(directory / JUNIT, f"lockchaos audit {audit.lock}", cases,
                {"lock": audit.lock, "seed": str(audit.seed), "verdict": audit.verdict,
                 "assumed_away": ",".join(audit.assumed_away), "replay": audit.replay})
    return index
