"""A lease the machine outlived says nothing about the lock.

The contract tests hold leases of 300 ms, and a few of their assertions hold only while a
lease is alive: the holder's release succeeds, a second client is refused. On two loaded
cores the test process, Redis or Toxiproxy can sit still for longer than that (a fresh clone's
CI once saw a watchdog lock's fresh lease gone between its acquire and its release, a few
commands apart). Such a failure is the machine's, not the lock's — and a lock that really
broke the assertion breaks it in a span far shorter than the lease. ``within_lease`` times
the span: an assertion that fails after the span lasted ``SURE_SHARE`` of the TTL (the part
of a lease every lock here is sure to cover: a watchdog renews every third of it) raises
``MachineStalled`` instead, which pytest-rerunfailures runs again (``--only-rerun
MachineStalled`` in pyproject.toml, two reruns); any other failure stands as it was.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

SURE_SHARE = 2 / 3


class MachineStalled(Exception):
    """An assertion about a live lease failed after the machine outlasted the lease."""


@contextmanager
def within_lease(ttl_ms: float, what: str) -> Iterator[None]:
    """Run the block; an ``AssertionError`` after ``SURE_SHARE`` of ``ttl_ms`` becomes
    ``MachineStalled`` (from it, so the assertion is still shown)."""
    started = time.monotonic()
    try:
        yield
    except AssertionError as exc:
        took_ms = (time.monotonic() - started) * 1000
        if took_ms >= SURE_SHARE * ttl_ms:
            raise MachineStalled(
                f"{what} took {took_ms:.0f} ms of a {ttl_ms:g} ms lease: the machine "
                f"outlasted the lease, so the failed assertion says nothing of the lock"
            ) from exc
        raise
