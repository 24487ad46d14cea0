"""The checker's rules as data (``chaos.checker.rules``): every saved history judged exactly as
before the rules were data, each rule on its own, a rule that raises reported as that rule's
error (never a crash of the verdict, never a green run), and ``lockchaos list --rules``."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import msgspec
import pytest
from test_checker_support import History
from typer.testing import CliRunner

from chaos.campaign import Campaign
from chaos.checker import (
    DEFAULT_LIVENESS_FACTOR,
    EXIT_INCONCLUSIVE,
    VIOLATION_KINDS,
    Verdict,
    Violation,
    check_file,
    exit_status,
    read_timeline,
)
from chaos.checker.judge import judge
from chaos.checker.reader import HistoryReader
from chaos.checker.rules import RULES, Case, Rule
from chaos.cli import app
from chaos.experiments.audit import AuditPlan, AuditResult
from chaos.experiments.audit.judge import TrialResult
from chaos.experiments.audit.plan import Trial
from chaos.experiments.execute import Outcome
from chaos.nemesis.schedule import Schedule
from chaos.report.rundir import save_verdict

HISTORIES = Path(__file__).parent / "histories"
SAVED = sorted(path.name.removesuffix(".jsonl.gz") for path in HISTORIES.glob("*.jsonl.gz"))


def unpacked(name: str, where: Path) -> Path:
    """The saved history ``name``, as the history file a run writes."""
    path = where / "history.jsonl"
    path.write_bytes(gzip.decompress((HISTORIES / f"{name}.jsonl.gz").read_bytes()))
    return path


def test_the_corpus_is_there() -> None:
    assert len(SAVED) >= 25 and all((HISTORIES / f"{n}.verdict.json.gz").exists() for n in SAVED)


@pytest.mark.parametrize("name", SAVED)
def test_every_saved_history_gets_the_verdict_it_got_before_rules_were_data(
        name: str, tmp_path: Path) -> None:
    """Byte for byte the ``verdict.json`` the checker wrote before (tests/pure/histories/
    README.md says where each history comes from)."""
    save_verdict(tmp_path, check_file(unpacked(name, tmp_path)))
    before = gzip.decompress((HISTORIES / f"{name}.verdict.json.gz").read_bytes())
    assert (tmp_path / "verdict.json").read_bytes() == before


@pytest.mark.parametrize("name", SAVED)
def test_each_rule_alone_finds_what_it_finds_among_all(name: str, tmp_path: Path) -> None:
    """A rule reads the history, never another rule's result: applied alone, each finds
    exactly its share of the whole verdict's violations."""
    timeline = read_timeline(HistoryReader(unpacked(name, tmp_path)))
    whole = judge(timeline, liveness_factor=DEFAULT_LIVENESS_FACTOR, notes=[])
    alone = [v for rule in RULES for v in judge(
        timeline, liveness_factor=DEFAULT_LIVENESS_FACTOR, notes=[], rules=(rule,)).violations]
    assert sorted(map(msgspec.json.encode, alone)) == sorted(
        map(msgspec.json.encode, whole.violations))


def test_the_rules_are_data() -> None:
    names = [rule.name for rule in RULES]
    assert len(set(names)) == len(names)
    for rule in RULES:
        assert rule.kinds and set(rule.kinds) <= set(VIOLATION_KINDS), rule.name
        assert rule.summary and "\n" not in rule.summary, rule.name


def overlapping(*, both_valid: bool) -> History:
    """c2 acquires while c1 holds: hard if c1's lease was still valid, else soft."""
    lease = 200 if both_valid else 30
    h = History().acquire("c1", 10, lease=lease).acquire("c2", 50).release("c1", 60)
    return h.release("c2", 90).acquire("c1", 100).release("c1", 110).final_read(200, [])


def _boom(case: Case) -> list[Violation]:
    raise ZeroDivisionError("division by zero")


BROKEN = Rule("broken", ("liveness",), "a rule with a bug", _boom)


def judged(h: History, rules: tuple[Rule, ...], tmp_path: Path) -> Verdict:
    timeline = read_timeline(HistoryReader(h.save(tmp_path / "history.jsonl")))
    return judge(timeline, liveness_factor=DEFAULT_LIVENESS_FACTOR, notes=[], rules=rules)


def test_a_rule_that_raises_is_that_rules_error_and_the_others_still_judge(
        tmp_path: Path) -> None:
    verdict = judged(overlapping(both_valid=True), (*RULES, BROKEN), tmp_path)
    assert verdict.verdict == "hard" and verdict.hard_violations == 1
    assert isinstance(verdict.rule_errors, list)
    [error] = verdict.rule_errors
    assert (error.rule, error.kinds, error.error) == (
        "broken", ["liveness"], "ZeroDivisionError: division by zero")
    assert "_boom" in error.traceback
    assert verdict.inconclusive_reasons[0] == (
        "the checker's rule broken failed (ZeroDivisionError: division by zero): liveness "
        "violations were not looked for")
    assert exit_status(verdict, "hard") == 1  # a violation is evidence, whatever else failed
    saved = json.loads(json.dumps(verdict.to_dict()))
    assert saved["rule_errors"][0]["rule"] == "broken"
    assert msgspec.convert(saved, Verdict) == verdict  # verdict.json reads back


@pytest.mark.parametrize("both_valid", [False, True])
def test_a_broken_rule_never_makes_a_run_green(both_valid: bool, tmp_path: Path) -> None:
    """Below the gate (a soft overlap, --fail-on hard) or with nothing found, a run one of
    whose rules raised is inconclusive — even with --allow-inconclusive, which excuses a run
    that did not exercise the lock, not a checker that did not judge it."""
    h = overlapping(both_valid=False) if both_valid else History().acquire("c1", 10).release(
        "c1", 20).acquire("c2", 30).release("c2", 40).final_read(100, [])
    sound = judged(h, RULES, tmp_path)
    assert exit_status(sound, "hard") == 0
    verdict = judged(h, (*RULES, BROKEN), tmp_path)
    assert verdict.verdict == ("soft" if both_valid else "inconclusive")
    assert exit_status(verdict, "hard") == EXIT_INCONCLUSIVE
    assert exit_status(verdict, "hard", allow_inconclusive=True) == EXIT_INCONCLUSIVE


def test_a_rule_that_finds_a_kind_it_does_not_declare_is_broken(tmp_path: Path) -> None:
    overlaps = RULES[0]
    liar = Rule("liar", ("soft",), "claims soft, finds hard", overlaps.check)
    verdict = judged(overlapping(both_valid=True), (liar,), tmp_path)
    assert verdict.violations == [] and verdict.verdict == "inconclusive"
    assert isinstance(verdict.rule_errors, list)
    assert verdict.rule_errors[0].error == (
        "ValueError: it found hard violations, which it does not declare (soft)")


def test_without_a_rule_error_the_verdict_has_no_such_field(tmp_path: Path) -> None:
    verdict = judged(overlapping(both_valid=True), RULES, tmp_path)
    assert "rule_errors" not in verdict.to_dict()
    assert not verdict.rule_errors


def test_a_rule_that_cannot_judge_says_why_once() -> None:
    """Both liveness rules need the TTL: one note, as before rules were data."""
    verdict = History(ttl_ms=None).acquire("c1", 10).release("c1", 20).check()
    assert verdict.notes.count("the start event has no ttl_ms: liveness was not judged") == 1
    assert not verdict.rule_errors


def test_list_shows_the_rules() -> None:
    result = CliRunner().invoke(app, ["list", "--rules", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"rules": [
        {"name": rule.name, "kinds": list(rule.kinds), "summary": rule.summary}
        for rule in RULES]}
    everything = CliRunner().invoke(app, ["list", "--json"])
    assert json.loads(everything.output)["rules"] == json.loads(result.output)["rules"]
    table = CliRunner().invoke(app, ["list", "--rules"], env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    rows = [line for line in table.output.splitlines() if line.startswith("│")]
    assert [row.split("│")[1].strip() for row in rows] == [rule.name for rule in RULES]
    assert "locks" not in table.output


def test_a_rule_that_failed_in_an_audits_campaign_keeps_the_audit_from_passing(
        tmp_path: Path) -> None:
    """The audit's verdict reads each run's rule errors: a campaign whose checker rule raised
    did not look for that rule's violations, so the audit cannot pass on it (it built its own
    reasons and passed, exit 0, before)."""
    h = History().fault("f1", "client-pause", 15, 25, target={"client": "c1"})
    h = h.acquire("c1", 10).release("c1", 40).acquire("c2", 50).release("c2", 60)
    h.acquire("c1", 70).release("c1", 80).final_read(100, [])
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    plan = AuditPlan(Campaign("lua"), selection="client-pause")
    trial = Trial(faults=[("client-pause", {})])
    for rules, reasons, status in (
            (RULES, [], 0),
            ((*RULES, BROKEN), ["client-pause: the checker's rule broken failed "
                                "(ZeroDivisionError: division by zero): liveness violations "
                                "were not looked for"], 3)):
        verdict = judged(h, rules, run_dir)
        assert verdict.coverage["client-pause"].effective
        outcome = Outcome(run_dir, verdict, Schedule(1, ()), 3, [])
        result = AuditResult(plan, tmp_path, trials=[TrialResult(trial, outcome, 0.0)])
        assert (result.inconclusive_reasons, result.exit_status) == (reasons, status)
