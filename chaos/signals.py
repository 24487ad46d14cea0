"""Make SIGTERM unwind like Ctrl-C, so every ``with`` block tears its infrastructure down."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Terminated(SystemExit):
    """Raised in the main thread when SIGTERM arrives."""


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated(128 + signum)


@contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """Within this block SIGTERM raises ``Terminated`` (a SystemExit) in the main thread."""
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class _Interrupted(KeyboardInterrupt):
    """SIGTERM inside ``sigterm_interrupts``."""


def _raise_interrupted(signum: int, frame: FrameType | None) -> None:
    raise _Interrupted(signum)


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Like ``sigterm_unwinds``, for a block that runs Hypothesis: Hypothesis takes a
    SystemExit raised inside a test for a failure to shrink, but lets a KeyboardInterrupt
    through. So within this block SIGTERM raises a KeyboardInterrupt, which leaves the block
    as ``Terminated``."""
    previous = signal.signal(signal.SIGTERM, _raise_interrupted)
    try:
        yield
    except _Interrupted as exc:
        raise Terminated(128 + exc.args[0]) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
