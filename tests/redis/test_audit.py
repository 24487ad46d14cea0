"""``lockchaos audit`` end to end on real topologies, and how it plans its budget."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from junitparser import JUnitXml

from chaos.cli import main
from chaos.report.audit import AUDIT, load_audit
from chaos.run.audit import CAMPAIGN_SHARE, MUST_SURVIVE, AuditPlan, cell_seconds, plan_steps


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
    assert all(entry["hit_holder"] for entry in record["coverage"].values()), record["coverage"]
    directory = Path(record["audit_dir"])
    page = (directory / "index.html").read_text()
    assert "Assumed away" in page and "failover" in page
    (directory / "index.html").unlink()
    assert main(["report", str(directory)]) == 0  # rebuilt from audit.json alone
    assert (directory / "index.html").read_text() == page


def test_plus_faults_add_to_the_defaults_and_plain_ones_replace_them() -> None:
    added = AuditPlan("redlock", faults="+crash-restart-delayed").tested()
    assert [name for name, _ in added] == ["crash-restart-delayed", *MUST_SURVIVE]
    replaced = AuditPlan("lua", faults="latency:latency_ms=30").tested()
    assert replaced == [("latency", {"latency_ms": 30})]
    assert "slow-work" in AuditPlan("lua", faults="latency").assumed_away()


def test_the_plan_fits_the_budget_but_always_tries_every_fault_alone() -> None:
    short = plan_steps(AuditPlan("lua", budget_s=10), extendable=False)
    assert [step.name for step in short] == list(MUST_SURVIVE)
    long = plan_steps(AuditPlan("lua-extend", budget_s=300), extendable=True)
    assert any(step.extend for step in long)
    assert any(len(step.faults) == 2 for step in long)
    assert len(long) * 3.0 <= 300 * CAMPAIGN_SHARE + 1e-9
    assert cell_seconds(AuditPlan("lua", budget_s=20)) < cell_seconds(AuditPlan("lua"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--budget", "1"], "--budget must be between"),
        (["--faults", "nope"], "unknown fault 'nope'"),
        (["--fail-on", "meh"], "--fail-on must be one of"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", "--lock", "lua", "--out", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not any(tmp_path.iterdir())
