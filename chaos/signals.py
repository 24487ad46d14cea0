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
