"""Splitting a comparison across machines, and joining the pieces.

``--shard K/N`` on ``compare``, ``demo`` and ``bench/truth_table.py`` keeps the cells whose
position in the plan is K−1 modulo N: N machines (a CI matrix, a Kubernetes Indexed Job) each
run one shard with the same options, and ``lockchaos merge`` joins their compare directories
into one ``matrix.json``, ``index.html`` and ``junit.xml``, cells in plan order again. Shards
take every N-th cell rather than a contiguous block so the slow cells (the ones that run
their whole duration) spread evenly.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

import msgspec

from chaos.campaign import stamped_path
from chaos.errors import UsageError
from chaos.report.matrix import MATRIX, CellEntry, MatrixFile, load_matrix, save_matrix

T = TypeVar("T")
RUNS = "runs"


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``"2/4"`` → (2, 4); None or "" → None; ``UsageError`` for anything else."""
    if not text:
        return None
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if match is None or not 1 <= int(match[1]) <= int(match[2]) <= 1000:
        raise UsageError(f"--shard must look like K/N with 1 ≤ K ≤ N ≤ 1000 (got {text!r})")
    return int(match[1]), int(match[2])


def take_shard(items: Sequence[T], shard: tuple[int, int] | None) -> list[T]:
    """The items of shard K of N: positions K−1, K−1+N, K−1+2N, …"""
    if shard is None:
        return list(items)
    k, n = shard
    return list(items[k - 1 :: n])


def merge(directories: Sequence[Path], out: Path) -> tuple[Path, MatrixFile]:
    """Join compare directories (shards of one comparison, or any comparisons of the same
    seeds) into a new one under ``out``: their ``runs/`` copied in, the cells in plan order
    (shards interleaved back; other directories one after another)."""
    if not directories:
        raise UsageError("merge needs at least one compare directory")
    matrices = []
    for directory in directories:
        path = directory / MATRIX
        if not path.is_file():
            raise UsageError(f"{directory}: no {MATRIX}; give directories `lockchaos compare` "
                             "or `demo` wrote")
        matrices.append(load_matrix(path))
    seeds = {m.seeds for m in matrices}
    if len(seeds) > 1:
        raise UsageError(f"the comparisons ran different --seeds ({sorted(seeds)}): merge "
                         "only shards of one comparison")
    if len({m.page for m in matrices}) > 1:
        raise UsageError("the directories hold a demo and a comparison: merge only shards of "
                         "one comparison")
    target = stamped_path(out, "merged")
    (target / RUNS).mkdir(parents=True)
    for index, directory in enumerate(directories):
        renamed: dict[str, str] = {}
        for run in sorted((directory / RUNS).glob("*")) if (directory / RUNS).is_dir() else []:
            name = _free_name(target / RUNS, run.name)
            if name != run.name:
                renamed[f"{RUNS}/{run.name}/"] = f"{RUNS}/{name}/"
            shutil.copytree(run, target / RUNS / name)
        matrices[index].cells = [_moved(cell, renamed) for cell in matrices[index].cells]
    cells = _in_plan_order(matrices)
    # Rows and columns in the order of their first cells: in directory order, the shards of
    # `compare --servers` each listed their own servers' rows (redis-7.0, valkey-8.1, then
    # redis-8.0, valkey-9.1).
    columns = {c.faults: c for m in matrices for c in m.columns}
    merged = MatrixFile(
        title=matrices[0].title, seeds=matrices[0].seeds,
        locks=list(dict.fromkeys([*(cell.lock for cell in cells),
                                  *(lock for m in matrices for lock in m.locks)])),
        columns=[columns[faults] for faults in
                 dict.fromkeys([*(cell.faults for cell in cells), *columns]) if faults in columns],
        started=min(m.started for m in matrices),
        wall_s=round(sum(m.wall_s for m in matrices), 1),
        cells=cells, shard=None, page=matrices[0].page,
    )  # fmt: skip
    save_matrix(target, merged)
    return target, merged


def _free_name(runs: Path, name: str) -> str:
    """``name``, or ``name-2``, ``name-3``… if a run of that name is there already: shards
    run apart (on two machines, or as two jobs) name their runs by lock, faults and the
    second they began, so two of them can coincide."""
    taken, suffix = name, 1
    while (runs / taken).exists():
        suffix += 1
        taken = f"{name}-{suffix}"
    return taken


def _moved(cell: CellEntry, renamed: dict[str, str]) -> CellEntry:
    """``cell`` with its paths under the runs that were renamed when copied in."""
    if not renamed:
        return cell

    def path(text: str) -> str:
        for old, new in renamed.items():
            if text.startswith(old):
                return new + text[len(old):]
        return text

    runs = [msgspec.structs.replace(run, run_dir=path(run.run_dir + "/").rstrip("/"),
                                    report=path(run.report)) for run in cell.runs]  # fmt: skip
    return msgspec.structs.replace(cell, runs=runs,
                                   report=path(cell.report) if cell.report else None)


def _in_plan_order(matrices: list[MatrixFile]) -> list[CellEntry]:
    shards = [m.shard for m in matrices]
    if all(shards) and len({s[1] for s in shards if s}) == 1:
        count = shards[0][1] if shards[0] else 1
        taken = sorted(s[0] for s in shards if s)
        if taken != sorted(set(taken)):
            raise UsageError("a shard was given twice: merge each shard once")
        by_shard = {s[0]: m.cells for s, m in zip(shards, matrices, strict=True) if s}
        ordered: list[CellEntry] = []
        longest = max(len(c) for c in by_shard.values())
        for round_ in range(longest):
            for k in range(1, count + 1):
                cells = by_shard.get(k, [])
                if round_ < len(cells):
                    ordered.append(cells[round_])
        return ordered
    return [cell for m in matrices for cell in m.cells]
