"""Hypothesis settings profiles for the CLI, this test suite and users' tests, under lockchaos's
own names (a suite's own ``dev``/``ci`` profiles are never replaced).

``dev`` favours a quick answer on a laptop; ``ci`` is derandomized (the same examples on every
run, so a red build is reproducible) and prints the blob that replays a failure. Both turn off
the per-example deadline and the too-slow health check: every example drives real processes
over real sockets, so its duration is dominated by the lock's TTL, not by the test's code.
``select_profile`` picks ``ci`` when the ``CI`` environment variable is set (as CI services
do), ``dev`` otherwise; ``LOCKCHAOS_HYPOTHESIS_PROFILE`` overrides either. Loading one is
opt-in for a test suite (``--hypothesis-profile lockchaos-ci``, or ``select_profile()`` in its
conftest): installing lockchaos changes no other suite's Hypothesis settings.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

DEV = "lockchaos-dev"
CI = "lockchaos-ci"
PROFILES = (DEV, CI)

_SLOW_IS_FINE = [HealthCheck.too_slow, HealthCheck.data_too_large]


def register_profiles() -> None:
    """Register both profiles (idempotent: re-registering replaces the same settings)."""
    settings.register_profile(
        DEV, max_examples=50, deadline=None, suppress_health_check=_SLOW_IS_FINE
    )
    settings.register_profile(
        CI,
        max_examples=50,
        deadline=None,
        derandomize=True,
        print_blob=True,
        suppress_health_check=_SLOW_IS_FINE,
    )


def default_profile() -> str:
    """The profile this environment asks for."""
    chosen = os.environ.get("LOCKCHAOS_HYPOTHESIS_PROFILE")
    if chosen:
        return chosen
    return CI if os.environ.get("CI") else DEV


def select_profile(name: str | None = None) -> str:
    """Register the profiles and load ``name`` (default: ``default_profile()``); returns it."""
    register_profiles()
    chosen = name or default_profile()
    settings.load_profile(chosen)
    return chosen
