"""docs/pytest.md's example, the audit from pytest, fails a lock with the classic GET-then-DEL
release, with lockchaos's answer and not the plugin's frames (the same file passes a
compare-and-delete lock: tests/redis/test_pytest_plugin_example.py, which the suite runs);
and the clients and checker fixtures' failure hides the plugin's frames too. The example's
faults of old (latency, partition) passed the GET-then-DEL lock: ``1 passed``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

DOCS = Path(__file__).resolve().parents[2] / "docs" / "pytest.md"
GET_THEN_DEL = "from chaos.locks.get_then_del import make as make_lock\n"
PLUGIN_FRAMES = ("pytest_plugin.py", "def run(", "def assert_passes", "WorkloadResult(")


def _documented_example() -> str:
    found = re.search(r"```python\n(.*?)```", DOCS.read_text(), re.S)
    assert found is not None
    return found.group(1)


def test_the_documented_example_fails_a_get_then_del_lock(pytester: pytest.Pytester) -> None:
    """The example as docs/pytest.md shows it, against a ``my_lock.py`` whose release is GET,
    compare, DEL: the audit finds that a holder stalled before its DEL deletes the next
    holder's key, and the test fails with the audit's answer and the command to replay it."""
    pytester.makepyfile(my_lock=GET_THEN_DEL, test_example=_documented_example())
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")  # its own my_lock
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*audit: my_lock:make_lock fails (--fail-on hard;*",
        "*worst: hard — the lock granted two clients valid leases at once*",
        "*hard: c* and c* both held the lock from *",
        "*replay: lockchaos audit --lock my_lock:make_lock*",
    ])
    shown = result.stdout.str()
    assert not [frame for frame in PLUGIN_FRAMES if frame in shown], shown


def test_the_checker_fixtures_failure_shows_lockchaoss_explanation_only(
    pytester: pytest.Pytester,
) -> None:
    """``assert_passes`` fails with the verdict and its explanations; the traceback shows the
    user's test, not the plugin's source nor a ``WorkloadResult(...)`` argument."""
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.lockchaos(lock="del-release", faults="slow-work")
        def test_it(lockchaos_clients, lockchaos_checker):
            result = lockchaos_clients(clients=3, duration_s=1.5, ttl_ms=100, work_ms=20)
            lockchaos_checker.assert_passes(result)
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*lockchaos_checker.assert_passes(result)*",
                                 "*lockchaos verdict hard (failing on hard); history *"])
    shown = result.stdout.str()
    assert not [frame for frame in PLUGIN_FRAMES if frame in shown], shown
