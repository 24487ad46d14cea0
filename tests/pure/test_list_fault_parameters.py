"""``lockchaos list`` shows every parameter a fault takes and the default it applies: a driver
author should not learn them from an error (issue 20)."""

from __future__ import annotations

import json
import random

from typer.testing import CliRunner

from chaos.cli import app
from chaos.nemesis import FAULTS


def _listed() -> dict[str, dict[str, dict[str, str]]]:
    result = CliRunner().invoke(app, ["list", "--json"])
    assert result.exit_code == 0, result.output
    return {
        fault["name"]: {row["name"]: row for row in fault["parameters"]}
        for fault in json.loads(result.output)["faults"]
    }


def test_every_fault_lists_every_parameter_it_takes_and_draws() -> None:
    listed = _listed()
    assert set(listed) == set(FAULTS)
    for name, fault in FAULTS.items():
        assert set(listed[name]) == set(fault.parameters), name
        drawn = fault.params(random.Random(1), 1000)
        assert set(drawn) <= set(fault.parameters), f"{name} draws a parameter it does not take"
        for key, param in fault.parameters.items():
            assert listed[name][key]["values"] == param.describe()


def test_defaults_read_as_what_a_run_applies() -> None:
    listed = _listed()
    assert listed["client-pause"]["duration_ms"]["default"] == "1.5–3×TTL, drawn"
    assert listed["client-pause-at"]["command"]["default"] == "DEL"
    assert listed["client-pause-at"]["nth"]["default"] == "not set"
    assert listed["partition"]["scope"]["default"] == "one of majority, minority, one, drawn"
    assert listed["reset"]["toxicity"]["default"] == "0.5"  # a constant, not a share of the TTL
    assert listed["client-clock"]["skew_ms"]["default"] == "4×TTL"
    assert listed["clock-jump"]["offset_ms"]["default"] == "±1.5–3×TTL, drawn"
    assert listed["client-crash"]["nth"]["default"] == "2 (in about 50% of occurrences)"


def test_the_table_has_a_row_per_fault_parameter() -> None:
    result = CliRunner().invoke(app, ["list"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "fault parameters" in result.output
    rows = [line for line in result.output.splitlines() if "promote_timeout_ms" in line]
    assert len(rows) == 1 and "failover" in rows[0] and "8000" in rows[0]
