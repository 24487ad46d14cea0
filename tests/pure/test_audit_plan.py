"""How ``lockchaos audit`` plans its budget, and its bad input refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos.cli import main
from chaos.run.audit import CAMPAIGN_SHARE, MUST_SURVIVE, AuditPlan, cell_seconds, plan_steps


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
