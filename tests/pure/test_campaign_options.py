"""The campaign declared once (``chaos.campaign.spec``): the commands' options, validation,
``campaign.json`` and the replay command all come from it. Pure: nothing here starts Redis."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import click
import msgspec
import pytest
import typer
from run_parsing import parse_run
from typer.testing import CliRunner

from chaos.campaign import (
    KNOBS,
    Campaign,
    CampaignFile,
    Layout,
    choose_layout,
    load_campaign,
    save_campaign,
)
from chaos.checker import check_file
from chaos.cli import app, main
from chaos.experiments.audit import AUDIT_OPTIONS
from chaos.history import Event, write_history
from chaos.pytest_plugin import PLUGIN_FLAGS
from chaos.report import load_run

# Every field away from its default (a replay that dropped one would come back as the default).
EVERYTHING = Campaign(
    lock="lua", faults=[("latency", {"latency_ms": 30}), ("reset", {})], faults_in_order=True,
    topology="sentinel",
    provider="external", provider_config="/etc/lc/ext.toml", server="valkey-8.1", nodes=3,
    clients=2, duration_s=1.5, ttl_ms=150, work_ms=20.0, nest_depth=2, seed=7,
    stop_on_first=True, fail_on="soft", allow_inconclusive=True, extend_during_work=False,
    capacity=2, renews=True,
)


def test_every_field_is_declared_with_its_knob() -> None:
    assert list(KNOBS) == list(Campaign.__struct_fields__)
    assert {name for name in Campaign.__struct_fields__ if name != "lock"} == {
        name for name in Campaign.__struct_fields__
        if getattr(EVERYTHING, name) != getattr(Campaign("lua"), name)
    }


def _command(name: str) -> click.Command:
    group = typer.main.get_command(app)
    assert isinstance(group, click.Group)
    return group.commands[name]


@pytest.mark.parametrize(
    ("command", "names"),
    [("run", tuple(KNOBS)), ("audit", AUDIT_OPTIONS),
     ("explore", ("lock", "faults", "topology", "nodes", "provider", "server", "ttl_ms")),
     ("compare", ("duration_s", "provider", "provider_config", "server", "capacity"))],
)
def test_each_commands_campaign_options_come_from_the_declaration(
    command: str, names: tuple[str, ...]
) -> None:
    """A field a command takes is an option with the knob's flag (and, unless the command
    says otherwise, its help); ``run`` takes every field, so a new one shows in its --help."""
    options = {opt: param for param in _command(command).params for opt in param.opts}
    for name in names:
        knob = KNOBS[name]
        assert knob.flag in options, (command, knob.flag)
        if knob.off:
            assert knob.off in options[knob.flag].secondary_opts
    run_help = {param.name: param for param in _command("run").params}
    for name, knob in KNOBS.items():
        assert getattr(run_help[name], "help", None) == knob.help


def test_the_pytest_plugin_takes_its_campaign_options_from_the_declaration(
    tmp_path: Path
) -> None:
    shown = subprocess.run([sys.executable, "-m", "pytest", "--help"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=60, check=True).stdout
    flat = " ".join(shown.split())
    for name, flag in PLUGIN_FLAGS.items():
        assert flag in flat and " ".join(KNOBS[name].help.split()) in flat, flag
    assert "--lockchaos-provider={local,docker,external}" in flat


def test_audit_and_explore_pick_their_own_defaults() -> None:
    defaults = {param.name: param.default for param in _command("explore").params}
    assert defaults["clients"] == 2 and defaults["ttl_ms"] == 50
    assert "nodes" in {param.name for param in _command("audit").params}


def test_the_optional_extend_flag_does_not_claim_a_default_it_does_not_have() -> None:
    """``run --help`` said ``[default: no-extend-during-work]`` next to "extend is on"."""
    result = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    # The option, then its help (under it: the flag is longer than the first column).
    shown = result.output.split("--extend-during-work", 1)[1].split("\n  --", 1)[0]
    assert "default: when the lock has one" in shown and "[default:" not in shown


def _bad_values() -> list[tuple[str, str, str]]:
    """(flag, a value it refuses, what the one line says): from the knobs' own bounds."""
    cases = []
    for knob in KNOBS.values():
        if knob.choices:
            cases.append((knob.flag, "nope", f"{knob.flag} must be one of"))
        if knob.high is not None:
            cases.append((knob.flag, str(knob.high + 1), f"{knob.flag} must be between"))
        if knob.low is not None:
            low = knob.low if knob.above else knob.low - 1
            cases.append((knob.flag, f"{low:g}", f"{knob.flag} must be between"))
    return cases


@pytest.mark.parametrize(("flag", "value", "message"), _bad_values())
def test_a_value_out_of_its_bounds_is_one_line_and_exit_2(
    flag: str, value: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--lock", "lua", flag, value, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and message in err[0] and f"(got {value}" in err[0].replace("'", "")
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("faults", [[], ["--faults", "latency"]])
def test_faults_in_order_without_two_faults_is_one_line_and_exit_2(
    faults: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An order asked for one fault (or none) would do nothing: refused, never ignored."""
    assert main(["run", "--lock", "lua", *faults, "--faults-in-order",
                 "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "--faults-in-order needs two faults or more" in err[0], err
    assert not any(tmp_path.iterdir())


def test_an_unknown_option_in_the_api_is_one_line() -> None:
    with pytest.raises(Exception, match="no option 'clientz'"):
        Campaign.from_options("lua", clientz=3)


def test_the_replay_words_parse_back_to_the_same_campaign(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    assert parse_run(EVERYTHING.options(), monkeypatch) == EVERYTHING
    plain = Campaign("redlock")
    assert parse_run(plain.options(), monkeypatch) == plain
    assert "--nodes" not in plain.options() and "--faults" not in plain.options()


def test_campaign_json_round_trips(tmp_path: Path) -> None:
    layout = Layout("sentinel", 3, "none")
    save_campaign(tmp_path, EVERYTHING, layout, {"lockchaos/redis:7.0": "sha256:ab"})
    loaded = load_campaign(tmp_path)
    assert loaded == CampaignFile(**msgspec.structs.asdict(EVERYTHING), layout=layout,
                                  images={"lockchaos/redis:7.0": "sha256:ab"})
    unset = Campaign("lua", ttl_ms=400)
    save_campaign(tmp_path, unset, layout, {})
    ran = load_campaign(tmp_path)
    assert ran is not None and ran.work_ms == 100.0  # as the holders worked: a quarter TTL


# campaign.json as the version before the declaration wrote it (json.dumps of a dataclass).
OLD_CAMPAIGN = {
    "lock": "lua", "faults": [["client-crash", {"nth": 2}]], "topology": "standalone",
    "nodes": None, "clients": 3, "duration_s": 3.0, "ttl_ms": 200, "work_ms": 50.0, "seed": 4,
    "stop_on_first": True, "fail_on": "hard", "allow_inconclusive": False,
    "extend_during_work": False, "provider": "local", "provider_config": None,
    "nest_depth": 1, "server": None,
    "layout": {"kind": "standalone", "nodes": 1, "persistence": "none"}, "images": {},
}


def _run_dir(directory: Path) -> Path:
    """A run directory of two clean lock cycles (the report is pure: files in, pages out)."""
    ms = 1_000_000
    events = [Event(t=0, type="info", process="harness", f="start",
                    value={"lock": "lua", "ttl_ms": 200, "clients": ["c1"]})]
    for i in range(2):
        t = (i + 1) * 10 * ms
        events += [
            Event(t=t, type="invoke", process="c1", f="acquire"),
            Event(t=t + ms, type="ok", process="c1", f="acquire", token=f"k{i}",
                  valid_until=t + 200 * ms),
            Event(t=t + 2 * ms, type="invoke", process="c1", f="release", token=f"k{i}"),
            Event(t=t + 3 * ms, type="ok", process="c1", f="release", token=f"k{i}"),
        ]
    write_history(directory / "history.jsonl", events)
    verdict = check_file(directory / "history.jsonl")
    (directory / "verdict.json").write_text(json.dumps(verdict.to_dict()))
    return directory


def test_an_old_campaign_json_still_reports_and_replays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = _run_dir(tmp_path)
    (run_dir / "campaign.json").write_text(json.dumps(OLD_CAMPAIGN, indent=2))
    assert main(["report", str(run_dir)]) == 0
    capsys.readouterr()
    replay = load_run(run_dir).replay()
    assert replay is not None and replay.startswith("lockchaos run ")
    assert replay in (run_dir / "report.html").read_text().replace("&#39;", "'")
    again = parse_run(shlex.split(replay)[2:], monkeypatch)
    assert again == Campaign.from_options(
        "lua", "client-crash:nth=2", topology="standalone", clients=3, duration_s=3.0,
        work_ms=50.0, seed=4, stop_on_first=True, extend_during_work=False,
    )
    assert choose_layout(again) == Layout("standalone", 1, "none")


def test_a_run_without_a_readable_campaign_json_still_reports(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path)
    (run_dir / "campaign.json").write_text('{"lock": 3}')
    assert load_run(run_dir).replay() is None
    assert main(["report", str(run_dir)]) == 0
