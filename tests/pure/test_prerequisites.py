"""The gate of the docker, drivers and browser tests (tests/prerequisites.py): a test is gated
on exactly the images it declares, skips naming the absent ones, and fails instead under CI
(CI ran the set-up, so a missing prerequisite there is a broken one)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from prerequisites import IMAGES_HINT, image_gap, need, unavailable

from chaos.errors import UsageError


def test_a_test_is_gated_on_exactly_the_images_it_declares() -> None:
    present = {"redis-7.0", "valkey-8.1"}  # redis-8.0 and toxiproxy absent
    assert image_gap(["redis-7.0"], present) == ""  # toxiproxy's absence is not its business
    assert image_gap(["redis-7.0", "toxiproxy"], present) == (
        f"no image lockchaos/toxiproxy:2.12.0 ({IMAGES_HINT})"
    )
    assert image_gap(["redis-8.0", "valkey-8.1", "toxiproxy"], present) == (
        f"no image lockchaos/redis:8.0, lockchaos/toxiproxy:2.12.0 ({IMAGES_HINT})"
    )
    with pytest.raises(UsageError, match=r"no lockchaos image named 'redis-9\.9'"):
        image_gap(["redis-9.9"], present)  # a typo fails: it must not skip


def test_a_missing_prerequisite_skips_outside_ci_and_fails_under_ci(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reason = "no image lockchaos/redis:8.0 (make docker builds them)"
    monkeypatch.delenv("CI", raising=False)
    need("")  # nothing missing: the test goes on
    with pytest.raises(pytest.skip.Exception, match=r"^no image lockchaos/redis:8\.0 \("):
        need(reason)
    monkeypatch.setenv("CI", "true")
    need("")
    with pytest.raises(pytest.fail.Exception) as failed:
        unavailable(reason)
    assert str(failed.value).startswith(reason + " (CI: ")


@pytest.mark.parametrize("ci", ["", "true"])
def test_the_set_up_scripts_skip_outside_ci_and_fail_under_ci(ci: str) -> None:
    """scripts/unavailable.sh, which setup.sh, drivers-setup.sh and docker-setup.sh share:
    the same one-line reason, on stdout with status 0, or under CI on stderr with status 1."""
    script = Path(__file__).resolve().parents[2] / "scripts" / "unavailable.sh"
    done = subprocess.run(
        ["bash", "-c", f'source "{script}"; unavailable docker-setup "no engine" "tests skip"'],
        capture_output=True, text=True, timeout=30, env={**os.environ, "CI": ci},
    )  # fmt: skip
    if ci:
        assert done.returncode == 1 and done.stdout == ""
        assert done.stderr.startswith("[docker-setup] failed: no engine (")
    else:
        assert (done.returncode, done.stderr) == (0, "")
        assert done.stdout == "[docker-setup] skipped: no engine (tests skip)\n"
