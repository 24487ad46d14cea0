"""How ``lockchaos audit`` plans its budget, and its bad input refused in one line."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from chaos.campaign import Campaign, choose_layout
from chaos.cli import main
from chaos.experiments.audit import (
    CAMPAIGN_SHARE,
    MUST_SURVIVE,
    AuditPlan,
    cell_seconds,
    plan_steps,
    replay_command,
)


def test_plus_faults_add_to_the_defaults_and_plain_ones_replace_them() -> None:
    added = AuditPlan(Campaign("redlock"), faults="+crash-restart-delayed").tested()
    assert [name for name, _ in added] == ["crash-restart-delayed", *MUST_SURVIVE]
    replaced = AuditPlan(Campaign("lua"), faults="latency:latency_ms=30").tested()
    assert replaced == [("latency", {"latency_ms": 30})]
    assert "slow-work" in AuditPlan(Campaign("lua"), faults="latency").assumed_away()


def test_the_plan_fits_the_budget_but_always_tries_every_fault_alone() -> None:
    short = plan_steps(AuditPlan(Campaign("lua"), budget_s=10), extendable=False)
    assert [step.name for step in short] == list(MUST_SURVIVE)
    long = plan_steps(AuditPlan(Campaign("lua-extend"), budget_s=300), extendable=True)
    assert any(step.extend for step in long)
    assert any(len(step.faults) == 2 for step in long)
    assert len(long) * 3.0 <= 300 * CAMPAIGN_SHARE + 1e-9
    lua = Campaign("lua")
    assert cell_seconds(AuditPlan(lua, budget_s=20)) < cell_seconds(AuditPlan(lua))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--budget", "1"], "--budget must be between"),
        (["--faults", "nope"], "unknown fault 'nope'"),
        (["--fail-on", "meh"], "--fail-on must be one of"),
        (["--nodes", "2", "--lock", "redlock"], "redlock"),  # its campaigns' layout refuses it
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", "--lock", "lua", "--out", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not any(tmp_path.iterdir())


def test_nodes_reaches_every_campaign_and_the_replay() -> None:
    """``--nodes`` (a Redlock written as a driver needs it: nothing tells lockchaos its
    lock wants independent masters) sets the masters of every campaign of the audit."""
    plan = AuditPlan(Campaign.from_options("lua", nodes=3, seed=4), budget_s=30)
    for step in plan_steps(plan, extendable=True):
        campaign = plan.campaign(step.faults, seed=plan.base.seed, extend=step.extend, duration_s=1)
        assert choose_layout(campaign).nodes == 3
    words = shlex.split(replay_command(plan))
    assert words[words.index("--nodes") + 1] == "3"
