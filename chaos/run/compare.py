"""A comparison: locks × faults, each cell a campaign on its own fresh topology.

The product's main job: put lock variants side by side under the same seeded faults and say
which broke, how badly, and how fast. Every cell runs ``chaos.run.campaign.run_campaign`` once
per seed (so every cell has a full run directory with its own report), and the matrix is
saved as ``matrix.json`` after each cell, so an interrupted comparison still leaves what it
found. A lock and a fault that cannot run together (a Sentinel failover against Redlock's
independent masters) are a cell marked "n/a" with the reason, not an error.

Where the truth table (``chaos.run.truth_table``) has a claim about a cell, the cell records it
and whether each run matched it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from chaos.checker.verdict import RANK
from chaos.errors import UsageError
from chaos.nemesis import parse_faults
from chaos.run.campaign import Campaign, Outcome, choose_layout, run_campaign, stamped_path
from chaos.run.truth_table import CELLS, Cell

MATRIX = "matrix.json"
RUNS = "runs"
MAX_CELLS = 400  # a comparison is for reading side by side, not for sweeping


@dataclass(frozen=True)
class CellPlan:
    """One cell to run: a lock, the faults of one column (as ``--faults`` takes them), how
    long at most, and the violation kind that settles it early (None: run the duration)."""

    lock: str
    faults: str
    duration_s: float
    stop_on: str | None = "hard"
    provider: str = "local"
    provider_config: str | None = None

    def campaign(self, seed: int) -> Campaign:
        return Campaign(
            lock=self.lock,
            faults=parse_faults(self.faults),
            duration_s=self.duration_s,
            seed=seed,
            stop_on_first=self.stop_on is not None,
            fail_on=self.stop_on or "hard",
            provider=self.provider,
            provider_config=self.provider_config,
        )

    @property
    def name(self) -> str:
        return f"{self.lock} × {column_label(self.faults)}"


def column_label(faults: str) -> str:
    """A column's heading: its faults joined by ``+`` (a column may combine several)."""
    return " + ".join(part for part in faults.split(",") if part)


def plan_matrix(locks: Sequence[str], columns: Sequence[str], duration_s: float,
                stop_on: str | None = "hard", *, provider: str = "local",
                provider_config: str | None = None) -> list[CellPlan]:
    """Every lock against every column (``a+b`` in a column: both faults in one run), each
    on a fresh topology from ``provider``."""
    locks = [lock.strip() for lock in locks if lock.strip()]
    columns = [col.strip().replace("+", ",") for col in columns if col.strip()]
    if not locks:
        raise UsageError("--locks is empty: give at least one lock, e.g. --locks lua,redlock")
    if not columns:
        raise UsageError("--faults is empty: give at least one fault, e.g. --faults slow-work")
    if len(locks) * len(columns) > MAX_CELLS:
        raise UsageError(f"{len(locks)} locks × {len(columns)} faults is more than {MAX_CELLS} "
                         "cells: compare fewer at a time")
    return [
        CellPlan(lock, col, duration_s, stop_on, provider, provider_config)
        for lock in locks
        for col in columns
    ]


@dataclass(frozen=True)
class RunSummary:
    """What the matrix keeps of one run (the run directory has the rest)."""

    seed: int
    verdict: dict[str, Any]  # verdict.json, minus the long lists
    run_dir: str  # relative to the comparison's directory
    wall_s: float
    truth_problem: str | None = None  # how the verdict departs from the truth table's claim

    def to_json(self) -> dict[str, Any]:
        return {"seed": self.seed, **self.verdict, "run_dir": self.run_dir,
                "report": f"{self.run_dir}/report.html", "wall_s": round(self.wall_s, 3),
                "truth_problem": self.truth_problem}


@dataclass
class CellResult:
    plan: CellPlan
    claim: Cell | None  # the truth table's claim about this cell, if it has one
    unavailable: str | None = None  # why the cell cannot run: shown as "n/a"
    runs: list[RunSummary] = field(default_factory=list)

    def worst(self) -> RunSummary | None:
        """The run with the most severe verdict (the earliest seed among equals)."""
        return max(self.runs, key=lambda run: RANK[run.verdict["verdict"]], default=None)

    def to_json(self) -> dict[str, Any]:
        worst = self.worst()
        firsts = [r.verdict["first_hard_violation_s"] for r in self.runs
                  if r.verdict["first_hard_violation_s"] is not None]
        lost = [r.verdict["lost_writes"] for r in self.runs if r.verdict["lost_writes"] is not None]
        cell: dict[str, Any] = {
            "lock": self.plan.lock, "faults": self.plan.faults,
            "label": column_label(self.plan.faults), "duration_s": self.plan.duration_s,
            "stop_on": self.plan.stop_on,
            "status": "n/a" if self.unavailable else ("done" if self.runs else "pending"),
            "reason": self.unavailable,
            "verdict": worst.verdict["verdict"] if worst else None,
            "hard": sum(r.verdict["hard_violations"] for r in self.runs),
            "soft": sum(r.verdict["soft_violations"] for r in self.runs),
            "liveness": sum(r.verdict["liveness_violations"] for r in self.runs),
            "lost_writes": sum(lost) if lost else None,
            "first_hard_s": min(firsts) if firsts else None,
            "hard_runs": sum(r.verdict["hard_violations"] > 0 for r in self.runs),
            "report": worst.to_json()["report"] if worst else None,
            "why": worst.verdict["explanations"][0] if worst and worst.verdict["explanations"]
            else None,
            "runs": [run.to_json() for run in self.runs],
            "expected": None,
        }
        if self.claim is not None:
            cell["expected"] = {
                "claim": self.claim.expected, "source": self.claim.source,
                "matched": sum(r.truth_problem is None for r in self.runs),
                "runs": len(self.runs),
            }
        return cell


@dataclass
class Matrix:
    """The comparison: rows (locks), columns (faults) and a result per planned cell."""

    title: str
    seeds: int
    cells: list[CellResult]
    started: float = field(default_factory=time.time)
    wall_s: float = 0.0

    @property
    def locks(self) -> list[str]:
        return list(dict.fromkeys(cell.plan.lock for cell in self.cells))

    @property
    def columns(self) -> list[str]:
        return list(dict.fromkeys(cell.plan.faults for cell in self.cells))

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title, "seeds": self.seeds, "locks": self.locks,
            "columns": [{"faults": col, "label": column_label(col)} for col in self.columns],
            "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started)),
            "wall_s": round(self.wall_s, 1),
            "cells": [cell.to_json() for cell in self.cells],
        }


Progress = Callable[[CellPlan, int], None]  # a run is about to start: (cell, seed)
Done = Callable[[dict[str, Any]], None]  # a cell is finished: its entry in matrix.json
Save = Callable[[Path, dict[str, Any]], object]  # write pages from the matrix so far


def claim_for(plan: CellPlan) -> Cell | None:
    """The truth table's claim about exactly this lock and these faults, if any."""
    return next((c for c in CELLS if (c.lock, c.faults) == (plan.lock, plan.faults)), None)


def run_matrix(
    plans: Sequence[CellPlan], *, seeds: int, out: Path, title: str = "lockchaos compare",
    on_run: Progress | None = None, on_cell: Done | None = None, save: Save | None = None,
) -> tuple[Path, Matrix]:
    """Run every cell in ``plans`` for seeds 1…``seeds`` into a new directory under ``out``;
    returns the directory (holding ``matrix.json`` and ``runs/``) and the matrix.

    Bad input (an unknown lock or fault, a bad duration) is a ``UsageError`` before anything
    runs; a cell whose lock and faults cannot share a topology is marked n/a. ``save`` is
    called with the matrix so far after every cell.
    """
    if not 1 <= seeds <= 100:
        raise UsageError(f"--seeds must be between 1 and 100 (got {seeds})")
    matrix = Matrix(title, seeds, [CellResult(plan, claim_for(plan)) for plan in plans])
    for cell in matrix.cells:
        campaign = cell.plan.campaign(1)  # an unknown fault stops everything before any run
        try:
            campaign.validate()
            choose_layout(campaign)
        except UsageError as exc:
            # Bad input on its own (a lock, an option, the provider) stops everything; a
            # pairing that cannot run (failover × Redlock, a fault the provider cannot do)
            # is a cell marked n/a.
            replace(campaign, faults=[]).validate()
            cell.unavailable = str(exc)
    directory = stamped_path(out, "compare")
    directory.mkdir(parents=True)
    started = time.monotonic()
    for cell in matrix.cells:
        if cell.unavailable is None:
            for seed in range(1, seeds + 1):
                if on_run:
                    on_run(cell.plan, seed)
                run_start = time.monotonic()
                outcome = run_campaign(cell.plan.campaign(seed), directory / RUNS)
                cell.runs.append(_summary(cell, seed, outcome, directory,
                                          time.monotonic() - run_start))
        matrix.wall_s = time.monotonic() - started
        data = matrix.to_json()
        (directory / MATRIX).write_text(json.dumps(data, indent=2) + "\n")
        if save:
            save(directory, data)
        if on_cell:
            on_cell(data["cells"][matrix.cells.index(cell)])
    return directory, matrix


def _summary(cell: CellResult, seed: int, outcome: Outcome, directory: Path, wall_s: float
             ) -> RunSummary:
    verdict = outcome.verdict.to_dict()
    problem = cell.claim.judge(verdict) if cell.claim is not None else None
    kept = {k: v for k, v in verdict.items() if k not in ("violations", "lost_write_ids")}
    kept["explanations"] = verdict["explanations"][:3]
    return RunSummary(seed, kept, str(outcome.run_dir.relative_to(directory)), wall_s, problem)
