"""``within_lease``: only a failure the machine outlasted a lease for is run again."""

from __future__ import annotations

import time

import pytest
from lease_span import MachineStalled, within_lease


def test_a_failure_within_the_lease_stands() -> None:
    with pytest.raises(AssertionError), within_lease(1000, "a quick span"):
        raise AssertionError("the lock broke")


def test_a_failure_after_the_machine_outlasted_the_lease_is_a_stall() -> None:
    with pytest.raises(MachineStalled, match=r"took .* ms of a 30 ms lease"), \
            within_lease(30, "a slow span"):
        time.sleep(0.03)
        raise AssertionError("the lease lapsed")


def test_a_slow_span_that_holds_is_no_failure() -> None:
    with within_lease(30, "a slow span"):
        time.sleep(0.03)

