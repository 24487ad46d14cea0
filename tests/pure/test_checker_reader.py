"""The checker's block reader must read exactly what ``chaos.history.iter_events`` reads."""

from __future__ import annotations

import msgspec
import pytest

from chaos.checker import reader
from chaos.checker.reader import HistoryReader, value_of
from chaos.history import Event, HistoryError, iter_events, write_history


def sample_events(n: int) -> list[Event]:
    events = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            events.append(Event(t=i, type="invoke", process=f"c{i % 7}", f="write", value=f"op{i}"))
        elif kind == 1:
            events.append(Event(t=i, type="ok", process=f"c{i % 7}", f="read",
                                value=[f"op{j}" for j in range(i % 50)]))
        elif kind == 2:
            events.append(Event(t=i, type="ok", process="c1", f="acquire", token=f"tok{i}",
                                valid_until=i + 10**9, fence=i))
        else:
            events.append(Event(t=i, type="info", process="nemesis", f="start",
                                value={"fault": "partition", "id": f"f{i}", "params": {"x": i}}))
    return events


def as_events(raw: list[reader.RawEvent]) -> list[Event]:
    return [
        Event(t=e.t, type=e.type, process=e.process, f=e.f, token=e.token,
              valid_until=e.valid_until, fence=e.fence, value=value_of(e.value), error=e.error)
        for e in raw
    ]


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of a few lines, so that every test crosses many block boundaries."""
    monkeypatch.setattr(reader, "BLOCK_BYTES", 97)


def test_reads_what_iter_events_reads(tmp_path, small_blocks):
    path = tmp_path / "h.jsonl"
    write_history(path, sample_events(300))
    got = as_events(list(HistoryReader(path).events()))
    assert got == list(iter_events(path)) == sample_events(300)


def test_a_line_longer_than_a_block(tmp_path, small_blocks):
    big = Event(t=1, type="ok", process="harness", f="final-read",
                value=[f"c{i}:{i}" for i in range(2000)])
    path = tmp_path / "h.jsonl"
    write_history(path, [*sample_events(10), big, *sample_events(10)])
    events = list(HistoryReader(path).events())
    assert len(events) == 21
    assert value_of(events[10].value) == big.value


def test_blank_lines_and_no_final_newline(tmp_path, small_blocks):
    path = tmp_path / "h.jsonl"
    path.write_bytes(b'\n{"t":1,"type":"info","process":"c1","f":"crash"}\n\n   \n'
                     b'{"t":2,"type":"info","process":"c1","f":"crash"}')
    reading = HistoryReader(path)
    assert [e.t for e in reading.events()] == [1, 2]
    assert reading.skipped_line is None


def test_truncated_last_line_is_reported(tmp_path, small_blocks):
    path = tmp_path / "h.jsonl"
    write_history(path, sample_events(40))
    with path.open("ab") as fh:
        fh.write(b'{"t":99,"type":"ok","pro')
    reading = HistoryReader(path)
    assert len(list(reading.events())) == 40
    assert reading.skipped_line == 41


@pytest.mark.parametrize("bad", [17, 40])
def test_bad_line_numbers_count_across_blocks(tmp_path, small_blocks, bad):
    path = tmp_path / "h.jsonl"
    write_history(path, sample_events(40))
    lines = path.read_bytes().splitlines(keepends=True)
    lines[bad - 1] = b'{"t": 1, "type": "ok", "process": "c1"}\n'  # no f
    path.write_bytes(b"".join(lines))
    with pytest.raises(HistoryError, match=f"line {bad} is not a history event .*`f`"):
        list(HistoryReader(path).events())


def test_value_of_decodes_raw_and_passes_decoded_through():
    assert value_of(msgspec.Raw(b'{"a": [1, "x"]}')) == {"a": [1, "x"]}
    assert value_of(["already", "decoded"]) == ["already", "decoded"]
    assert value_of(None) is None
