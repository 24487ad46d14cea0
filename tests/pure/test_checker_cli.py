"""Checking history files: ``check_file`` and ``lockchaos check-history`` (through
``chaos.cli.main``, exit statuses and output)."""

from __future__ import annotations

import json
import warnings

import pytest
from test_checker_support import History, at

from chaos.checker import check_file
from chaos.cli import main
from chaos.history import Event, HistoryError, write_history


def soft_history() -> History:
    return History().acquire("c1", 0, lease=50).acquire("c2", 100).release("c1", 150)


def hard_history() -> History:
    h = History().acquire("c3", 0, lease=100).acquire("c1", 150, lease=300)
    return h.release("c3", 200, 201).acquire("c2", 210).release("c1", 300).final_read(400, [])


# -- check_file -----------------------------------------------------------------------------


def test_check_file_agrees_with_check(tmp_path):
    h = hard_history()
    assert check_file(h.save(tmp_path / "h.jsonl")).to_dict() == h.check().to_dict()


def test_lines_out_of_time_order_across_processes_are_streamed(tmp_path):
    h = hard_history()
    events = sorted(h.events, key=lambda e: (e.process, e.t))  # each process still in order
    write_history(tmp_path / "h.jsonl", events)
    assert check_file(tmp_path / "h.jsonl").to_dict() == h.check().to_dict()


def test_streamed_failures_out_of_time_order_are_sorted(tmp_path):
    """c3's failures come first in time but last in the file (grouped by process)."""
    h = History(ttl_ms=10).acquire("c1", 0).release("c1", 5)
    for ms in range(10, 110, 10):
        h.attempt("c3", ms, ms + 2)
    h.acquire("c1", 150).release("c1", 155)
    for ms in range(200, 400, 10):
        h.attempt("c2", ms, ms + 2)
    write_history(tmp_path / "h.jsonl", sorted(h.events, key=lambda e: (e.process, e.t)))
    verdict = check_file(tmp_path / "h.jsonl")
    assert [(v.start_s, v.end_s) for v in verdict.violations] == [(0.01, 0.102), (0.2, 0.392)]
    assert verdict.to_dict() == h.check().to_dict()


def test_a_process_out_of_order_makes_the_checker_sort(tmp_path):
    h = hard_history()
    write_history(tmp_path / "h.jsonl", reversed(h.events))
    assert check_file(tmp_path / "h.jsonl").to_dict() == h.check().to_dict()


def test_truncated_last_line_is_skipped_with_a_note(tmp_path):
    path = hard_history().save(tmp_path / "h.jsonl")
    with path.open("ab") as fh:
        fh.write(b'{"t": 123, "type": "ok", "proc')
    verdict = check_file(path)
    assert verdict.verdict == "hard"
    assert "ignored the truncated last line 14" in verdict.notes


def test_corrupt_line_in_the_middle_is_an_error(tmp_path):
    path = tmp_path / "h.jsonl"
    lines = hard_history().save(path).read_bytes().splitlines(keepends=True)
    lines[4] = b'{"t": 5, "type": "ok"\n'
    path.write_bytes(b"".join(lines))
    with pytest.raises(HistoryError, match="line 5 is not a history event"):
        check_file(path)


def test_bad_last_line_with_its_newline_is_an_error(tmp_path):
    path = hard_history().save(tmp_path / "h.jsonl")
    with path.open("ab") as fh:
        fh.write(b"not json\n")
    with pytest.raises(HistoryError, match="line 14 "):
        check_file(path)


def test_empty_file_is_not_a_history(tmp_path):
    (tmp_path / "empty.jsonl").write_bytes(b"\n\n")
    with pytest.raises(HistoryError, match="no events"):
        check_file(tmp_path / "empty.jsonl")


# -- the command ----------------------------------------------------------------------------


def run(capsys, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the command must not leak Python warnings
        code = main(["check-history", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def test_ok_history_exits_0(tmp_path, capsys):
    h = History().acquire("c1", 0).release("c1", 50).acquire("c2", 60).release("c2", 70)
    code, out, err = run(capsys, h.final_read(100, []).save(tmp_path / "h.jsonl"))
    assert code == 0, err
    assert out.startswith("verdict: ok\n  lock test-lock, TTL 200 ms, 0.100 s, 11 events, 2 lock "
                          "cycles\n")
    assert "lost writes 0" in out


def test_hard_violation_exits_1_and_explains(tmp_path, capsys):
    code, out, _ = run(capsys, hard_history().save(tmp_path / "h.jsonl"))
    assert code == 1
    assert out.startswith("verdict: hard\n")
    assert "first hard violation at 0.210 s" in out
    assert "c3 released c1's lock at 0.201 s" in out


@pytest.mark.parametrize(("fail_on", "code"), [("hard", 0), ("data", 0), ("liveness", 0),
                                               ("soft", 1)])
def test_fail_on_sets_the_threshold(tmp_path, capsys, fail_on, code):
    path = soft_history().save(tmp_path / "h.jsonl")
    assert run(capsys, "--fail-on", fail_on, path)[0] == code


def test_json_output_is_the_verdict(tmp_path, capsys):
    path = hard_history().save(tmp_path / "h.jsonl")
    code, out, _ = run(capsys, "--json", path)
    assert code == 1
    data = json.loads(out)
    assert data == json.loads(json.dumps(check_file(path).to_dict()))
    assert data["verdict"] == "hard" and data["hard_violations"] == 1


def test_liveness_factor_option(tmp_path, capsys):
    h = History(ttl_ms=100).acquire("c1", 0).release("c1", 10)
    for ms in range(20, 1000, 10):
        h.attempt("c2", ms, ms + 5)
    path = h.save(tmp_path / "h.jsonl")
    assert run(capsys, "--fail-on", "liveness", path)[0] == 1
    assert run(capsys, "--fail-on", "liveness", "--liveness-factor", "20", path)[0] == 0


def test_notes_are_printed(tmp_path, capsys):
    path = soft_history().save(tmp_path / "h.jsonl")
    with path.open("ab") as fh:
        fh.write(b'{"t": 1')
    code, out, _ = run(capsys, path)
    assert code == 0
    assert "warning: the history has no final read: lost writes were not judged" in out
    assert "warning: ignored the truncated last line 8" in out


def test_long_lists_of_violations_are_cut(tmp_path, capsys):
    h = History()
    for i in range(25):
        h.acquire("c1", i * 10, lease=1).acquire("c2", i * 10 + 5).release("c1", i * 10 + 6)
        h.release("c2", i * 10 + 7)
    code, out, _ = run(capsys, "--fail-on", "soft", h.save(tmp_path / "h.jsonl"))
    assert code == 1
    assert " 20. soft: c1 and c2" in out and " 21. " not in out
    assert "… and 5 more (--json lists them all)" in out


def test_missing_file_exits_2(tmp_path, capsys):
    code, out, err = run(capsys, tmp_path / "nope.jsonl")
    assert code == 2 and out == ""
    assert err == f"lockchaos: {tmp_path / 'nope.jsonl'}: no such file; give the history.jsonl " \
                  "a run wrote\n"


def test_directory_exits_2(tmp_path, capsys):
    code, _, err = run(capsys, tmp_path)
    assert code == 2
    assert "cannot read it" in err and err.count("\n") == 1


def test_not_a_history_exits_2(tmp_path, capsys):
    path = tmp_path / "notes.txt"
    path.write_text("hello\nworld\n")
    code, _, err = run(capsys, path)
    assert code == 2
    assert "line 1 is not a history event" in err and "Traceback" not in err
    assert err.count("\n") == 1


def test_corrupt_middle_line_exits_2(tmp_path, capsys):
    path = tmp_path / "h.jsonl"
    good = Event(t=at(1), type="invoke", process="c1", f="acquire")
    write_history(path, [good, good])
    path.write_bytes(path.read_bytes().replace(b"\n", b"\n{oops\n", 1))
    code, _, err = run(capsys, path)
    assert code == 2 and "line 2 is not a history event" in err


def test_bad_fail_on_exits_2(tmp_path, capsys):
    code, _, err = run(capsys, "--fail-on", "ok", soft_history().save(tmp_path / "h.jsonl"))
    assert code == 2
    assert err == ("lockchaos: --fail-on must be one of soft, fairness, liveness, data, hard "
                   "(got 'ok')\n")


def test_bad_liveness_factor_exits_2(tmp_path, capsys):
    path = soft_history().save(tmp_path / "h.jsonl")
    code, _, err = run(capsys, "--liveness-factor", "-1", path)
    assert code == 2 and "--liveness-factor must be a positive number" in err
