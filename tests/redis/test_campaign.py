"""`lockchaos run` end to end on real topologies (the pure parts of campaigns:
tests/pure/test_campaign_plan.py)."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import msgspec
import pytest
from cells import CellRuns
from run_parsing import parse_run
from surface_locks import LATE_FROM, LATE_S

from chaos import checker
from chaos.campaign import Campaign, CampaignFile
from chaos.cli import main
from chaos.experiments.execute import run_campaign
from chaos.report import load_run
from chaos.topology.node import wait_until
from chaos.topology.processes import alive


def _run_dir(out: Path) -> Path:
    (run_dir,) = out.iterdir()
    return run_dir


MY_LOCK = """
from chaos.locks.contract import Lease

class MyLock:
    def __init__(self, ctx):
        self.ctx, self.r = ctx, ctx.primary

    def acquire(self):
        token = self.ctx.new_token()
        if self.r.set(self.ctx.lock_name, token, nx=True, px=self.ctx.ttl_ms):
            return Lease(token)
        return None

    def release(self, lease):
        return bool(self.r.delete(self.ctx.lock_name))

def make_lock(ctx):
    return MyLock(ctx)
"""


def test_a_users_own_lock_module_runs_finds_a_hard_violation_and_leaves_a_rederivable_run_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A lock module of the user's own, releasing with a plain DEL: under slow work it is the
    seeds' "A releases B's lock" (the truth table's del-release × slow-work, which
    tests/redis/test_truth_table.py runs): `lockchaos run` exits 1, prints the verdict, and
    leaves a run directory the checker re-derives the same verdict from."""
    (tmp_path / "mylocks.py").write_text(MY_LOCK)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "mylocks", raising=False)
    out = tmp_path / "runs"
    code = main(
        ["run", "--lock", "mylocks:make_lock", "--faults", "slow-work", "--duration", "8",
         "--stop-on-first", "--out", str(out), "--json"]
    )  # fmt: skip
    assert code == 1
    printed = json.loads(capsys.readouterr().out)
    run_dir = _run_dir(out)
    assert printed["run_dir"] == str(run_dir)
    assert {p.name for p in run_dir.iterdir()} >= {
        "history.jsonl",
        "verdict.json",
        "schedule.json",
        "campaign.json",
    }
    saved = json.loads((run_dir / "verdict.json").read_text())
    assert saved["verdict"] == printed["verdict"] == "hard"
    assert "released" in saved["explanations"][0]
    again = checker.check_file(run_dir / "history.jsonl").to_dict()
    assert again["hard_violations"] == saved["hard_violations"]
    assert main(["check-history", str(run_dir / "history.jsonl")]) == 1


def test_fail_on_chooses_what_fails_the_run(cell_runs: CellRuns) -> None:
    """One run's verdict against two thresholds (a seed does not replay the same timing: a
    second run could find no soft overlap at all): lua under slow work, the truth table's
    "soft only, lost writes" cell, fails the run at --fail-on soft and passes it at hard."""
    _, outcome = cell_runs("lua × slow-work")
    verdict = outcome.verdict
    assert verdict.soft_violations > 0 and verdict.hard_violations == 0
    assert not checker.fails(verdict, "hard") and checker.fails(verdict, "soft")
    assert (outcome.fail_on, outcome.exit_status) == ("hard", 0)
    assert replace(outcome, fail_on="soft").exit_status == 1


def _words(replay: str) -> list[str]:
    words = shlex.split(replay)
    assert words[:2] == ["lockchaos", "run"], replay
    return words[2:]


def test_a_runs_replay_command_rebuilds_its_campaign(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replay a report prints, parsed back by `lockchaos run`, is the campaign that ran:
    every option that changes a run survives (faults with their explicit parameters too)."""
    campaign = Campaign.from_options(
        "lua",
        "latency:latency_ms=30:duration_ms=300,reset:toxicity=0.5",
        topology="standalone",
        nodes=1,
        clients=2,
        duration_s=1.5,
        ttl_ms=150,
        work_ms=20.0,
        seed=7,
        stop_on_first=True,
        fail_on="soft",
        extend_during_work=False,
    )
    record = load_run(run_campaign(campaign, tmp_path).run_dir)
    replay = record.replay()
    assert replay is not None
    assert parse_run(_words(replay), monkeypatch) == campaign

    # Where the topology ran (docker, or the servers an external provider's file names) is
    # part of the run too: a replay of such a run must not quietly rerun it locally.
    elsewhere = msgspec.structs.replace(
        campaign, provider="external", provider_config="/etc/lc/ext.toml", topology="sentinel",
        nodes=None, extend_during_work=True, allow_inconclusive=True, nest_depth=2,
        server="valkey-8.1", capacity=2, renews=True, faults_in_order=True,
    )
    moved = replace(record, campaign=CampaignFile(**msgspec.structs.asdict(elsewhere)))
    moved_replay = moved.replay()
    assert moved_replay is not None
    assert parse_run(_words(moved_replay), monkeypatch) == elsewhere

    # The two campaigns between them set every field away from its default, so an option
    # the replay dropped would come back as the default and fail one comparison above.
    default = Campaign(campaign.lock)
    changed = {
        name
        for name in Campaign.__struct_fields__
        for c in (campaign, elsewhere)
        if getattr(c, name) != getattr(default, name)
    }
    assert changed == set(Campaign.__struct_fields__) - {"lock"}


def _children(pid: int) -> list[int]:
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(stat.parent.name))
    return kids


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_nothing_outlives_a_killed_run(tmp_path: Path, sig: signal.Signals) -> None:
    runner = subprocess.Popen(
        [sys.executable, "-m", "chaos.cli", "run", "--lock", "lua", "--faults", "latency",
         "--duration", "60", "--out", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_until(
            lambda: any(p.stat().st_size > 10_000 for p in tmp_path.glob("*/history.jsonl")),
            "the run to be under way",
            timeout_s=30,
        )
        children = _children(runner.pid)
        assert len(children) >= 5 + 3  # workers, redis nodes, toxiproxy, reaper
    finally:
        runner.send_signal(sig)
        runner.wait(timeout=30)
    wait_until(lambda: not any(alive(pid) for pid in children), "children to die", timeout_s=15)
    if sig == signal.SIGTERM:
        assert runner.returncode == 128 + signal.SIGTERM


def test_stop_on_first_does_not_call_an_outage_in_progress_wedged_for_good(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lock nobody can take for 2.5 s (over 10 TTLs, with no fault on) that then grants
    again: checked mid-run, the outage reaches the history's end and reads as wedged for
    good. Stopping there would end the run on that verdict, which fails every gate; the run
    goes on, sees the grants, and the outage is the liveness violation it was."""
    monkeypatch.setenv(LATE_FROM, str(tmp_path / "first-acquire"))
    campaign = Campaign("surface_locks:late_start", duration_s=LATE_S + 2, stop_on_first=True)
    outcome = run_campaign(campaign, tmp_path / "out")
    verdict = outcome.verdict
    assert not verdict.wedged, verdict.explanations[:3]
    assert verdict.counts["holds"] > 0 and outcome.exit_status == 0, verdict.explanations[:3]
