"""A real run's report.html in headless Chromium: it logs nothing, plotly draws every hold,
and a screenshot is taken (the run: the truth table's del-release × slow-work cell); a
semaphore's report draws its capacity (lua-semaphore × client-pause)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from cells import CellRuns
from prerequisites import unavailable

BROWSER_TIMEOUT_S = 60


@pytest.fixture
def chromium() -> str:
    """Headless Chromium's path; before the run it renders, a skip (under CI: a failure)."""
    return shutil.which("chromium") or unavailable(
        "chromium is not installed (scripts/setup.sh installs Debian's chromium; it is not "
        "installable on this system)"
    )


def test_the_report_renders_in_headless_chromium(
    chromium: str, violated_run: Path, tmp_path: Path
) -> None:
    page = (violated_run / "report.html").as_uri()
    logged, dom = _chromium(
        chromium, tmp_path, "--enable-logging=stderr", "--v=0", "--dump-dom", page
    )
    console = [line for line in logged.splitlines() if ":CONSOLE" in line]
    assert console == []  # the page logs nothing: no error, no warning, no exception
    assert 'id="timeline"' in dom and 'class="main-svg"' in dom  # plotly drew its SVG
    bars = re.findall(r'<g class="point"><path d="M[^"]+"', dom)
    verdict = json.loads((violated_run / "verdict.json").read_text())
    assert len(bars) >= verdict["counts"]["holds"]  # every hold at least, drawn as a bar
    assert "checker" in dom and "nemesis" in dom  # the lanes' labels
    shot = violated_run / "report.png"
    _chromium(chromium, tmp_path, "--hide-scrollbars", "--window-size=1400,1800",
              f"--screenshot={shot}", page)
    assert shot.stat().st_size > 20_000


def test_a_semaphores_report_draws_its_capacity_line(
    chromium: str, cell_runs: CellRuns, tmp_path: Path
) -> None:
    """Above the lanes, the permits panel: its axis, and the capacity as a dashed line
    across the whole plot, named in the legend; shared holds have their own legend entry."""
    run_dir = cell_runs("lua-semaphore × client-pause")[1].run_dir
    logged, dom = _chromium(chromium, tmp_path, "--enable-logging=stderr", "--v=0",
                            "--dump-dom", (run_dir / "report.html").as_uri())
    assert [line for line in logged.splitlines() if ":CONSOLE" in line] == []
    assert 'data-unformatted="capacity 3"' in dom and 'data-unformatted="held shared"' in dom
    assert 'class="y2title"' in dom and 'data-unformatted="permits"' in dom
    dashed = re.findall(r'<path class="js-line" d="M([\d.]+),([\d.]+)L([\d.]+),([\d.]+)"'
                        r'[^>]*stroke-dasharray', dom)
    [(x0, y0, x1, y1)] = [tuple(map(float, line)) for line in dashed]  # the capacity's only
    panel = re.search(r'data-subplot="xy2"[^>]* width="([\d.]+)"', dom)
    assert panel, "no permits panel"
    assert y0 == y1 and x1 - x0 > 0.95 * float(panel[1])  # level, across the whole window


def _chromium(chromium: str, profile: Path, *args: str) -> tuple[str, str]:
    """Run headless Chromium once (own profile dir: tests may run side by side); returns
    (stderr, stdout). Virtual time lets plotly finish drawing before the DOM is dumped."""
    done = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--host-resolver-rules=MAP * ~NOTFOUND",  # any network load fails, and logs
         f"--user-data-dir={profile / 'chromium'}", "--virtual-time-budget=5000", *args],
        capture_output=True, text=True, timeout=BROWSER_TIMEOUT_S, check=True,
    )
    return done.stderr, done.stdout
