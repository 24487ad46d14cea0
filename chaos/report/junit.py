"""JUnit XML, the format every CI service shows as test results.

A run is one test case, ``lock × faults``; a comparison is one test case per cell. A case
fails when its verdict reaches the run's ``--fail-on`` threshold, or is inconclusive (unless
the run allowed it), and the failure carries the checker's explanations (or why the run
tested nothing), so the CI page says *why* without opening the run directory.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from chaos.checker import fails
from chaos.checker.verdict import EXIT_INCONCLUSIVE, exit_status, reaches
from chaos.report.rundir import RunRecord
from chaos.report.summary import coverage_line, exercised_line, lock_error_line

JUNIT = "junit.xml"
MESSAGE_CHARS = 500  # the one-line failure message; the full text goes in the body


@dataclass(frozen=True)
class Case:
    """One test case: failed when ``failure`` is set, skipped when ``skipped`` is."""

    name: str
    classname: str
    time_s: float = 0.0
    failure: tuple[str, str] | None = None  # (type, text): the text's first line is the message
    skipped: str | None = None
    output: str = ""


def run_case(run: RunRecord) -> Case:
    """The test case of one run: failed by every violation at or above its ``fail_on``."""
    verdict = run.verdict
    failing = [v.explanation for v in verdict.violations
               if reaches(v.kind, run.fail_on, wedged=v.wedged)]
    others = [v.explanation for v in verdict.violations
              if not reaches(v.kind, run.fail_on, wedged=v.wedged)]
    summary = (
        f"verdict {verdict.verdict}: hard {verdict.hard_violations}, soft "
        f"{verdict.soft_violations}, liveness {verdict.liveness_violations}, lost writes "
        f"{verdict.lost_writes}; run directory {run.run_dir}"
    )
    failure = None
    if fails(verdict, run.fail_on):
        failure = (f"{verdict.verdict} (wedged for good)" if verdict.wedged else verdict.verdict,
                   "\n".join(failing))
    elif exit_status(verdict, run.fail_on, allow_inconclusive=run.allow_inconclusive
                     ) == EXIT_INCONCLUSIVE:
        failure = (verdict.verdict, "\n".join(verdict.inconclusive_reasons))
    bugs = [f"bug in the lock: {lock_error_line(errors)}\n{errors.traceback or ''}"
            for errors in verdict.lock_errors]
    return Case(
        name=f"{run.lock} × {run.faults}",
        classname=f"lockchaos.{run.lock}",
        time_s=verdict.duration_s,
        failure=failure,
        output="\n".join([
            summary,
            *([f"exercised: {line}"] if (line := exercised_line(verdict)) else []),
            *(f"fault {coverage_line(name, entry)}" for name, entry in verdict.coverage.items()),
            *bugs, *others, *(f"note: {n}" for n in verdict.notes),
        ]),
    )


def run_properties(run: RunRecord) -> dict[str, str]:
    """What a CI page shows next to the run's suite: how to reproduce it."""
    return {"lock": run.lock, "faults": run.faults, "seed": str(run.seed),
            "fail_on": run.fail_on, "verdict": run.verdict.verdict, "run_dir": str(run.run_dir)}


def write_junit(
    path: Path, suite: str, cases: Iterable[Case], properties: dict[str, str] | None = None
) -> None:
    """Write ``cases`` as one test suite named ``suite`` with the suite's ``properties``."""
    cases = list(cases)
    failures = sum(case.failure is not None for case in cases)
    skipped = sum(case.skipped is not None for case in cases)
    total_s = f"{sum(case.time_s for case in cases):.3f}"
    counts = {"tests": str(len(cases)), "failures": str(failures), "errors": "0",
              "skipped": str(skipped), "time": total_s}
    root = ET.Element("testsuites", {"name": "lockchaos", **counts})
    suite_el = ET.SubElement(root, "testsuite", {"name": suite, **counts})
    if properties:
        props = ET.SubElement(suite_el, "properties")
        for name, value in properties.items():
            ET.SubElement(props, "property", {"name": name, "value": value})
    for case in cases:
        case_el = ET.SubElement(
            suite_el, "testcase",
            {"name": case.name, "classname": case.classname, "time": f"{case.time_s:.3f}"},
        )
        if case.failure is not None:
            kind, text = case.failure
            message = text.split("\n", 1)[0][:MESSAGE_CHARS]
            ET.SubElement(case_el, "failure", {"type": kind, "message": message}).text = text
        if case.skipped is not None:
            ET.SubElement(case_el, "skipped", {"message": case.skipped})
        if case.output:
            ET.SubElement(case_el, "system-out").text = case.output
    ET.indent(root)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
