"""An audit's answer in words, first: whether the lock passes, fails or was not tested, the
worst verdict and what it means, why — and the command that runs the audit again. The
terminal summary of ``lockchaos audit`` leads with it and the pytest plugin's audit fails a
test with it; both read it from ``audit.json`` alone.
"""

from __future__ import annotations

from rich.markup import escape

from chaos.checker.verdict import EXIT_INCONCLUSIVE, EXIT_VIOLATION, INCONCLUSIVE
from chaos.report.audit_page import AuditFile
from chaos.report.style import LOOKS, marked, reasons_label

REPLAY = "replay: "  # before the command that runs the audit again


def outcome(audit: AuditFile) -> str:
    """``passes``, ``fails`` or ``did not test``: what its exit status says of the lock."""
    return {EXIT_VIOLATION: "fails", EXIT_INCONCLUSIVE: "did not test"}.get(
        audit.exit_status, "passes")


def answer(audit: AuditFile) -> list[str]:
    """The answer as rich markup lines (the replay command apart: ``REPLAY``): the outcome,
    the worst verdict with what it means and its first explanation, what a hard violation
    left untried or the budget had no time for, in one line, and what the audit asked for
    and never exercised."""
    said = outcome(audit)
    style = {"fails": LOOKS["hard"].terminal, "did not test": LOOKS[INCONCLUSIVE].terminal}.get(
        said, LOOKS["ok"].terminal)
    ran = (f"{_count(len(audit.runs), 'run')} and {_count(audit.examples, 'program')} in "
           f"{audit.wall_s:.0f} s")
    lines = [f"audit: {audit.lock} [{style}]{said}[/] (--fail-on {audit.fail_on}; {ran})",
             f"  worst: {marked(audit.verdict)} — {LOOKS[audit.verdict].meaning}"]
    worst = audit.runs[0] if audit.runs else None
    if worst is not None and worst.verdict == audit.verdict and worst.explanation:
        lines.append(f"  {escape(worst.name)}: {escape(worst.explanation)}")
    if audit.skipped:
        lines.append("  " + escape(skipped_line(audit)))
    elif audit.not_fitted:
        cut = len(dict.fromkeys(audit.not_fitted))
        lines.append(f"  no time for {_count(cut, 'planned campaign')} in the "
                     f"{audit.budget_s:g} s budget ({fits(audit.fits_in_s)} would run them)")
    label = reasons_label(audit.verdict)
    lines += [f"  [{LOOKS[INCONCLUSIVE].terminal}]{label}[/]: {escape(reason)}"
              for reason in audit.inconclusive_reasons]
    return lines


def fits(fits_in_s: float | None) -> str:
    """"--budget 90" (``AuditFile.fits_in_s``: the budget that would have run what had no
    time), or "a longer --budget" when the audit could not say."""
    return "a longer --budget" if fits_in_s is None else f"--budget {fits_in_s:g}"


def skipped_line(audit: AuditFile) -> str:
    """"skipped after the hard violation (--full runs them): 11 campaigns and explore; never
    injected: client-crash, slow-work": one line, whatever the count (junit.xml has a
    skipped case for each)."""
    never = (f"; never injected: {', '.join(audit.skipped_faults)}"
             if audit.skipped_faults else "")
    return (f"skipped after the hard violation (--full runs them): "
            f"{_count(len(audit.skipped), 'campaign')} and explore{never}")


def _count(number: int, thing: str) -> str:
    return f"{number} {thing}{'s' * (number != 1)}"
