"""`lockchaos run` end to end on real topologies, and the pure parts of campaigns."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import textwrap
from dataclasses import asdict, fields, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chaos import checker
from chaos.cli import main
from chaos.commands import run as run_command
from chaos.errors import UsageError
from chaos.nemesis import FAULTS, generate, parse_faults
from chaos.report import load_run
from chaos.run.campaign import Campaign, Outcome, choose_layout, run_campaign
from chaos.topology.node import wait_until
from chaos.topology.processes import alive


def _run_dir(out: Path) -> Path:
    (run_dir,) = out.iterdir()
    return run_dir


def test_run_finds_a_hard_violation_exits_1_and_leaves_a_rederivable_run_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["run", "--lock", "del-release", "--faults", "slow-work", "--duration", "8",
         "--stop-on-first", "--out", str(tmp_path), "--json"]
    )  # fmt: skip
    assert code == 1
    printed = json.loads(capsys.readouterr().out)
    run_dir = _run_dir(tmp_path)
    assert printed["run_dir"] == str(run_dir)
    assert {p.name for p in run_dir.iterdir()} >= {
        "history.jsonl",
        "verdict.json",
        "schedule.json",
        "campaign.json",
    }
    saved = json.loads((run_dir / "verdict.json").read_text())
    assert saved["verdict"] == printed["verdict"] == "hard"
    again = checker.check_file(run_dir / "history.jsonl").to_dict()
    assert again["hard_violations"] == saved["hard_violations"]
    assert main(["check-history", str(run_dir / "history.jsonl")]) == 1


def test_fail_on_chooses_what_fails_the_run(tmp_path: Path) -> None:
    args = ["run", "--lock", "lua", "--faults", "slow-work", "--duration", "3", "--seed", "2"]
    assert main([*args, "--out", str(tmp_path / "a"), "--fail-on", "hard"]) == 0
    assert main([*args, "--out", str(tmp_path / "b"), "--fail-on", "soft"]) == 1


def test_a_users_own_lock_module_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mylocks.py").write_text(
        textwrap.dedent(
            """
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
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "mylocks", raising=False)
    out = tmp_path / "runs"
    code = main(
        ["run", "--lock", "mylocks:make_lock", "--faults", "slow-work", "--duration", "8",
         "--stop-on-first", "--out", str(out)]
    )  # fmt: skip
    assert code == 1  # it releases with a plain DEL: the seeds' "A releases B's lock"
    verdict = json.loads((_run_dir(out) / "verdict.json").read_text())
    assert "released" in verdict["explanations"][0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--lock", "redlock", "--faults", "failover"], "needs a master with replicas"),
        (["--lock", "lua", "--faults", "failover", "--topology", "standalone"], "sentinel"),
        (["--lock", "lua", "--faults", "bogus"], "unknown fault 'bogus'"),
        (["--lock", "lua", "--faults", "latency:fast"], "key=value"),
        (["--lock", "nope"], "unknown lock 'nope'"),
        (["--lock", "lua", "--ttl-ms", "0"], "--ttl-ms"),
        (["--lock", "lua", "--clients", "0"], "--clients"),
        (["--lock", "lua", "--fail-on", "bad"], "--fail-on"),
        (["--lock", "redlock", "--nodes", "2"], "redlock"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert main(["run", *args, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not any(tmp_path.iterdir())  # nothing started, nothing written


class _Parsed(Exception):
    """Raised by the stand-in campaign runner: the command line parsed into ``campaign``."""

    def __init__(self, campaign: Campaign) -> None:
        super().__init__(campaign)
        self.campaign = campaign


def _parse_replay(replay: str, monkeypatch: pytest.MonkeyPatch) -> Campaign:
    """The Campaign that ``lockchaos run`` builds from a printed replay command (through
    its real option parsing), caught just before it would run."""

    def parsed(campaign: Campaign, out: Path, schedule: object = None) -> Outcome:
        raise _Parsed(campaign)

    words = shlex.split(replay)
    assert words[:2] == ["lockchaos", "run"], replay
    with monkeypatch.context() as patch:
        patch.setattr(run_command, "run_campaign", parsed)
        with pytest.raises(_Parsed) as caught:
            main(words[1:])
    return caught.value.campaign


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
    assert _parse_replay(replay, monkeypatch) == campaign

    # Where the topology ran (docker, or the servers an external provider's file names) is
    # part of the run too: a replay of such a run must not quietly rerun it locally.
    elsewhere = replace(campaign, provider="external", provider_config="/etc/lc/ext.toml",
                        topology="sentinel", nodes=None, extend_during_work=True,
                        allow_inconclusive=True, nest_depth=2, server="valkey-8.1")
    moved = replace(record, campaign=json.loads(json.dumps(asdict(elsewhere))))
    moved_replay = moved.replay()
    assert moved_replay is not None
    assert _parse_replay(moved_replay, monkeypatch) == elsewhere

    # The two campaigns between them set every field away from its default, so an option
    # the replay dropped would come back as the default and fail one comparison above.
    default = Campaign(campaign.lock)
    changed = {
        f.name
        for f in fields(Campaign)
        for c in (campaign, elsewhere)
        if getattr(c, f.name) != getattr(default, f.name)
    }
    assert changed == {f.name for f in fields(Campaign)} - {"lock"}


def test_layout_follows_the_lock_and_the_faults() -> None:
    assert choose_layout(Campaign("redlock")).nodes == 5
    assert choose_layout(Campaign("lua", parse_faults("failover"))).kind == "sentinel"
    assert choose_layout(Campaign("lua", parse_faults("crash-restart-aof"))).persistence == (
        "aof-always"
    )
    layout = choose_layout(Campaign("lua", parse_faults("latency")))
    assert (layout.kind, layout.nodes, layout.persistence) == ("standalone", 1, "none")


def test_parse_faults_reads_overrides() -> None:
    assert parse_faults("latency, client-crash:command=*:nth=2:op=acquire") == [
        ("latency", {}),
        ("client-crash", {"command": "*", "nth": 2, "op": "acquire"}),
    ]
    with pytest.raises(UsageError):
        parse_faults("latency:=3")


fault_names = st.lists(st.sampled_from(sorted(FAULTS)), min_size=1, max_size=4, unique=True)


@given(names=fault_names, seed=st.integers(0, 2**32), duration=st.floats(1, 60))
def test_same_seed_same_schedule(names: list[str], seed: int, duration: float) -> None:
    faults: list[tuple[str, dict[str, Any]]] = [(name, {}) for name in names]
    first = generate(faults, seed=seed, duration_s=duration, ttl_ms=200)
    assert first == generate(faults, seed=seed, duration_s=duration, ttl_ms=200)
    assert first.events, "a run always gets at least one fault"
    assert all(0 < e.at_s < duration for e in first.events)
    times = [e.at_s for e in first.events]
    assert times == sorted(times)
    assert {e.fault for e in first.events} <= set(names)


def test_different_seeds_give_different_schedules() -> None:
    faults: list[tuple[str, dict[str, Any]]] = [("latency", {}), ("partition", {})]
    schedules = {
        json.dumps(generate(faults, seed=s, duration_s=20, ttl_ms=200).to_json())
        for s in range(10)
    }
    assert len(schedules) == 10


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
