"""The timeline shows the cause: a release stalled before its DEL is drawn as a bar from its
invoke to the moment it returned true (it was a small triangle), and the overlap it caused —
9 ms in a 20 s run, a sliver at any share of the window — has a marker where it starts, on
the checker lane and on both holders' lanes, which keeps its size at every zoom."""

from __future__ import annotations

import json
from pathlib import Path

from chaos.checker import check_file
from chaos.history import Event, write_history
from chaos.report import write_run_reports
from chaos.report.figure import choose_window, timeline_figure
from chaos.report.rundir import load_run

MS = 1_000_000


def _stalled_release(directory: Path) -> None:
    """c1's release stops before its DEL at 50 ms and returns true at 220 ms, after its lease
    ran out (200 ms) and c2 took the lock (210 ms): it deleted c2's key, c3 takes the lock at
    221.5 ms (its grant) while c2 holds it to 230 ms. The run lasts 20 s."""
    def hold(process: str, start: int, release: int, released: int) -> list[Event]:
        return [
            Event(t=start * MS, type="invoke", process=process, f="acquire"),
            Event(t=start * MS + MS // 2, type="ok", process=process, f="acquire", token=process,
                  valid_until=(start + 200) * MS),
            Event(t=release * MS, type="invoke", process=process, f="release", token=process),
            Event(t=released * MS, type="ok", process=process, f="release", token=process,
                  value=True),
        ]
    events = [
        Event(t=0, type="info", process="harness", f="start",
              value={"lock": "synthetic", "ttl_ms": 200, "clients": ["c1", "c2", "c3"]}),
        *hold("c1", 0, 50, 220),
        Event(t=51 * MS, type="info", process="c1", f="pause-point",
              value={"command": "DEL", "action": "pause", "op": "release"}),
        *hold("c2", 210, 230, 231), *hold("c3", 221, 300, 301),
        Event(t=20_000 * MS, type="info", process="harness", f="end"),
    ]
    write_history(directory / "history.jsonl", sorted(events, key=lambda event: event.t))
    verdict = check_file(directory / "history.jsonl")
    assert verdict.hard_violations == 1, verdict.explanations
    (directory / "verdict.json").write_text(json.dumps(verdict.to_dict()))
    write_run_reports(directory)


def test_a_stalled_release_is_a_bar_and_the_overlap_it_caused_a_marker(tmp_path: Path) -> None:
    _stalled_release(tmp_path)
    run = load_run(tmp_path)
    traces = {trace.name: trace for trace in timeline_figure(run, choose_window(run)).data}
    stalled = traces["operation in flight (stalled)"]
    assert list(stalled.y) == ["c1"]  # no other operation took a tenth of the TTL
    assert stalled.base[0] == 0.05 and round(stalled.x[0], 3) == 0.17  # 50 ms → 220 ms
    assert "stopped at pause point DEL" in stalled.hovertext[0]
    starts = traces["hard starts"]
    assert sorted(starts.y) == ["c2", "c3", "checker"] and set(starts.x) == {0.2215}  # c3 granted
    assert starts.mode == "markers" and starts.marker.size >= 12  # pixels, whatever the zoom
    assert set(starts.customdata) == {0}  # a click shows violation 0's explanation
