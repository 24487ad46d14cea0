"""Reports without a run (the report is pure: history and verdict in, pages out): a long
synthetic history drawn as a window, one look per verdict on the pages and in the terminal,
the demo's claims page, and a bad run directory refused in one line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec
import pytest
from junitparser import JUnitXml
from markupsafe import escape
from rich.console import Console
from rich.text import Text
from test_checker_support import History

from chaos.checker import Verdict, check_file
from chaos.checker.coverage import FaultCoverage
from chaos.checker.verdict import RANK
from chaos.cli import main
from chaos.commands.demo import demo_plans
from chaos.experiments.compare import CellResult, Matrix, claim_for
from chaos.experiments.truth_table import Unproven
from chaos.history import Event, write_history
from chaos.report import write_run_reports
from chaos.report.matrix import RunEntry, save_matrix, write_compare_reports
from chaos.report.style import LOOKS
from chaos.report.summary import RunFacts, print_summary


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


def test_one_look_per_verdict_on_every_page_and_terminal(tmp_path: Path) -> None:
    """Every verdict has one look, and the page's badges and the timeline's bars use it."""
    assert list(LOOKS) == list(RANK)
    verdict = _two_valid_holders(tmp_path)
    (tmp_path / "verdict.json").write_text(json.dumps(verdict.to_dict()))
    write_run_reports(tmp_path)
    page = (tmp_path / "report.html").read_text()
    for kind, look in LOOKS.items():
        assert f"--{kind}: {look.color};" in page
    assert f'"marker":{{"color":"{LOOKS["hard"].color}"' in page  # the checker lane's bar

    console = Console(record=True, width=200, force_terminal=True, color_system="256")
    print_summary(verdict, console, RunFacts(tmp_path, 3, ["partition: no route"]))
    text = console.export_text(clear=False)
    assert text.startswith(f"verdict: hard — run dir {tmp_path}\n  lock synthetic, TTL 200 ms")
    assert "3 faults scheduled" in text and "  nemesis: partition: no route" in text
    assert "    1. hard: c1 and c2 both held the lock" in text
    styled = Console(force_terminal=True, color_system="256")
    with styled.capture() as hard:
        styled.print(Text("hard", style=LOOKS["hard"].terminal), end="")
    assert f"verdict: {hard.get()}" in console.export_text(styles=True)


def _two_valid_holders(directory: Path) -> Verdict:
    """The verdict of a synthetic history in which c1 and c2 hold the lock at once, both
    within their leases (hard), written to ``directory``."""
    ms = 1_000_000
    events = [Event(t=0, type="info", process="harness", f="start",
                    value={"lock": "synthetic", "ttl_ms": 200, "clients": ["c1", "c2"]})]
    for process, start, release in (("c1", 0, 50), ("c2", 20, 60)):
        events += [
            Event(t=start * ms, type="invoke", process=process, f="acquire"),
            Event(t=(start + 1) * ms, type="ok", process=process, f="acquire", token=process,
                  valid_until=(start + 200) * ms),
            Event(t=release * ms, type="invoke", process=process, f="release", token=process),
            Event(t=(release + 1) * ms, type="ok", process=process, f="release", token=process),
        ]
    write_history(directory / "history.jsonl", events)
    verdict = check_file(directory / "history.jsonl")
    assert verdict.verdict == "hard"
    return verdict


def test_the_demo_page_lists_the_truth_tables_claims_one_per_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The demo's index.html: one row per claim (its source and words from the truth table,
    the lock × faults, claimed vs measured, the report link), then the unclaimed locks; no
    sparse matrix. ``lockchaos report`` rebuilds it as the same page."""
    verdict = _two_valid_holders(tmp_path)
    plans = demo_plans(10.0, 5.0)
    claims = {id(plan): claim_for(plan) for plan in plans}
    breaks = next(p for p in plans if (c := claims[id(p)]) and c.expected == "hard")
    holds = next(p for p in plans if (c := claims[id(p)]) and c.expected == "no hard")
    unclaimed = next(p for p in plans if claims[id(p)] is None)
    cells = []
    for number, plan in enumerate((breaks, holds, unclaimed)):
        claim = claims[id(plan)]
        # The synthetic history names no fault: each claimed cell's faults are given the
        # effect a real run's coverage would show, so the page shows the claim judged.
        coverage = {name: FaultCoverage(fired=1, effective=1, active_s=0.1)
                    for name in (claim.fault_names if claim else [])}
        judged = msgspec.structs.replace(verdict, coverage=coverage)
        problem = claim.check(judged) if claim else None
        run = RunEntry.of(verdict, seed=1, run_dir=f"runs/{number}", wall_s=1.0,
                          truth_problem=problem)
        cells.append(CellResult(plan, claim, runs=[run]))
    matrix = Matrix("demo", 1, cells, page="claims").to_file()
    save_matrix(tmp_path, matrix)
    index = write_compare_reports(tmp_path, matrix)
    page = index.read_text()
    assert 'class="matrix"' not in page
    rows = re.findall(r'<td class="source">(.*?)</td>\s*<td class="cell-name">(.*?)</td>\s*'
                      r'<td class="claimed">(.*?)</td>', page, re.S)
    assert [(source, claimed) for source, _, claimed in rows] == [
        (str(escape(c.source)), str(escape(c.expected)))
        for c in (claims[id(breaks)], claims[id(holds)]) if c
    ]
    assert all(f"<code>{escape(fault)}</code>" in rows[0][1] for fault in breaks.column.split(","))
    assert page.count('class="broken"') == 1  # the "no hard" claim, measured hard
    assert '<td class="held yes">✓' in page and '<td class="held no">✗' in page
    for number in range(3):
        assert f'href="runs/{number}/report.html"' in page
    assert "makes no claim about" in page and f"<b>{escape(unclaimed.lock)}</b>" in page
    assert main(["report", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == str(index)
    assert index.read_text() == page


def test_a_fault_without_effect_is_said_once_in_the_summary(tmp_path: Path) -> None:
    """A finished run says why the fault did nothing (its reason), and the summary does not
    repeat it as a warning; a history cut short has no reason, and keeps the warning."""
    def summary(*, finished: bool) -> str:
        h = History()
        h.events[0].value["faults"] = ["client-pause-at"]
        h.command("c1", 1, "acquire", "SET").command("c1", 2, "release", "EVAL")
        h.fault("f1", "client-pause-at", 5, 200, target={"client": "c1"},
                params={"command": "DEL", "op": "release", "duration_ms": 300})
        for i in range(3):
            h.acquire("c1", 10 + 40 * i).release("c1", 30 + 40 * i)
        if finished:
            h.final_read(300, [])
        console = Console(record=True, width=300)
        print_summary(h.check(), console, RunFacts(tmp_path, 1, []))
        return console.export_text()

    finished = summary(finished=True)
    assert "client-pause-at:command=DEL never reached" in finished
    assert "warning: client-pause-at had no effect" not in finished
    assert "warning: client-pause-at had no effect on the lock" in summary(finished=False)


def test_a_claim_a_run_did_not_show_is_saved_in_the_matrix(tmp_path: Path) -> None:
    """A cell's run that did not show what its claim says is there gets the truth table's
    ``Unproven`` answer (a str subclass, "expected …, found none"); matrix.json could not
    encode it, and `compare --servers` died saving lua × failover."""
    verdict = _two_valid_holders(tmp_path)
    plan = next(p for p in demo_plans(10.0, 5.0) if (c := claim_for(p)) and c.expected == "hard")
    claim = claim_for(plan)
    assert claim is not None
    problem = Unproven("expected a hard violation, found none")
    run = RunEntry.of(verdict, seed=1, run_dir="runs/0", wall_s=1.0, truth_problem=problem)
    save_matrix(tmp_path, Matrix("compare", 1, [CellResult(plan, claim, runs=[run])]).to_file())
    saved = json.loads((tmp_path / "matrix.json").read_text())
    assert saved["cells"][0]["runs"][0]["truth_problem"] == str(problem)
