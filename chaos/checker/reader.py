"""Reading a history file fast, in blocks, without decoding what the checker never looks at.

``chaos.history.iter_events`` decodes line by line into ``Event``; that is fine for tools but
too slow for a checker that must keep up with millions of events. Here msgspec decodes a
whole block of lines per call into ``RawEvent``, a garbage-collector-free twin of ``Event``
whose ``value`` stays raw JSON: a read's value is the whole resource, which grows with the
run, and decoding it on every read would dominate the check. Values that matter (op ids,
fault descriptions, the final read) are decoded on demand with ``value_of``.

Errors follow ``iter_events`` exactly: a truncated last line (a crash mid-write) is skipped
and reported, any other bad line raises ``HistoryError`` naming its line number.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from itertools import chain
from pathlib import Path
from typing import Any

import msgspec

from chaos.history import Event, HistoryError

BLOCK_BYTES = 1 << 18  # ~3k events: decoded and scanned while still in the CPU cache


class RawEvent(msgspec.Struct, gc=False, omit_defaults=True, kw_only=True):
    """``Event`` with an undecoded ``value`` (see the module docstring).

    ``gc=False`` is safe because decoded JSON cannot form reference cycles, and it spares
    the garbage collector from traversing millions of short-lived events.
    """

    t: int
    type: str
    process: str
    f: str
    token: str | None = None
    valid_until: int | None = None
    fence: int | None = None
    value: msgspec.Raw = msgspec.Raw(b"null")
    error: str | None = None
    bug: bool | None = None
    traceback: str | None = None


AnyEvent = Event | RawEvent

_decoder = msgspec.json.Decoder(RawEvent)
_BAD_JSON = (msgspec.DecodeError, msgspec.ValidationError)


_NULL = msgspec.Raw(b"null")


def has_value(value: Any) -> bool:
    """Whether an event carries a ``value`` at all (decoded or raw), without decoding it."""
    return value is not None and value != _NULL


def value_of(value: Any) -> Any:
    """An event's value as Python data, whether the event came decoded or raw."""
    return msgspec.json.decode(value) if isinstance(value, msgspec.Raw) else value


class HistoryReader:
    """One pass over a history file's events in file order.

    After the iteration, ``skipped_line`` is the number of a truncated last line that was
    ignored (None if there was none).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.skipped_line: int | None = None

    def events(self) -> Iterator[RawEvent]:
        return chain.from_iterable(self.batches())

    def batches(self) -> Iterator[list[RawEvent]]:
        """Lists of events, one per block of whole lines."""
        self.skipped_line = None
        lines_before = 0  # lines in the blocks already decoded
        rest = b""
        with open(self.path, "rb") as fh:
            while block := fh.read(BLOCK_BYTES):
                buf = rest + block if rest else block
                cut = buf.rfind(b"\n") + 1
                rest = buf[cut:]
                if cut:
                    whole = memoryview(buf)[:cut]
                    yield self._decode(whole, lines_before)
                    lines_before += buf.count(b"\n", 0, cut)
        if rest.strip():
            try:
                last = _decoder.decode(rest)
            except _BAD_JSON:
                self.skipped_line = lines_before + 1
            else:
                yield [last]

    def _decode(self, lines: memoryview, lines_before: int) -> list[RawEvent]:
        try:
            return _decoder.decode_lines(lines)
        except _BAD_JSON:
            return self._decode_each(bytes(lines), lines_before)

    def _decode_each(self, lines: bytes, lines_before: int) -> list[RawEvent]:
        """The slow path, line by line, to name the line that is not an event."""
        events = []
        for number, line in enumerate(lines.split(b"\n"), lines_before + 1):
            if line.strip():
                try:
                    events.append(_decoder.decode(line))
                except _BAD_JSON as exc:
                    raise HistoryError(
                        f"{self.path}: line {number} is not a history event ({exc})"
                    ) from None
        return events
