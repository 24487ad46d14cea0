"""A comparison's files: ``matrix.json`` (its shape, typed, like the checker's ``Verdict``),
and the pages built from it alone: ``index.html`` and ``junit.xml`` (one test case per cell).
``index.html`` is the lock × fault matrix for ``compare``, where rows and columns are the
user's choice, or, for the demo, the truth table's claims one per row (``MatrixFile.page``);
every cell links to its run's report.

``chaos.experiments.compare`` writes ``matrix.json`` with ``save_matrix`` after every cell; the
pages, ``lockchaos compare``'s table and ``lockchaos report COMPARE_DIR`` read it back with
``load_matrix`` into the same structs, so what the comparison saw and what a rebuilt page
shows cannot drift apart (the rebuilt ``index.html`` is byte-identical).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import msgspec

from chaos.checker import Verdict
from chaos.checker.verdict import (
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    EXIT_VIOLATION,
    INCONCLUSIVE,
    reaches,
)
from chaos.report.junit import JUNIT, Case, write_junit
from chaos.report.page import render
from chaos.report.records import load_record, save_record
from chaos.report.style import reasons_label

INDEX = "index.html"
MATRIX = "matrix.json"
EXPLANATIONS_KEPT = 3  # per run in matrix.json; verdict.json in the run directory has all


class RunEntry(msgspec.Struct, kw_only=True):
    """One run of a cell: its verdict's numbers (``verdict.json`` without the violations and
    the lost write ids, which can be long, and with only the first explanations) and where
    its run directory is. Fields named as in ``Verdict`` mean what they mean there."""

    seed: int
    verdict: str
    lock: str | None
    ttl_ms: float | None
    duration_s: float  # how long the run lasted (the cell's ``duration_s`` is its cap)
    hard_violations: int
    soft_violations: int
    liveness_violations: int
    lost_writes: int | None
    stale_writes_rejected: int
    first_hard_violation_s: float | None
    explanations: list[str]
    counts: dict[str, int]
    notes: list[str]
    run_dir: str  # relative to the comparison's directory
    report: str  # the run's report.html, relative to the comparison's directory
    wall_s: float
    truth_problem: str | None = None  # how the verdict departs from the truth table's claim
    # Why it tested nothing, or what it asked for and never exercised (``Verdict``'s).
    inconclusive_reasons: list[str] = []
    wedged: bool = False  # the lock wedged for good (``Verdict.wedged``): fails every gate

    @classmethod
    def of(cls, verdict: Verdict, *, seed: int, run_dir: str, wall_s: float,
           truth_problem: str | None) -> RunEntry:
        """What the matrix keeps of a run whose run directory (relative) is ``run_dir``."""
        return cls(
            seed=seed, verdict=verdict.verdict, lock=verdict.lock, ttl_ms=verdict.ttl_ms,
            duration_s=verdict.duration_s, hard_violations=verdict.hard_violations,
            soft_violations=verdict.soft_violations,
            liveness_violations=verdict.liveness_violations, lost_writes=verdict.lost_writes,
            stale_writes_rejected=verdict.stale_writes_rejected,
            first_hard_violation_s=verdict.first_hard_violation_s,
            explanations=verdict.explanations[:EXPLANATIONS_KEPT], counts=verdict.counts,
            notes=verdict.notes, run_dir=run_dir, report=f"{run_dir}/report.html",
            # A plain str: the truth table's ``Unproven`` (a str subclass) does not encode
            wall_s=round(wall_s, 3), truth_problem=None if truth_problem is None
            else str(truth_problem),
            inconclusive_reasons=verdict.inconclusive_reasons, wedged=verdict.wedged,
        )  # fmt: skip


class Claim(msgspec.Struct, kw_only=True):
    """The truth table's claim about a cell (``chaos.experiments.truth_table``) and how many of the
    cell's runs bore it out."""

    claim: str  # the claim in the table's words, e.g. "soft only, lost writes"
    source: str  # who makes it: a seed post, Kleppmann 2016, the Redis docs
    matched: int  # runs whose verdict was as claimed


class CellEntry(msgspec.Struct, kw_only=True):
    """One lock × fault column, over its seeds. ``status`` is ``pending`` (not run yet),
    ``done``, or ``n/a`` (the lock and the faults cannot run together: ``reason`` says
    why). The numbers sum the runs; ``verdict``, ``report`` and ``why`` are the worst run's."""

    lock: str
    faults: str  # as ``--faults`` takes them: ``a,b`` for the column ``a+b``
    label: str  # the column's heading
    duration_s: float  # the most a run may last
    stop_on: str | None  # the violation kind that ends a run early (None: none does)
    status: Literal["pending", "done", "n/a"]
    reason: str | None
    verdict: str | None
    hard: int
    soft: int
    liveness: int
    lost_writes: int | None  # None when no run could judge lost writes
    first_hard_s: float | None  # the earliest first hard violation over the runs
    hard_runs: int  # runs with a hard violation
    report: str | None
    why: str | None  # the worst run's first explanation, or why it tested nothing
    runs: list[RunEntry]
    expected: Claim | None  # None: the truth table has no claim about this cell
    # The server the cell ran on (``compare --servers``); also in its row: ``lua @ redis-8.0``.
    server: str | None = None
    # What a run of it did not test (an inconclusive run's reason, or a fault that had no
    # effect beside violations below the gate: "client-pause-at:command=DEL never reached:
    # this lock's release sends EVAL; try command=EVAL"); None: each run tested all it asked.
    untested: str | None = None

    @property
    def name(self) -> str:
        return f"{self.lock} × {self.label}"

    @property
    def failed(self) -> bool:
        """A run reached the kind the cell looks for (``stop_on``; hard when it runs on)."""
        return any(reaches(run.verdict, self.stop_on or "hard") for run in self.runs)

    @property
    def untested_label(self) -> str:
        """What ``untested`` is called beside the verdict (``reasons_label``)."""
        return reasons_label(self.verdict or INCONCLUSIVE)

    @property
    def claim_held(self) -> bool | None:
        """Whether every run was as the truth table claims (None: no claim): the ✓/✗ of the
        table, the progress line and index.html."""
        if self.expected is None:
            return None
        return self.expected.matched == len(self.runs)


class Column(msgspec.Struct, kw_only=True):
    faults: str  # as ``--faults`` takes them
    label: str


Page = Literal["matrix", "claims"]
PAGES: dict[str, str] = {"matrix": "index.html.j2", "claims": "claims.html.j2"}


class MatrixFile(msgspec.Struct, kw_only=True):
    """``matrix.json``: every planned cell, in plan order, rows ``locks`` by ``columns``."""

    title: str
    seeds: int  # each cell ran seeds 1…seeds
    locks: list[str]
    columns: list[Column]
    started: str  # local time, YYYY-mm-dd HH:MM:SS
    wall_s: float
    cells: list[CellEntry]
    shard: list[int] | None = None  # [K, N]: shard K of N (``lockchaos merge`` joins them)
    # What index.html shows: the lock × fault matrix (``compare``), or one row per claim of
    # the truth table and per unclaimed lock (the demo, whose cells are those claims).
    page: Page = "matrix"


def save_matrix(directory: Path, matrix: MatrixFile) -> Path:
    """Write ``matrix.json`` into ``directory`` (indented: people read it too)."""
    return save_record(directory / MATRIX, matrix)


def load_matrix(path: Path) -> MatrixFile:
    """``matrix.json`` read back; ``UsageError`` (one line) when it is not one."""
    return load_record(path, MatrixFile, "matrix")


def write_compare_reports(directory: Path, matrix: MatrixFile) -> Path:
    """Write ``index.html`` (the page ``matrix.page`` says) and ``junit.xml`` for ``matrix``
    into ``directory``; returns the index's path."""
    grid = {(cell.lock, cell.faults): cell for cell in matrix.cells}
    index = directory / INDEX
    render(PAGES[matrix.page], index, matrix=matrix, grid=grid)
    write_junit(directory / JUNIT, matrix.title, [_case(cell) for cell in matrix.cells],
                {"seeds": str(matrix.seeds)})
    return index


def exit_status(matrix: MatrixFile, *, allow_inconclusive: bool = False) -> int:
    """``lockchaos compare``'s: 1 when a cell found what it looks for (a hard violation,
    unless ``stop_on`` says another kind), else 3 when a cell did not test all it asked for
    (``untested``; unless allowed), else 0 — as its junit.xml's failures say."""
    done = [cell for cell in matrix.cells if cell.status == "done"]
    if any(cell.failed for cell in done):
        return EXIT_VIOLATION
    if any(cell.untested for cell in done) and not allow_inconclusive:
        return EXIT_INCONCLUSIVE
    return EXIT_OK


def _case(cell: CellEntry) -> Case:
    classname = f"lockchaos.{cell.lock}"
    time_s = sum(run.duration_s for run in cell.runs)
    if cell.status != "done":
        return Case(cell.name, classname, skipped=cell.reason or "not run")
    failed = [run for run in cell.runs
              if reaches(run.verdict, cell.stop_on or "hard", wedged=run.wedged)]
    output = "\n".join(
        f"seed {run.seed}: {run.verdict} (hard {run.hard_violations}, soft "
        f"{run.soft_violations}, lost writes {run.lost_writes}) in {run.run_dir}"
        + "".join(f"\n  {reasons_label(run.verdict)}: {why}" for why in run.inconclusive_reasons)
        for run in cell.runs
    )
    failure = None
    if failed:
        text = "\n".join(f"seed {run.seed}: {why}" for run in failed
                         for why in run.explanations[:1])
        failure = (cell.verdict or "", text)  # a done cell has runs, so a verdict
    elif cell.untested:  # a cell that tested nothing must not pass a CI step
        failure = (INCONCLUSIVE, "\n".join(f"seed {run.seed}: {why}" for run in cell.runs
                                           for why in run.inconclusive_reasons[:1]))
    return Case(cell.name, classname, time_s, failure, output=output)
