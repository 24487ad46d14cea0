"""A comparison's shards run at once, as processes on this machine (``--jobs N``).

The cells of a comparison mostly wait (clients work, leases run out, faults wait for their
moment), so two run side by side in about the time of one. Each job is a process of its own
running one shard (``chaos.experiments.shard``: every N-th cell) with its own topologies,
exactly as ``--shard K/N`` on N machines would, and the shards are joined by the same
``merge``: one ``matrix.json``, index.html and junit.xml, the cells in plan order.

A job reports each finished cell as one JSON line on its stdout; the caller's ``on_cell``
sees them as they come. Jobs die with the runner (``--pdeathsig``: SIGTERM, so they tear their
topologies down), and a runner that stops early (Ctrl-C, SIGTERM, an error) stops them first.
"""

from __future__ import annotations

import pickle
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import msgspec

from chaos.campaign import stamped_path
from chaos.errors import UsageError
from chaos.experiments.compare import CellPlan, Done, check_plans, run_matrix
from chaos.experiments.shard import merge, take_shard
from chaos.report.matrix import CellEntry, MatrixFile, Page, save_matrix
from chaos.signals import sigterm_unwinds

MAX_JOBS = 8
STOP_WAIT_S = 30.0  # a stopped job tears its topology down within this, or is killed
CELL_BOUND_S = 300.0  # beyond its duration, what one run may take (start, check, reports)
_SETPRIV = shutil.which("setpriv")


def run_in_jobs(
    plans: Sequence[CellPlan], *, jobs: int, seeds: int, out: Path, title: str,
    page: Page = "matrix", on_cell: Done | None = None,
) -> tuple[Path, MatrixFile]:
    """Run ``plans`` as ``jobs`` shards at once and merge them into a new directory under
    ``out``; returns it and its matrix (``wall_s``: the time the whole took)."""
    if not 2 <= jobs <= MAX_JOBS:
        raise UsageError(f"--jobs must be between 1 and {MAX_JOBS} (got {jobs})")
    check_plans(plans, seeds)  # bad input: one line before any job starts
    jobs = min(jobs, len(plans))
    started = time.monotonic()
    bound_s = sum(plan.duration_s + CELL_BOUND_S for plan in plans) * seeds
    # The jobs' own directories sit under ``out`` while they run (a runner killed midway
    # leaves what they found there) and go once merged.
    work = stamped_path(out, "jobs")
    work.mkdir(parents=True)
    spec = work / "plans.pickle"
    spec.write_bytes(pickle.dumps((list(plans), seeds, title, page)))
    outs = [work / f"job{k}" for k in range(1, jobs + 1)]
    children = [_start(spec, k, jobs, outs[k - 1]) for k in range(1, jobs + 1)]
    try:
        _follow(children, on_cell, started + bound_s)
    finally:
        _stop(children)
    for k, child in enumerate(children, 1):
        if child.returncode == 2:
            raise UsageError(f"job {k}/{jobs} stopped on bad input (its line is above)")
        if child.returncode != 0:
            raise RuntimeError(f"job {k}/{jobs} exited {child.returncode} (see above)")
    target, merged = merge([next(path.iterdir()) for path in outs], out)
    shutil.rmtree(work)
    merged = msgspec.structs.replace(merged, wall_s=round(time.monotonic() - started, 1))
    save_matrix(target, merged)
    return target, merged


def _start(spec: Path, k: int, n: int, out: Path) -> subprocess.Popen[str]:
    prefix = [_SETPRIV, "--pdeathsig", "TERM", "--"] if _SETPRIV else []
    argv = [sys.executable, "-m", "chaos.experiments.jobs", str(spec), str(k), str(n), str(out)]
    return subprocess.Popen([*prefix, *argv], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, text=True)  # fmt: skip


def _follow(children: list[subprocess.Popen[str]], on_cell: Done | None, deadline: float
            ) -> None:
    """Pass each job's finished cells to ``on_cell`` as they come, until every job ended."""
    lines: queue.Queue[str | None] = queue.Queue()

    def read(child: subprocess.Popen[str]) -> None:
        assert child.stdout is not None
        for line in child.stdout:
            lines.put(line)
        lines.put(None)

    for child in children:
        threading.Thread(target=read, args=(child,), daemon=True).start()
    open_jobs = len(children)
    while open_jobs and time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            continue
        if line is None:
            open_jobs -= 1
        elif on_cell is not None:
            on_cell(msgspec.json.decode(line, type=CellEntry))
    if open_jobs:
        raise RuntimeError(f"{open_jobs} job(s) still running past the comparison's bound")


def _stop(children: list[subprocess.Popen[str]]) -> None:
    """Every job ended: those still running are asked to stop (SIGTERM: they tear down),
    then killed if they have not within ``STOP_WAIT_S``."""
    for child in children:
        if child.poll() is None:
            child.terminate()
    for child in children:
        try:
            child.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(timeout=STOP_WAIT_S)


def _job(argv: list[str]) -> int:
    """One job: shard K of N of the pickled plans into OUT, a JSON line per finished cell."""
    spec, k, n, out = Path(argv[0]), int(argv[1]), int(argv[2]), Path(argv[3])
    plans, seeds, title, page = pickle.loads(spec.read_bytes())

    def report(cell: CellEntry) -> None:
        sys.stdout.write(msgspec.json.encode(cell).decode() + "\n")
        sys.stdout.flush()

    try:
        with sigterm_unwinds():
            run_matrix(take_shard(plans, (k, n)), seeds=seeds, out=out, title=title,
                       on_cell=report, shard=(k, n), page=page)  # fmt: skip
    except UsageError as exc:
        print(f"lockchaos: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(_job(sys.argv[1:]))
