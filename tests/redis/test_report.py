"""Run reports of a real run with a known violation (the truth table's del-release ×
slow-work cell, run once a session: tests/cells.py): report.html explains it, junit.xml fails
with it, ``lockchaos report`` rebuilds both. Rendering in Chromium: tests/browser/; pages of
synthetic histories and bad run directories: tests/pure/test_report_pages.py."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from junitparser import Failure, JUnitXml
from markupsafe import escape

from chaos.cli import main


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
