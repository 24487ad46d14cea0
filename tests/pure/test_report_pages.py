"""Run reports without a run: a long synthetic history drawn as a window (the report is
pure: history and verdict in, pages out), and a bad run directory refused in one line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from junitparser import JUnitXml

from chaos.checker import check_file
from chaos.cli import main
from chaos.history import Event, write_history
from chaos.report import write_run_reports


@pytest.mark.parametrize("make_bad", ["missing", "empty", "no-verdict"])
def test_report_of_a_bad_dir_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make_bad: str
) -> None:
    target = tmp_path / "run"
    if make_bad != "missing":
        target.mkdir()
    if make_bad == "no-verdict":
        (target / "history.jsonl").write_text('{"t":1,"type":"invoke","process":"c1","f":"x"}\n')
    assert main(["report", str(target)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("lockchaos: ") and "\n" not in err and "run directory" in err


def test_a_long_history_is_drawn_as_a_window_and_says_so(tmp_path: Path) -> None:
    """A synthetic 6000-hold history (the report is pure: history + verdict in, pages out)."""
    ms = 1_000_000
    events = [Event(t=0, type="info", process="harness", f="start",
                    value={"lock": "synthetic", "ttl_ms": 200, "clients": ["c1", "c2"]})]
    for i in range(6000):
        t, process = (i + 1) * 10 * ms, f"c{i % 2 + 1}"
        events += [
            Event(t=t, type="invoke", process=process, f="acquire"),
            Event(t=t + ms, type="ok", process=process, f="acquire", token=f"k{i}",
                  valid_until=t + 200 * ms),
            Event(t=t + (15 if i == 4000 else 8) * ms, type="invoke", process=process,
                  f="release", token=f"k{i}"),  # hold 4000 overlaps hold 4001: a hard one
            Event(t=t + (16 if i == 4000 else 9) * ms, type="ok", process=process,
                  f="release", token=f"k{i}"),
        ]
    write_history(tmp_path / "history.jsonl", events)
    verdict = check_file(tmp_path / "history.jsonl")
    assert verdict.hard_violations == 1
    (tmp_path / "verdict.json").write_text(json.dumps(verdict.to_dict()))
    write_run_reports(tmp_path)
    page = (tmp_path / "report.html").read_text()
    assert "Windowed:" in page and "6000 holds" in page and "first hard violation" in page
    first = verdict.first_hard_violation_s
    assert first is not None
    window = re.search(r"from\s+([\d.]+) s to ([\d.]+) s", page)
    assert window and float(window[1]) <= first <= float(window[2])
    assert JUnitXml.fromfile(str(tmp_path / "junit.xml")).failures == 1
