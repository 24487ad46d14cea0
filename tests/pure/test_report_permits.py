"""The timeline of a lock that is not a mutex (issue 19): the permits held over time, every hold
and within valid leases alone, against the capacity, and shared holds drawn apart from
exclusive ones; a mutex's timeline has none of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chaos.checker import check_file
from chaos.checker.explain import Clock
from chaos.history import Event, write_history
from chaos.report import write_run_reports
from chaos.report.figure import HOLD_COLOR, choose_window, timeline_figure
from chaos.report.permits import held
from chaos.report.rundir import RunRecord, load_run

MS = 1_000_000


def _run(directory: Path, shape: dict[str, Any],
         holds: list[tuple[str, dict[str, Any] | None, int, int, int]]) -> RunRecord:
    """A synthetic run: (process, the acquire's value, acquired at, lease until, released at)
    in ms, written to ``directory`` with its verdict and reports, and loaded back."""
    events = [Event(t=0, type="info", process="harness", f="start",
                    value={"lock": "synthetic", "ttl_ms": 50, "clients": ["c1", "c2", "c3"],
                           **shape})]
    for process, asked, start, until, release in holds:
        events += [
            Event(t=start * MS, type="invoke", process=process, f="acquire", value=asked),
            Event(t=(start + 1) * MS, type="ok", process=process, f="acquire", token=process,
                  valid_until=until * MS),
            Event(t=release * MS, type="invoke", process=process, f="release", token=process),
            Event(t=(release + 1) * MS, type="ok", process=process, f="release",
                  token=process),
        ]
    events.append(Event(t=200 * MS, type="info", process="harness", f="end"))
    write_history(directory / "history.jsonl", sorted(events, key=lambda e: e.t))
    verdict = check_file(directory / "history.jsonl")
    (directory / "verdict.json").write_text(json.dumps(verdict.to_dict()))
    write_run_reports(directory)
    return load_run(directory)


def _semaphore(directory: Path) -> RunRecord:
    """A 2-permit semaphore: c1 takes 2 permits, its lease lapses at 50 ms while it holds
    them to 100 ms; c2 takes 1 at 60 ms (3 held, 1 of them within a lease: soft)."""
    two, one = {"mode": "shared", "permits": 2}, {"mode": "shared", "permits": 1}
    return _run(directory, {"capacity": 2, "modes": ["shared"]},
                [("c1", two, 0, 50, 100), ("c2", one, 60, 160, 120)])


def test_the_permits_held_over_time_every_hold_and_within_valid_leases(
    tmp_path: Path
) -> None:
    run = _semaphore(tmp_path)
    assert run.verdict.verdict == "soft"
    timeline, clock = run.timeline, Clock(run.timeline)
    span = (timeline.start, timeline.end)
    every = held(timeline.holds, "shared", clock, span, valid=False)
    assert list(zip(every.x, every.y, strict=True)) == [
        (0.0, 0), (0.001, 2), (0.061, 3), (0.1, 1), (0.12, 0), (0.2, 0)]
    valid = held(timeline.holds, "shared", clock, span, valid=True)
    assert list(zip(valid.x, valid.y, strict=True)) == [
        (0.0, 0), (0.001, 2), (0.05, 0), (0.061, 1), (0.12, 0), (0.2, 0)]
    assert held(timeline.holds, "exclusive", clock, span, valid=False).most == 0


def test_a_semaphores_timeline_draws_its_capacity_above_green_holds(tmp_path: Path) -> None:
    run = _semaphore(tmp_path)
    figure = timeline_figure(run, choose_window(run))
    by_name = {trace.name: trace for trace in figure.data}
    capacity = by_name["capacity 2"]
    assert capacity.yaxis == "y2" and list(capacity.y) == [2, 2]
    assert list(capacity.x) == [0.0, 0.2]  # across the whole window
    assert by_name["held shared"].marker.color != HOLD_COLOR  # not a mutex's exclusive blue
    assert "held the lock" not in by_name  # a mutex's words
    panel = [trace for trace in figure.data if trace.yaxis == "y2"]
    assert [trace.name for trace in panel] == [
        "permits held", "permits held (valid leases)", "capacity 2"]
    assert figure.layout.yaxis2.domain[0] > figure.layout.yaxis.domain[1]  # above the lanes
    page = (tmp_path / "report.html").read_text()
    assert "the dashed line is the capacity (2)" in page


def test_a_read_write_lock_draws_readers_and_writers_apart(tmp_path: Path) -> None:
    """Readers (shared) and writers (exclusive) in their own colours, in the lanes and the
    panel; its readers are unbounded, so no capacity line."""
    read, write = {"mode": "shared", "permits": 1}, {"mode": "exclusive", "permits": 1}
    run = _run(tmp_path, {"capacity": None, "modes": ["exclusive", "shared"]},
               [("c1", read, 0, 100, 40), ("c2", read, 10, 100, 40), ("c3", write, 50, 150, 90)])
    assert run.verdict.verdict == "ok"
    figure = timeline_figure(run, choose_window(run))
    names = [trace.name for trace in figure.data]
    assert {"held shared (read)", "held exclusive (write)"} <= set(names)
    colors = {trace.name: trace.marker.color for trace in figure.data}
    assert colors["held shared (read)"] != colors["held exclusive (write)"]
    assert not [name for name in names if name and name.startswith("capacity")]
    panel = {trace.name: max(trace.y) for trace in figure.data if trace.yaxis == "y2"}
    assert panel == {"read permits held": 2, "read permits held (valid leases)": 2,
                     "writers holding": 1, "writers holding (valid leases)": 1}


def test_a_mutexs_timeline_has_no_permits_panel(tmp_path: Path) -> None:
    run = _run(tmp_path, {}, [("c1", None, 0, 50, 40), ("c2", None, 60, 110, 100)])
    figure = timeline_figure(run, choose_window(run))
    assert all(trace.yaxis in (None, "y") for trace in figure.data)
    layout = figure.to_plotly_json()["layout"]
    assert "yaxis2" not in layout and "domain" not in layout["yaxis"]
    assert {"held the lock", "lease valid"} <= {trace.name for trace in figure.data}
    assert "not a mutex" not in (tmp_path / "report.html").read_text()
