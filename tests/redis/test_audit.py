"""``lockchaos audit`` end to end on real topologies (how it plans its budget, and its bad
input: tests/pure/test_audit_plan.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from junitparser import JUnitXml

from chaos.cli import main
from chaos.experiments.audit import MUST_SURVIVE
from chaos.report.audit_page import AUDIT, load_audit


def _audit_dir(out: Path) -> Path:
    (directory,) = out.iterdir()
    return directory


def test_a_broken_lock_fails_the_audit_fast_with_the_explanation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["audit", "--lock", "del-release", "--budget", "30", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "audit: hard" in out and "released" in out
    directory = _audit_dir(tmp_path)
    audit = load_audit(directory / AUDIT)
    assert audit.verdict == "hard" and audit.failed
    assert audit.first_hard_s is not None and audit.first_hard_s < 30
    assert audit.runs[0].verdict == "hard"
    assert (directory / audit.runs[0].report).is_file()  # every run links its own report
    assert audit.skipped, "a hard violation ends the audit unless --full"
    suite = JUnitXml.fromfile(str(directory / "junit.xml"))
    assert suite.failures >= 1 and suite.skipped == len(audit.skipped) + 1  # + explore
    assert out.strip().splitlines()[-1].endswith("index.html")


def test_a_sound_lock_passes_and_says_what_was_assumed_away(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["audit", "--lock", "lua", "--budget", "60", "--topology", "standalone",
                 "--out", str(tmp_path), "--json"])
    record = json.loads(capsys.readouterr().out)
    assert code == 0, record
    assert record["verdict"] in ("ok", "soft", "data")  # lua × slow work loses writes
    assert record["tested"] == list(MUST_SURVIVE)
    assert "failover" in record["assumed_away"] and "crash-restart" in record["assumed_away"]
    assert len(record["runs"]) >= len(MUST_SURVIVE)  # every fault at least once
    assert set(record["coverage"]) == set(MUST_SURVIVE)
    assert all(entry["effective"] for entry in record["coverage"].values()), record["coverage"]
    directory = Path(record["audit_dir"])
    page = (directory / "index.html").read_text()
    assert "Assumed away" in page and "failover" in page
    (directory / "index.html").unlink()
    assert main(["report", str(directory)]) == 0  # rebuilt from audit.json alone
    assert (directory / "index.html").read_text() == page


