"""A client's own clock (``chaos.workload.clocks``, the client-clock fault): a real process
under the libfaketime that ``make setup`` builds."""

from __future__ import annotations

import time
from pathlib import Path

from chaos.workload import clocks


def test_a_client_clock_moves_time_time_but_not_the_monotonic_clock(tmp_path: Path) -> None:
    """A process started through ``clocks.start`` reads a wall clock ``offset_ms`` ahead (and
    back when the file changes), its monotonic clock is the harness's, and ``time.sleep``
    works (libfaketime 0.9.10 fails Python's own with EINVAL). The offset is measured
    against the monotonic clock both processes share (wall − monotonic, read together on
    each side), so however late the report arrives, it is the offset alone."""
    clocks.set_offset(tmp_path, "c1", 800)
    reader, writer = clocks.SPAWN.Pipe(duplex=False)
    process = clocks.SPAWN.Process(target=_report_clocks, args=(writer,), daemon=True)
    clocks.start(process, tmp_path, "c1")
    writer.close()
    try:
        assert reader.poll(60), "the faked-clock process did not report"
        wall, mono, slept = reader.recv()
        assert mono <= time.monotonic()  # the same monotonic clock: never ahead of ours
        assert 0.75 < _offset(wall, mono) < 0.85
        assert slept >= 0.05
        clocks.set_offset(tmp_path, "c1", -300)
        assert reader.poll(10)
        wall, mono, _ = reader.recv()
        assert -0.35 < _offset(wall, mono) < -0.25
    finally:
        process.join(10)
        if process.is_alive():
            process.kill()
    assert clocks.offset_ms(tmp_path, "c1") == -300


def _offset(wall: float, mono: float) -> float:
    """How far a wall clock read together with the shared monotonic ``mono`` runs ahead."""
    return (wall - mono) - (time.time() - time.monotonic())


def _report_clocks(writer: object) -> None:
    from multiprocessing.connection import Connection

    assert isinstance(writer, Connection)
    started = time.monotonic()
    time.sleep(0.05)
    writer.send((time.time(), time.monotonic(), time.monotonic() - started))
    first = time.time() - time.monotonic()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and abs(time.time() - time.monotonic() - first) < 0.5:
        time.sleep(0.01)  # until the harness moves this clock back
    writer.send((time.time(), time.monotonic(), 0.0))
