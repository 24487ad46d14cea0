"""`lockchaos run` on locks that cannot be tested, or are buggy, end to end on real processes
(issue 12): exit 0 must mean "this lock survived", never "nothing was tested".

The locks are ``tests/redis/broken_locks.py``. ``capfd`` (not ``capsys``) captures what the forked
client processes write on the file descriptors too: a traceback from any of them would show.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chaos.cli import main
from chaos.report import load_run


def _run_dir(out: Path) -> Path:
    (run_dir,) = out.iterdir()
    return run_dir


def _verdict(run_dir: Path) -> dict:
    return json.loads((run_dir / "verdict.json").read_text())


def test_a_factory_failing_in_every_client_stops_the_run_with_one_line_and_exit_2(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--lock", "broken_locks:missing_dependency", "--faults", "client-pause",
                 "--clients", "3", "--duration", "3", "--out", str(tmp_path)])
    _, err = capfd.readouterr()
    assert code == 2, err
    [line] = err.strip().splitlines()  # one line, not a traceback per client per restart
    assert line.startswith(
        "lockchaos: the lock factory failed in every client: ModuleNotFoundError: No module "
        "named 'lockchaos_no_such_module_mmh3' (lock broken_locks:missing_dependency; run "
        "directory "
    ), line
    run_dir = _run_dir(tmp_path)
    verdict = _verdict(run_dir)
    assert verdict["verdict"] == "inconclusive" and verdict["lock_unusable"]
    assert verdict["counts"]["lock_unusable"] == 3 and verdict["counts"]["crashes"] == 0
    events = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    unusable = [e for e in events if e["f"] == "lock-unusable"]
    assert sorted(e["process"] for e in unusable) == ["c1", "c2", "c3"]  # none replaced
    assert "broken_locks.py" in unusable[0]["traceback"]
    start, end = events[0]["t"], events[-1]["t"]
    assert events[-1]["f"] == "end" and (end - start) / 1e9 < 2.0  # stopped early, not at 3 s
    assert main(["check-history", str(run_dir / "history.jsonl")]) == 3


def test_a_lock_whose_acquire_always_raises_is_inconclusive_and_its_bug_shown(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--lock", "broken_locks:acquire_raises", "--clients", "2",
                 "--duration", "1", "--fail-on", "soft", "--out", str(tmp_path)])
    out, err = capfd.readouterr()
    assert code == 3, err
    assert "Traceback" not in err
    assert "verdict: inconclusive" in out
    assert "inconclusive: the lock was never acquired: every acquire raised RuntimeError: boom (c" \
        in " ".join(out.split())
    assert "bug in the lock: acquire raised" in " ".join(out.split())
    assert 'broken_locks.py", line' in out and "RuntimeError: boom" in out  # the traceback
    run_dir = _run_dir(tmp_path)
    verdict = _verdict(run_dir)
    [errors] = verdict["lock_errors"]
    assert errors["op"] == "acquire" and errors["error"] == "RuntimeError: boom"
    assert errors["count"] == verdict["counts"]["acquire_info"] > 0
    history = str(run_dir / "history.jsonl")
    assert main(["check-history", history, "--allow-inconclusive"]) == 0
    assert main(["check-history", history]) == 3


def test_a_lock_whose_release_raises_valueerror_is_reported_in_every_report(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--lock", "broken_locks:release_raises", "--clients", "2",
                 "--duration", "1.5", "--out", str(tmp_path)])
    out, err = capfd.readouterr()
    assert code == 3, err
    flat = " ".join(out.split())
    assert "inconclusive: no lock cycle completed: every release raised ValueError: cannot " \
        "release c" in flat
    assert "bug in the lock: release raised" in flat
    run = load_run(_run_dir(tmp_path))
    [errors] = run.verdict.lock_errors
    assert errors.op == "release" and errors.error.startswith("ValueError: cannot release")
    assert errors.count == run.verdict.counts["release_info"] > 0
    assert errors.traceback is not None and 'broken_locks.py", line' in errors.traceback
    assert run.verdict.counts["holds"] > 0 and run.verdict.counts["lock_cycles"] == 0
    page = (run.run_dir / "report.html").read_text()
    assert "Bugs in the lock" in page and "not a lease of mine" in page
    assert 'class="why inconclusive"' in page
    junit = (run.run_dir / "junit.xml").read_text()
    assert '<failure type="inconclusive"' in junit and "bug in the lock: release" in junit


def test_allow_inconclusive_lets_a_run_that_tested_nothing_pass(tmp_path: Path) -> None:
    code = main(["run", "--lock", "broken_locks:acquire_raises", "--clients", "1",
                 "--duration", "0.5", "--allow-inconclusive", "--out", str(tmp_path)])
    assert code == 0
    run = load_run(_run_dir(tmp_path))
    assert run.verdict.verdict == "inconclusive"
    replay = run.replay()
    assert replay is not None and "--allow-inconclusive" in replay
    assert "<failure" not in (run.run_dir / "junit.xml").read_text()


@pytest.mark.parametrize(
    ("command", "spec", "message"),
    [
        ("run", "client-pause:duration_ms=-1",
         "fault client-pause: duration_ms must be a number > 0 (got -1)"),
        ("run", "latency:duration_ms=0", "fault latency: duration_ms must be a number > 0"),
        ("run", "partition:scoop=one", "fault partition has no parameter 'scoop'; it takes"),
        ("run", "latency:stream=sideways", "stream must be one of upstream, downstream"),
        ("run", "client-crash:nth=two", "nth must be an integer ≥ 1 (got 'two')"),
        ("run", "clock-jump:offset_ms=0", "offset_ms must be an integer from -86400000 to"),
        ("compare", "slow-work:work_ms=-5", "fault slow-work: work_ms must be a number > 0"),
        ("explore", "reset:toxicity=1.5", "fault reset: toxicity must be a number > 0, ≤ 1"),
    ],
)
def test_bad_fault_parameters_are_refused_before_anything_starts(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], command: str, spec: str, message: str
) -> None:
    lock = ["--locks", "lua"] if command == "compare" else ["--lock", "lua"]
    assert main([command, *lock, "--faults", spec, "--out", str(tmp_path)]) == 2
    _, err = capfd.readouterr()
    [line] = err.strip().splitlines()
    assert message in line, line
    assert not any(tmp_path.iterdir())  # nothing started, nothing written


def test_a_lock_the_server_cannot_run_is_refused_in_one_line_and_exit_2(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """delifeq needs Valkey 9's DELIFEQ; the local provider runs Redis 7.0: every client's
    factory refuses, and the run stops with that line (on redis-8.0 in a container:
    tests/docker/test_delifeq.py)."""
    code = main(["run", "--lock", "delifeq", "--duration", "3", "--out", str(tmp_path)])
    _, err = capfd.readouterr()
    assert code == 2, err
    [line] = err.strip().splitlines()
    assert line.startswith(
        "lockchaos: the lock factory failed in every client: lock 'delifeq' needs DELIFEQ "
        "(Valkey ≥ 9.0): this server is redis 7.0."
    ), line
    assert "; run it with --provider docker --server valkey-9.1 (lock delifeq; run " in line


def test_violations_below_the_gate_beside_a_fault_that_never_reached_the_lock_exit_3(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """lua under slow work loses writes (below the default gate, hard), and its release sends
    EVAL, so a pause before DEL is never reached: the run must not pass (issue 20). Whatever
    this seed's timing finds, the exit status is 3 and the line says why; a junit case fails."""
    code = main(["run", "--lock", "lua", "--faults", "slow-work,client-pause-at:command=DEL",
                 "--duration", "3", "--out", str(tmp_path)])
    out, _ = capfd.readouterr()
    assert code == 3, out
    run_dir = _run_dir(tmp_path)
    verdict = _verdict(run_dir)
    reason = ("client-pause-at:command=DEL never reached: this lock's release sends EVAL; try "
              "command=EVAL")
    assert reason in verdict["inconclusive_reasons"]
    assert verdict["coverage"]["slow-work"]["effective"] >= 1
    said = "inconclusive" if verdict["verdict"] == "inconclusive" else "not tested"
    assert f"{said}: {reason}" in out
    assert "<failure" in (run_dir / "junit.xml").read_text()
    assert main(["check-history", str(run_dir / "history.jsonl")]) == 3
