"""``lockchaos audit``: the command for a lock nobody has told lockchaos anything about.

A warm-up that learns the lock's commands and capabilities, campaigns of every fault a lock
must survive (alone — before each command learned —, extending, nested, in pairs), then
``explore``, within ``--budget`` seconds; one verdict, one page linking every run, one
junit.xml. Its terminal summary leads with the answer (``chaos.report.audit_answer``):
passes, fails or did not test, the worst verdict and what it means, and the command that
runs it again. Exit status as ``run``: 0 nothing at or above ``--fail-on``, 1 a violation,
2 bad input, 3 inconclusive (the audit did not exercise the lock, or did not test all it
planned).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from chaos.campaign import DEFAULTS, Campaign
from chaos.commands.campaign_options import As, campaign_options
from chaos.experiments.audit import (
    AUDIT_OPTIONS,
    DEPLOYMENT,
    EXPLORE_CLIENTS,
    MUST_SURVIVE,
    AuditPlan,
    run_audit,
)
from chaos.explore.explorer import EXPLORE_TTL_MS
from chaos.report.audit_answer import REPLAY, answer
from chaos.report.audit_page import (
    AUDIT,
    AuditFile,
    declared_line,
    exercised_line,
    load_audit,
    overran,
    surface_line,
)
from chaos.report.matrix import INDEX
from chaos.report.style import marked
from chaos.report.summary import INDENT, coverage_line
from chaos.report.terminal import command, say, terminal
from chaos.signals import sigterm_unwinds

SHOWN_RUNS = 5  # the worst runs whose findings the summary lists (the answer has the first)


# Unset (None), the audit chooses per phase (``DEPLOYMENT``); given, the value every phase runs.
@campaign_options(
    *AUDIT_OPTIONS,
    allow_inconclusive=As(help="exit 0, not 3, when the audit did not exercise the lock"),
    clients=As(None, f"client processes (default: {DEFAULTS['clients']}; explore: "
                     f"{EXPLORE_CLIENTS})"),
    ttl_ms=As(None, f"the lock's TTL (default: {DEFAULTS['ttl_ms']} ms; explore: "
                    f"{EXPLORE_TTL_MS} ms)"),
)
def audit(
    budget: float = typer.Option(60.0, "--budget", help="seconds to spend, in all"),
    selection: str = typer.Option(
        "", "--faults",
        help=f"faults to inject instead of the defaults ({', '.join(MUST_SURVIVE)}); "
             "+name adds one to them, e.g. +crash-restart-delayed",
    ),
    full: bool = typer.Option(
        False, "--full", help="spend the whole budget even after a hard violation"
    ),
    out: Path = typer.Option(Path("reports"), "--out", help="where the audit directory goes"),
    json_output: bool = typer.Option(False, "--json", help="print audit.json only"),
    **knobs: Any,
) -> None:
    """Audit LOCK against every fault it must survive within BUDGET seconds; exit 0 when
    nothing at or above --fail-on was found, 1 when something was, 2 on bad input, 3 when it
    did not test the lock, or not all it planned (--allow-inconclusive makes it 0)."""
    told = frozenset(name for name in DEPLOYMENT if knobs[name] is not None)
    base = Campaign.from_options(**{name: value for name, value in knobs.items()
                                    if name in told or name not in DEPLOYMENT})
    plan = AuditPlan(base, budget_s=budget, selection=selection, full=full, told=told)
    lock = plan.base.lock
    err = Console(stderr=True)
    with sigterm_unwinds(), err.status(f"auditing {lock} for up to {budget:g} s…") as status:
        result = run_audit(plan, out, on_event=lambda what: status.update(f"{lock}: {what}"))
    record = load_audit(result.directory / AUDIT)
    if json_output:
        print(json.dumps({**json.loads((result.directory / AUDIT).read_text()),
                          "audit_dir": str(result.directory)}))
    else:
        print_audit(record, result.directory)
    raise typer.Exit(record.exit_status)


def print_audit(record: AuditFile, directory: Path) -> None:
    """The answer first (``chaos.report.audit_answer``) and the command that runs the audit
    again, then what was tested and learned, the other runs' findings, and last the path of
    its index.html."""
    console = terminal()
    for line in answer(record):
        say(console, line, INDENT * 2)
    command(console, INDENT + REPLAY, record.replay)
    details = [
        f"runs: {directory}",
        f"tested: {', '.join(record.tested)}",
        f"assumed away: {', '.join(record.assumed_away) or 'nothing'}",
        f"surface: {surface_line(record)}",
        *([f"has: {declared_line(record.declared)}"] if record.declared is not None else []),
        f"exercised: {exercised_line(record.exercised)}",
        "coverage: " + "; ".join(coverage_line(name, entry)
                                 for name, entry in record.coverage.items()),
    ]
    if record.first_hard_s is not None:
        details.append(f"first hard violation {record.first_hard_s:.1f} s into the audit")
    if (why := overran(record)) is not None:
        details.append(f"over budget: {why}")
    details += [f"explore stopped early: {why}" for why in record.explore_stopped]
    for line in details:
        say(console, Text(INDENT + line), INDENT * 2)
    for run in record.runs[1:SHOWN_RUNS]:
        if run.verdict != "ok":
            say(console, f"{INDENT}• {marked(run.verdict)} {escape(run.name)}: "
                         f"{escape(run.explanation or '')}", INDENT * 2)
    print((directory / INDEX).resolve())
