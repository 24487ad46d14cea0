"""Run reports: report.html and junit.xml from a real run with a known violation, rendered in
headless Chromium, rebuilt by ``lockchaos report``; and a long history drawn as a window."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from junitparser import Failure, JUnitXml
from markupsafe import escape

from chaos.checker import check_file
from chaos.cli import main
from chaos.history import Event, write_history
from chaos.report import write_run_reports

CHROMIUM = shutil.which("chromium")
BROWSER_TIMEOUT_S = 60


@pytest.fixture(scope="module")
def violated_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """del-release under slow work, stopped at its first hard violation ("A releases B's
    lock", seed 004): a real run on a real topology."""
    out = tmp_path_factory.mktemp("runs")
    code = main(["run", "--lock", "del-release", "--faults", "slow-work", "--duration", "8",
                 "--stop-on-first", "--out", str(out), "--json"])
    assert code == 1
    (run_dir,) = out.iterdir()
    return run_dir


def test_the_report_explains_the_known_violation(violated_run: Path) -> None:
    verdict = json.loads((violated_run / "verdict.json").read_text())
    hard = [v for v in verdict["violations"] if v["kind"] == "hard"]
    assert hard and "released" in hard[0]["explanation"]
    page = (violated_run / "report.html").read_text()
    assert str(escape(hard[0]["explanation"])) in page  # in the "why" and the table
    assert "seed</th>" in page and "del-release × slow-work" in page
    assert _external_resources(page) == []  # opens from disk: plotly.js is inline


def _external_resources(page: str) -> list[str]:
    """Every script, stylesheet, image or frame the page would load (script bodies are not
    parsed as markup, so plotly.js's own strings do not count)."""

    class Loads(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.found: list[str] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            for name, value in attrs:
                if name == "src" or (tag == "link" and name == "href"):
                    self.found.append(f"{tag} {value}")

    parser = Loads()
    parser.feed(page)
    return parser.found


def test_junit_xml_fails_the_run_with_its_explanations(violated_run: Path) -> None:
    verdict = json.loads((violated_run / "verdict.json").read_text())
    xml = JUnitXml.fromfile(str(violated_run / "junit.xml"))
    (suite,) = list(xml)
    cases = list(suite)
    assert (suite.tests, suite.failures, len(cases)) == (1, 1, 1)
    (failure,) = [r for r in cases[0].result if isinstance(r, Failure)]
    assert failure.type == "hard"
    hard = [v["explanation"] for v in verdict["violations"] if v["kind"] == "hard"]
    assert failure.message == hard[0][:500]
    assert all(text in failure.text for text in hard)
    assert cases[0].name == "del-release × slow-work"


def test_lockchaos_report_rebuilds_the_same_files(violated_run: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    before = {name: (violated_run / name).read_bytes() for name in ("report.html", "junit.xml")}
    for name in before:
        (violated_run / name).unlink()
    assert main(["report", str(violated_run)]) == 0
    assert capsys.readouterr().out.strip() == str(violated_run / "report.html")
    assert {name: (violated_run / name).read_bytes() for name in before} == before


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


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/setup.sh "
                    "installs Debian's chromium; it is not installable on this system)")
def test_the_report_renders_in_headless_chromium(violated_run: Path, tmp_path: Path) -> None:
    page = (violated_run / "report.html").as_uri()
    logged, dom = _chromium(tmp_path, "--enable-logging=stderr", "--v=0", "--dump-dom", page)
    console = [line for line in logged.splitlines() if ":CONSOLE" in line]
    assert console == []  # the page logs nothing: no error, no warning, no exception
    assert 'id="timeline"' in dom and 'class="main-svg"' in dom  # plotly drew its SVG
    bars = re.findall(r'<g class="point"><path d="M[^"]+"', dom)
    verdict = json.loads((violated_run / "verdict.json").read_text())
    assert len(bars) >= verdict["counts"]["holds"]  # every hold at least, drawn as a bar
    assert "checker" in dom and "nemesis" in dom  # the lanes' labels
    shot = violated_run / "report.png"
    _chromium(tmp_path, "--hide-scrollbars", "--window-size=1400,1800",
              f"--screenshot={shot}", page)
    assert shot.stat().st_size > 20_000


def _chromium(profile: Path, *args: str) -> tuple[str, str]:
    """Run headless Chromium once (own profile dir: tests may run side by side); returns
    (stderr, stdout). Virtual time lets plotly finish drawing before the DOM is dumped."""
    assert CHROMIUM is not None
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--host-resolver-rules=MAP * ~NOTFOUND",  # any network load fails, and logs
         f"--user-data-dir={profile / 'chromium'}", "--virtual-time-budget=5000", *args],
        capture_output=True, text=True, timeout=BROWSER_TIMEOUT_S, check=True,
    )
    return done.stderr, done.stdout


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
