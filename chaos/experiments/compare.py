"""A comparison: locks × faults, each cell a campaign on its own fresh topology.

The product's main job: put lock variants side by side under the same seeded faults and say
which broke, how badly, and how fast. Every cell runs
``chaos.experiments.execute.run_campaign`` once per seed (so every cell has a full run
directory with its own report), and the matrix is saved as ``matrix.json`` (typed:
``chaos.report.matrix.MatrixFile``) after each cell, so an interrupted comparison still
leaves what it found. A lock and a fault that cannot run together (a Sentinel failover
against Redlock's independent masters) are a cell marked "n/a" with the reason, not an
error.

Where the truth table (``chaos.experiments.truth_table``) has a claim about a cell, the cell
records it and whether each run matched it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from chaos.campaign import Campaign, stamped_path
from chaos.checker.verdict import RANK
from chaos.errors import UsageError
from chaos.experiments.execute import Outcome, run_campaign
from chaos.experiments.truth_table import CELLS, DRIVER_CELLS, SERVER_CELLS, Cell
from chaos.lockspec import resolve
from chaos.report.matrix import (
    CellEntry,
    Claim,
    Column,
    MatrixFile,
    Page,
    RunEntry,
    save_matrix,
)

RUNS = "runs"
MAX_CELLS = 400  # a comparison is for reading side by side, not for sweeping


@dataclass(frozen=True)
class CellPlan:
    """One cell to run: a lock, its column (the faults run together in it, as ``--faults``
    takes them: ``a,b`` for the column ``a+b``), how long at most, and the violation kind that
    settles it early (None: run the duration)."""

    lock: str
    column: str
    duration_s: float
    stop_on: str | None = "hard"
    provider: str = "local"
    provider_config: Path | None = None
    # Campaign options of a truth-table cell (``clients``, ``ttl_ms``…): part of the row.
    options: tuple[tuple[str, Any], ...] = ()
    # The server (``--servers``: redis-7.0, redis-8.0, valkey-8.1); None: the provider's
    # default. Part of the row (``lua @ valkey-8.1``): the matrix is lock × faults × server.
    server: str | None = None

    def campaign(self, seed: int) -> Campaign:
        return Campaign.from_options(
            self.lock,
            self.column,
            duration_s=self.duration_s,
            seed=seed,
            stop_on_first=self.stop_on is not None,
            fail_on=self.stop_on or "hard",
            provider=self.provider,
            provider_config=self.provider_config,
            server=self.server,
            **dict(self.options),
        )

    @property
    def row(self) -> str:
        """The row the cell sits in: its lock, with its options if it has any, and its server
        if one was chosen (``lua @ valkey-8.1``)."""
        row = self.lock
        if self.options:
            row += f" ({' '.join(f'{k}={v}' for k, v in self.options)})"
        return row if self.server is None else f"{row} @ {self.server}"

    @property
    def name(self) -> str:
        return f"{self.row} × {column_label(self.column)}"


def column_label(column: str) -> str:
    """A column's heading: its faults joined by ``+`` (a column may combine several)."""
    return " + ".join(part for part in column.split(",") if part) or "no faults"


def plan_matrix(locks: Sequence[str], columns: Sequence[str], duration_s: float,
                stop_on: str | None = "hard", *, provider: str = "local",
                provider_config: Path | None = None,
                servers: Sequence[str | None] = (None,),
                capacity: int | None = None) -> list[CellPlan]:
    """Every lock against every column (``a+b`` in a column: both faults in one run) on
    every server (``servers``; None: the provider's default), each on a fresh topology from
    ``provider``; ``capacity``: the permits of each semaphore among ``locks`` (the others
    keep theirs), ``UsageError`` when none is one."""
    servers = list(dict.fromkeys(servers)) or [None]
    locks = [lock.strip() for lock in locks if lock.strip()]
    columns = [col.strip().replace("+", ",") for col in columns if col.strip()]
    if not locks:
        raise UsageError("--locks is empty: give at least one lock, e.g. --locks lua,redlock")
    if not columns:
        raise UsageError("--faults is empty: give at least one fault, e.g. --faults slow-work")
    if len(locks) * len(columns) * len(servers) > MAX_CELLS:
        raise UsageError(f"{len(locks)} locks × {len(columns)} faults × {len(servers)} servers "
                         f"is more than {MAX_CELLS} cells: compare fewer at a time")
    options: dict[str, tuple[tuple[str, Any], ...]] = {lock: () for lock in locks}
    if capacity is not None:
        own = {lock: permits for lock in locks if (permits := semaphore_permits(lock))}
        if not own:
            raise UsageError(f"--capacity sets a semaphore's permits, and none of "
                             f"{', '.join(locks)} counts permits (lockchaos list: what each "
                             "grants)")
        # Where it is not the lock's own, the row says so: ``lua-semaphore (capacity=5)``.
        options.update({lock: (("capacity", capacity),) for lock, permits in own.items()
                        if permits != capacity})
    return [
        CellPlan(lock, col, duration_s, stop_on, provider, provider_config, options[lock],
                 server=server)
        for lock in locks
        for col in columns
        for server in servers
    ]


def semaphore_permits(lock: str) -> int | None:
    """The permits ``lock`` declares when it is a semaphore (what ``--capacity`` changes);
    None for a mutex, a read-write lock (its readers are unbounded) or a user's lock."""
    info = resolve(lock).info
    return None if info is None or info.mutex else info.capacity


@dataclass
class CellResult:
    """A cell while the comparison runs: its plan, the truth table's claim (with the judge
    that checks it) and the runs so far; ``to_entry`` is what matrix.json keeps of it."""

    plan: CellPlan
    claim: Cell | None  # the truth table's claim about this cell, if it has one
    unavailable: str | None = None  # why the cell cannot run: shown as "n/a"
    runs: list[RunEntry] = field(default_factory=list)

    def worst(self) -> RunEntry | None:
        """The run with the most severe verdict (the earliest seed among equals)."""
        return max(self.runs, key=lambda run: RANK[run.verdict], default=None)

    def to_entry(self) -> CellEntry:
        worst = self.worst()
        firsts = [r.first_hard_violation_s for r in self.runs
                  if r.first_hard_violation_s is not None]
        lost = [r.lost_writes for r in self.runs if r.lost_writes is not None]
        expected = None
        if self.claim is not None:
            expected = Claim(claim=self.claim.expected, source=self.claim.source,
                             matched=sum(r.truth_problem is None for r in self.runs))
        return CellEntry(
            lock=self.plan.row, faults=self.plan.column, label=column_label(self.plan.column),
            server=self.plan.server,
            duration_s=self.plan.duration_s, stop_on=self.plan.stop_on,
            status="n/a" if self.unavailable else ("done" if self.runs else "pending"),
            reason=self.unavailable,
            verdict=worst.verdict if worst else None,
            hard=sum(r.hard_violations for r in self.runs),
            soft=sum(r.soft_violations for r in self.runs),
            liveness=sum(r.liveness_violations for r in self.runs),
            lost_writes=sum(lost) if lost else None,
            first_hard_s=min(firsts) if firsts else None,
            hard_runs=sum(r.hard_violations > 0 for r in self.runs),
            report=worst.report if worst else None,
            why=next(iter([*worst.explanations, *worst.inconclusive_reasons]), None)
            if worst else None,
            runs=list(self.runs),
            expected=expected,
            untested=next((why for run in self.runs for why in run.inconclusive_reasons),
                          None),
        )


@dataclass
class Matrix:
    """The comparison: rows (locks), columns (faults) and a result per planned cell."""

    title: str
    seeds: int
    cells: list[CellResult]
    started: float = field(default_factory=time.time)
    wall_s: float = 0.0
    shard: list[int] | None = None
    page: Page = "matrix"  # what index.html shows (``MatrixFile.page``)

    @property
    def locks(self) -> list[str]:
        return list(dict.fromkeys(cell.plan.row for cell in self.cells))

    @property
    def columns(self) -> list[str]:
        return list(dict.fromkeys(cell.plan.column for cell in self.cells))

    def to_file(self) -> MatrixFile:
        """What matrix.json holds: the comparison so far."""
        return MatrixFile(
            title=self.title, seeds=self.seeds, locks=self.locks,
            columns=[Column(faults=col, label=column_label(col)) for col in self.columns],
            started=time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started)),
            wall_s=round(self.wall_s, 1),
            cells=[cell.to_entry() for cell in self.cells], shard=self.shard, page=self.page,
        )


Progress = Callable[[CellPlan, int], None]  # a run is about to start: (cell, seed)
Done = Callable[[CellEntry], None]  # a cell is finished: its entry in matrix.json
Save = Callable[[Path, MatrixFile], object]  # write pages from the matrix so far


def claim_for(plan: CellPlan) -> Cell | None:
    """The truth table's claim about exactly this lock and these faults, if any."""
    return next(
        (c for c in (*CELLS, *DRIVER_CELLS, *SERVER_CELLS)
         if (c.lock, c.faults, c.options) == (plan.lock, plan.column, plan.options)),
        None,
    )


def check_plans(plans: Sequence[CellPlan], seeds: int) -> list[str | None]:
    """Per plan, why it cannot run (None: it can): a pairing that cannot share a topology
    (failover × Redlock, a fault the provider cannot do) is a cell marked n/a. Bad input on
    its own (an unknown lock or fault, an option, the provider, the seeds) is a
    ``UsageError`` before anything runs."""
    if not 1 <= seeds <= 100:
        raise UsageError(f"--seeds must be between 1 and 100 (got {seeds})")
    unavailable: list[str | None] = []
    for plan in plans:
        campaign = plan.campaign(1)  # an unknown fault stops everything before any run
        try:
            campaign.validate()
        except UsageError as exc:
            msgspec.structs.replace(campaign, faults=[]).validate()
            unavailable.append(str(exc))
        else:
            unavailable.append(None)
    return unavailable


def run_matrix(
    plans: Sequence[CellPlan], *, seeds: int, out: Path, title: str = "lockchaos compare",
    on_run: Progress | None = None, on_cell: Done | None = None, save: Save | None = None,
    shard: tuple[int, int] | None = None, page: Page = "matrix",
) -> tuple[Path, MatrixFile]:
    """Run every cell in ``plans`` for seeds 1…``seeds`` into a new directory under ``out``;
    returns the directory (holding ``matrix.json`` and ``runs/``) and the matrix as saved.
    ``shard`` (K, N) says ``plans`` are shard K of N of a larger plan (``chaos.experiments.shard``);
    ``page`` is what its index.html shows (``MatrixFile.page``).

    Bad input (an unknown lock or fault, a bad duration) is a ``UsageError`` before anything
    runs; a cell whose lock and faults cannot share a topology is marked n/a. ``save`` is
    called with the matrix so far after every cell.
    """
    matrix = Matrix(title, seeds, [CellResult(plan, claim_for(plan)) for plan in plans],
                    shard=list(shard) if shard else None, page=page)
    for cell, unavailable in zip(matrix.cells, check_plans(plans, seeds), strict=True):
        cell.unavailable = unavailable
    directory = stamped_path(out, "compare")
    directory.mkdir(parents=True)
    started = time.monotonic()
    saved = matrix.to_file()
    for index, cell in enumerate(matrix.cells):
        if cell.unavailable is None:
            for seed in range(1, seeds + 1):
                if on_run:
                    on_run(cell.plan, seed)
                run_start = time.monotonic()
                outcome = run_campaign(cell.plan.campaign(seed), directory / RUNS)
                cell.runs.append(_entry(cell, seed, outcome, directory,
                                        time.monotonic() - run_start))
        matrix.wall_s = time.monotonic() - started
        saved = matrix.to_file()
        save_matrix(directory, saved)
        if save:
            save(directory, saved)
        if on_cell:
            on_cell(saved.cells[index])
    return directory, saved


def _entry(cell: CellResult, seed: int, outcome: Outcome, directory: Path, wall_s: float
           ) -> RunEntry:
    problem = cell.claim.check(outcome.verdict) if cell.claim is not None else None
    run_dir = str(outcome.run_dir.relative_to(directory))
    return RunEntry.of(outcome.verdict, seed=seed, run_dir=run_dir, wall_s=wall_s,
                       truth_problem=problem)
