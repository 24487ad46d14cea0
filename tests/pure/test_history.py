"""The history file: writing events from many processes, reading them back, damage."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

import pytest

from chaos import history as h
from chaos.history import Event, HistoryError, HistoryWriter, iter_events, read_history


def test_log_stamps_with_the_monotonic_clock(tmp_path):
    before = h.now()
    with HistoryWriter(tmp_path / "h.jsonl") as writer:
        event = writer.log(h.OK, "c1", h.ACQUIRE, token="t1", valid_until=before + 5, fence=3)
    after = h.now()
    assert before <= event.t <= after
    [read] = list(iter_events(tmp_path / "h.jsonl"))
    assert read == event
    assert read.value is None and read.error is None


def test_defaults_are_omitted_from_lines(tmp_path):
    h.write_history(tmp_path / "h.jsonl", [Event(t=1, type="invoke", process="c1", f="read")])
    assert (tmp_path / "h.jsonl").read_bytes() == \
        b'{"t":1,"type":"invoke","process":"c1","f":"read"}\n'


def _append_many(path: str, process: str) -> None:
    with HistoryWriter(path) as writer:
        for i in range(200):
            writer.log(h.INVOKE, process, h.WRITE, value=f"{process}:{i}" + "x" * 300)


def test_concurrent_writers_never_split_lines(tmp_path):
    path = str(tmp_path / "h.jsonl")
    procs = [multiprocessing.get_context("fork").Process(target=_append_many, args=(path, p))
             for p in ("c1", "c2", "c3")]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=30)
    events = list(iter_events(path))
    assert len(events) == 600
    for process in ("c1", "c2", "c3"):
        mine = [e for e in events if e.process == process]
        assert [e.value.split("x")[0] for e in mine] == [f"{process}:{i}" for i in range(200)]


def test_writer_appends_to_an_existing_file(tmp_path):
    path = tmp_path / "h.jsonl"
    for process in ("c1", "c2"):
        with HistoryWriter(path) as writer:
            writer.log(h.INFO, process, h.CRASH)
    assert [e.process for e in iter_events(path)] == ["c1", "c2"]


def test_close_is_idempotent(tmp_path):
    writer = HistoryWriter(tmp_path / "h.jsonl")
    writer.close()
    writer.close()


def test_read_history_sorts_stably_by_time(tmp_path):
    events = [
        Event(t=5, type="invoke", process="c2", f="acquire"),
        Event(t=3, type="invoke", process="c1", f="acquire"),
        Event(t=5, type="ok", process="c2", f="acquire", token="a"),
        Event(t=4, type="fail", process="c1", f="acquire"),
    ]
    h.write_history(tmp_path / "h.jsonl", events)
    assert read_history(tmp_path / "h.jsonl") == [events[1], events[3], events[0], events[2]]


def test_blank_lines_are_ignored(tmp_path):
    (tmp_path / "h.jsonl").write_bytes(
        b'{"t":1,"type":"info","process":"c1","f":"crash"}\n\n  \n'
        b'{"t":2,"type":"info","process":"c2","f":"crash"}\n'
    )
    assert [e.t for e in iter_events(tmp_path / "h.jsonl")] == [1, 2]


def test_truncated_last_line_is_skipped_with_a_warning(tmp_path):
    path = tmp_path / "h.jsonl"
    h.write_history(path, [Event(t=1, type="info", process="c1", f="crash")])
    with path.open("ab") as fh:
        fh.write(b'{"t":2,"type":"in')
    with pytest.warns(UserWarning, match="ignoring truncated last line 2"):
        assert [e.t for e in iter_events(path)] == [1]


def test_a_line_written_while_it_is_read_is_left_for_the_next_read(tmp_path):
    """A reader polling a live run reached a line a writer had only half written; the rest,
    appended meanwhile, must not come back as a line of its own (CI: "line 1215 is not a
    history event: Input data was truncated")."""
    path = tmp_path / "h.jsonl"
    h.write_history(path, [Event(t=1, type="info", process="c1", f="crash")])
    with path.open("ab") as fh:
        fh.write(b'{"t":2,"type":"in')
    events = iter_events(path)
    with pytest.warns(UserWarning, match="ignoring truncated last line 2"):
        assert next(events).t == 1  # the reader has read the half line by now
        with path.open("ab") as fh:
            fh.write(b'fo","process":"c1","f":"crash"}\n{"t":3,"type":"info","process":"c1",'
                     b'"f":"crash"}\n')
        assert list(events) == []
    assert [e.t for e in iter_events(path)] == [1, 2, 3]


@pytest.mark.parametrize(
    ("content", "line"),
    [
        (b'{"t":1,"type":"info","process":"c1","f":"crash"}\nnot json\n'
         b'{"t":2,"type":"info","process":"c1","f":"crash"}\n', 2),
        (b'{"t":"soon","type":"info","process":"c1","f":"crash"}\n', 1),
        (b'{"t":1,"type":"info","process":"c1"}\n', 1),  # no f
        (b'[1, 2]\n', 1),
        (b'{"t":1,"type":"info","process":"c1","f":"crash"}\n{"t":2\n', 2),  # bad, then newline
    ],
)
def test_a_bad_line_is_an_error_naming_it(tmp_path, content, line):
    path = tmp_path / "h.jsonl"
    path.write_bytes(content)
    with pytest.raises(HistoryError, match=f"line {line} is not a history event"):
        list(iter_events(path))


def test_history_error_is_a_value_error():
    assert issubclass(HistoryError, ValueError)


def test_now_is_monotonic():
    readings = [h.now() for _ in range(1000)]
    assert readings == sorted(readings)
    assert isinstance(readings[0], int)  # nanoseconds, not float seconds


def test_a_write_that_held_the_logging_thread_is_a_stall_of_its_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CI, an overloaded machine: c1's watchdog logged a renewal, and its next one went out
    420 ms late with no stall recorded (the stall watcher only waits; it never writes), so the
    lapse read as a dead watchdog. A write that held its thread that long is that process's
    stall; a quick one is not."""
    write = os.write

    def slow_write(fd: int, data: bytes) -> int:
        if b'"renew"' in data:
            time.sleep(0.08)
        return write(fd, data)

    monkeypatch.setattr(h.os, "write", slow_write)
    with h.HistoryWriter(tmp_path / "history.jsonl") as writer:
        quick = writer.log(h.OK, "c1", "read")
        renewed = writer.log(h.OK, "c1", "renew")
    events = list(h.iter_events(tmp_path / "history.jsonl"))
    stalls = [e for e in events if e.f == h.STALL]
    assert [e.process for e in stalls] == ["c1"]
    assert stalls[0].value == {"since": renewed.t} and stalls[0].t - renewed.t >= 50_000_000
    assert quick.t < renewed.t
