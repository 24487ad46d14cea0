"""``lockchaos compare``: locks × faults side by side, each cell on a fresh topology.

Shows live progress, prints the lock × fault table, and writes ``index.html``, ``matrix.json``
and ``junit.xml`` in a new directory under ``--out`` (each cell's run directory under
``runs/``). Exit status as ``run``'s, over the cells (``chaos.report.matrix.exit_status``): 1
a cell found a hard violation, 3 none did but a cell did not test all it asked for (it says
why, in the table, the page, matrix.json and junit.xml), 0 otherwise, 2 on bad input. The
demo runs the same way and exits 0: its cells are claims, checked on its page.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from chaos.checker.verdict import INCONCLUSIVE
from chaos.commands.campaign_options import As, campaign_options
from chaos.errors import UsageError
from chaos.experiments.compare import CellPlan, plan_matrix, run_matrix
from chaos.experiments.jobs import run_in_jobs
from chaos.experiments.shard import parse_shard, take_shard
from chaos.report.matrix import (
    INDEX,
    CellEntry,
    MatrixFile,
    Page,
    exit_status,
    write_compare_reports,
)
from chaos.report.style import LOOKS, marked
from chaos.report.summary import INDENT
from chaos.report.terminal import print_table, say, terminal
from chaos.signals import sigterm_unwinds
from chaos.topology.images import SERVERS

GRID_COLUMNS = 4  # more fault columns than this print as one row per cell


SHARD = typer.Option(
    None, "--shard", help="run only shard K/N of the cells (join the shards with `lockchaos "
    "merge`): every N-th cell from the K-th",
)


def jobs_option(default: int) -> int:
    return typer.Option(
        default, "--jobs", help="cells run at once, each job a process running one shard, "
        "merged at the end (the cells mostly wait: two take about the time of one on 2 cores)",
    )


@campaign_options("duration_s", "provider", "provider_config", "server", "capacity",
                  "allow_inconclusive",
                  duration_s=As(default=10.0, help="seconds per run at most"),
                  allow_inconclusive=As(help="exit 0, not 3, when a cell did not test all it "
                                             "asked for"),
                  capacity=As(help="permits of each semaphore among --locks (the other locks "
                                   "keep theirs; a row says a capacity not its lock's own)"))
def compare(
    locks: str = typer.Option(..., "--locks", help="comma-separated locks (lockchaos list)"),
    columns: str = typer.Option(
        ..., "--faults", help="comma-separated fault columns; a+b injects both in one column"
    ),
    seeds: int = typer.Option(1, "--seeds", help="run each cell with seeds 1…K"),
    stop_on_first: bool = typer.Option(
        True, "--stop-on-first/--full",
        help="end a run at its first hard violation (default) or run the whole duration",
    ),
    out: Path = typer.Option(Path("reports"), "--out", help="where the compare directory goes"),
    servers: str | None = typer.Option(
        None, "--servers",
        help=f"comma-separated servers ({','.join(SERVERS)}): every lock × fault "
        "cell on each, one row per lock @ server (--provider docker)",
    ),
    shard: str | None = SHARD,
    jobs: int = jobs_option(1),
    *,
    duration_s: float,
    provider: str,
    provider_config: Path | None,
    server: str | None,
    capacity: int | None,
    allow_inconclusive: bool,
) -> None:
    """Run every lock against every fault column on fresh topologies; print the matrix and
    write index.html + matrix.json + junit.xml; exit 0 when no cell found a hard violation
    and each tested all it asked for, 1 when a cell found one, 2 on bad input, 3 when a cell
    did not test all it asked for (it says why)."""
    if server is not None and servers is not None:
        raise UsageError("give --server NAME or --servers a,b,c, not both")
    chosen: list[str | None] = [server]
    if servers is not None:
        chosen = [name.strip() for name in servers.split(",") if name.strip()]
        if not chosen:
            raise UsageError("--servers is empty: e.g. --servers redis-7.0,valkey-8.1")
    plans = plan_matrix(
        locks.split(","), columns.split(","), duration_s, "hard" if stop_on_first else None,
        provider=provider, provider_config=provider_config, servers=chosen, capacity=capacity,
    )
    matrix = run_and_show(plans, seeds=seeds, out=out, title="lockchaos compare", shard=shard,
                          jobs=jobs)
    raise typer.Exit(exit_status(matrix, allow_inconclusive=allow_inconclusive))


def run_and_show(plans: Sequence[CellPlan], *, seeds: int, out: Path, title: str,
                 shard: str | None = None, page: Page = "matrix", jobs: int = 1) -> MatrixFile:
    """Run ``plans`` (shard K/N of them, if asked; ``jobs`` cells at once) with live progress,
    print the table and the path of the index (last line), which shows ``page``; the matrix."""
    chosen = parse_shard(shard)
    if jobs != 1 and chosen is not None:
        raise UsageError("give --shard K/N (one shard here) or --jobs N (every shard here), "
                         "not both")
    plans = take_shard(plans, chosen)
    err = Console(stderr=True)
    runs = len(plans) * seeds
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
               MofNCompleteColumn(), TimeElapsedColumn())
    with sigterm_unwinds(), Progress(*columns, console=err, transient=True) as progress:
        task = progress.add_task("starting", total=runs)

        def on_run(plan: CellPlan, seed: int) -> None:
            progress.update(task, description=f"{plan.name} (seed {seed}/{seeds})")

        def on_cell(cell: CellEntry) -> None:
            progress.advance(task, seeds)
            say(progress.console, _line(cell), INDENT * 3)

        if jobs == 1:
            directory, matrix = run_matrix(
                plans, seeds=seeds, out=out, title=title, on_run=on_run, on_cell=on_cell,
                save=write_compare_reports, shard=chosen, page=page,
            )
        else:
            progress.update(task, description=f"{jobs} cells at a time")
            directory, matrix = run_in_jobs(plans, jobs=jobs, seeds=seeds, out=out,
                                            title=title, page=page, on_cell=on_cell)
            write_compare_reports(directory, matrix)
    console = terminal()
    _print_table(console, matrix)
    say(console, f"{len(matrix.cells)} cells in {matrix.wall_s:.0f} s; runs, matrix.json and "
                 f"junit.xml in {directory}")
    print((directory / INDEX).resolve())
    return matrix


def _line(cell: CellEntry) -> str:
    if cell.status != "done":
        return f"  [dim]n/a[/]  {escape(cell.name)}: {escape(cell.reason or '')}"
    return f"  {_verdict(cell, 8)}  {escape(cell.name)}{_facts(cell, ', ')}"


def _facts(cell: CellEntry, sep: str) -> str:
    facts = [f"hard {cell.hard} · soft {cell.soft}"]
    if cell.first_hard_s is not None:
        facts.append(f"first hard {cell.first_hard_s:.2f} s")
    if cell.lost_writes:
        facts.append(f"lost writes {cell.lost_writes}")
    if cell.expected:
        facts.append(f"{_claim_mark(cell)} claim: {escape(cell.expected.claim)}")
    if cell.untested:
        facts.append(f"[{LOOKS[INCONCLUSIVE].terminal}]{cell.untested_label}[/]: "
                     f"{escape(cell.untested)}")
    return sep + sep.join(facts)


def _claim_mark(cell: CellEntry) -> str:
    """✓ every run of the cell was as the truth table claims, ✗ not ("" no claim)."""
    return {None: "", True: "✓", False: "[red]✗[/]"}[cell.claim_held]


def _verdict(cell: CellEntry, width: int = 0) -> str:
    if cell.status != "done" or cell.verdict is None:
        return "[dim]n/a[/]"
    return marked(cell.verdict, width)


def _print_table(console: Console, matrix: MatrixFile) -> None:
    """The lock × fault grid, or one row per cell when there are too many columns (each a
    table when it fits the console whole, else blocks: ``print_table``)."""
    cells, columns = matrix.cells, matrix.columns
    title = f"{matrix.title}: lock × fault"
    if len(columns) <= GRID_COLUMNS:
        grid = {(c.lock, c.faults): c for c in cells}
        rows = []
        for lock in matrix.locks:
            row = {"lock": f"[bold]{escape(lock)}[/]"}
            for col in columns:
                cell = grid.get((lock, col.faults))
                if cell is None:
                    row[col.faults] = "[dim]·[/]"
                elif cell.status != "done":
                    row[col.faults] = f"[dim]n/a: {escape(cell.reason or '')}[/]"
                else:
                    row[col.faults] = _verdict(cell) + _facts(cell, "\n")
            rows.append(row)
        print_table(console, title, {"lock": "lock", **{escape(col.label): col.faults
                                                        for col in columns}}, rows)
        return
    rows = []
    for cell in cells:
        name = f"[bold]{escape(cell.lock)}[/] × {escape(cell.label)}"
        if cell.status != "done":
            rows.append({"name": f"{name}\n[dim]{escape(cell.reason or '')}[/]",
                         "verdict": _verdict(cell)})
            continue
        if cell.untested:
            name += f"\n[dim]{cell.untested_label}: {escape(cell.untested)}[/]"
        rows.append({"name": name, "verdict": _verdict(cell), "hard": str(cell.hard),
                     "soft": str(cell.soft), "lost": str(cell.lost_writes or ""),
                     "1st hard": f"{cell.first_hard_s:.2f} s" if cell.first_hard_s is not None
                     else "", "claim": _claim_mark(cell)})
    headings = ("verdict", "hard", "soft", "lost", "1st hard", "claim")
    print_table(console, title, {"lock × faults": "name", **{h: h for h in headings}},
                [{h: "" for h in headings} | row for row in rows])
    say(console, "claim: ✓ as the truth table says, ✗ not (chaos/experiments/truth_table.py)")
