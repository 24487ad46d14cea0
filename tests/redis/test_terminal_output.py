"""What lockchaos prints survives a CI log: at 80 columns with no terminal, no token — a
path, a lock's or a fault's name, ``client-pause-at:command=DEL``, an image tag — is broken
across lines (``redis-se|rver``, ``lockchaos/redis:7.|0``, ``crash-restart-del|ayed``), and a
command to paste (``replay: …``) stands on one line. Each command's output at 80 columns
must hold only tokens its output at 1000 columns (where nothing wraps) holds; a CJK
character is a token of its own (those scripts break between any two)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chaos.campaign import Campaign
from chaos.cli import app
from chaos.commands.audit import print_audit
from chaos.commands.doctor import diagnose, print_report
from chaos.commands.explore import print_result
from chaos.commands.run import print_summary
from chaos.experiments.audit import AuditPlan, run_audit
from chaos.experiments.execute import run_campaign
from chaos.explore import ExploreResult, Program, Step, replay
from chaos.explore.machine import Failure
from chaos.explore.rundir import REPLAY, write_run_dir
from chaos.report.audit_page import AUDIT, load_audit

NARROW, WIDE = 80, 1000
_DRAWN = re.compile("[\u2500-\u257f\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


def tokens(text: str) -> set[str]:
    """The words of ``text``, without table borders, CJK and the punctuation around words."""
    return {word.strip(",.;:()[]'\"…") for word in _DRAWN.sub(" ", text).split()} - {""}


def broken(narrow: str, wide: str) -> list[str]:
    """Tokens printed at 80 columns that the unwrapped output does not hold: halves of one."""
    return sorted(tokens(narrow) - tokens(wide))


def _cli(*args: str, columns: int) -> str:
    """What ``lockchaos ARGS`` prints with no terminal and ``COLUMNS`` set (in-process)."""
    return CliRunner().invoke(app, list(args), env={"COLUMNS": str(columns)}).stdout


@pytest.mark.parametrize("args", [
    ("--help",), ("run", "--help"), ("audit", "--help"), ("explore", "--help"),
    ("compare", "--help"), ("driver", "new", "--help"), ("list",), ("list", "--locks"),
    ("list", "--faults"), ("list", "--rules"),
], ids=" ".join)
def test_a_command_breaks_no_token_at_80_columns(args: tuple[str, ...]) -> None:
    narrow, wide = _cli(*args, columns=NARROW), _cli(*args, columns=WIDE)
    assert narrow.strip() and not broken(narrow, wide), broken(narrow, wide)


def test_doctor_breaks_no_token_at_80_columns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its paths (``/…/.cache/redis/bin/redis-server``), image tags and drivers' locks."""
    report = diagnose()
    narrow, wide = _printed(capsys, monkeypatch, lambda: print_report(report))
    assert "lockchaos/redis:7.0" in narrow and not broken(narrow, wide), broken(narrow, wide)


def _printed(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
             show: Callable[[], None]) -> tuple[str, str]:
    """What ``show`` prints at 80 columns and at 1000, with no terminal."""
    printed = []
    for columns in (NARROW, WIDE):
        monkeypatch.setenv("COLUMNS", str(columns))
        show()
        printed.append(capsys.readouterr().out)
    return printed[0], printed[1]


def test_run_audit_and_explore_break_no_token_and_print_commands_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run, an audit and an exploration of GET-then-DEL (each finds it broken: the most
    the summaries print), each shown at 80 columns and at 1000."""
    outcome = run_campaign(Campaign.from_options(
        "get-then-del", "client-pause-at", duration_s=3.0, stop_on_first=True), tmp_path)
    narrow, wide = _printed(capsys, monkeypatch, lambda: print_summary(outcome))
    assert str(outcome.run_dir) in narrow and not broken(narrow, wide), broken(narrow, wide)

    # The CLI's 60 s: at 20 a loaded machine ran 2 of the 15 campaigns that come first, none
    # the pause before the release's DEL that finds it (it stops at the first hard one).
    result = run_audit(AuditPlan(Campaign("get-then-del"), budget_s=60), tmp_path / "audit")
    record = load_audit(result.directory / AUDIT)
    narrow, wide = _printed(capsys, monkeypatch, lambda: print_audit(record, result.directory))
    assert not broken(narrow, wide), broken(narrow, wide)
    assert f"  replay: {record.replay}" in narrow.splitlines()
    assert narrow.splitlines()[0].startswith("audit: get-then-del fails")

    program = Program(lock="get-then-del", ttl_ms=300, clients=2, topology="standalone",
                      nodes=1, steps=(
        Step("contend", params={"order": ["c1", "c2"]}),
        Step("release", "c1", ref="f1", params={"command": "DEL", "op": "release"}),
        Step("sleep", ttls=1.5), Step("contend", params={"order": ["c2", "c1"]})))
    history = tmp_path / "found.jsonl"
    verdict, outcomes = replay(program, history_path=history)
    failure = Failure(program, outcomes, verdict, history.read_bytes())
    campaign = Campaign(lock="get-then-del", ttl_ms=300, clients=2)
    run_dir = write_run_dir(tmp_path / "explore", campaign, failure, {})
    found = ExploreResult(campaign, 1, 1.0, failure, 1.0, run_dir=run_dir)
    narrow, wide = _printed(capsys, monkeypatch, lambda: print_result(found))
    assert not broken(narrow, wide), broken(narrow, wide)
    assert f"replay:  pytest {run_dir / REPLAY}" in narrow.splitlines()
