"""The pytest plugin: its option and marker (through pytester), where it is loaded from, and
docs/pytest.md's example being the test that runs (its fixtures against real processes:
tests/redis/test_pytest_plugin_fixtures.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = "tests/redis/test_pytest_plugin_example.py"  # docs/pytest.md shows this file first
FAULTS_EXAMPLE = "tests/redis/test_pytest_plugin_faults_example.py"  # … and this one second

SHOW_LOCK = """
import pytest

def test_unmarked(lockchaos_lock):
    print("LOCK", lockchaos_lock)

@pytest.mark.lockchaos(lock="redlock")
def test_marked(lockchaos_lock):
    print("LOCK", lockchaos_lock)
"""


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """In-process: chaos is already imported, so pytest cannot rewrite its asserts (and
    would warn about it)."""
    return pytester.runpytest("-W", "ignore::pytest.PytestAssertRewriteWarning", *args)


def test_lock_option_picks_the_lock_and_the_marker_overrides_it(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(SHOW_LOCK)
    result = _run(pytester, "--lock", "tests.mylocks:make", "-s")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*LOCK tests.mylocks:make*", "*LOCK redlock*"])


def test_without_a_lock_the_test_fails_in_one_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SHOW_LOCK)
    result = _run(pytester, "-k", "unmarked")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*lockchaos: no lock under test: pass --lock module:attr*"])


def test_a_bad_lock_fails_the_test_in_one_line_without_starting_anything(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        def test_it(lockchaos_topology):
            raise AssertionError("never reached")
        """
    )
    result = _run(pytester, "--lock", "no_such_module:make")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*lockchaos: lock 'no_such_module:make': no module named*"])
    assert "Traceback" not in result.stdout.str()


def test_a_fault_the_provider_cannot_do_is_refused_before_anything_starts(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.lockchaos(lock="lua", faults="crash-restart-aof")
        def test_it(lockchaos_topology):
            raise AssertionError("never reached")
        """
    )
    result = _run(pytester, "--lockchaos-provider", "docker")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*lockchaos: crash-restart-aof needs a provider that can start servers with "
            "appendfsync-always persistence, which the docker provider cannot: drop "
            "crash-restart-aof or use --provider local*"
        ]
    )


def test_the_server_option_reaches_the_campaign(pytester: pytest.Pytester) -> None:
    """``--lockchaos-server`` is checked as ``run --server`` is: the local provider runs its
    own Redis 7.0 build, so valkey-8.1 fails the test in one line before anything starts."""
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.lockchaos(lock="lua")
        def test_it(lockchaos_topology):
            raise AssertionError("never reached")
        """
    )
    result = _run(pytester, "--lockchaos-server", "valkey-8.1")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*lockchaos: --server valkey-8.1 needs --provider docker*"])


def test_capacity_reaches_the_campaign_and_its_clients(pytester: pytest.Pytester) -> None:
    """``--lockchaos-capacity`` (and the marker's ``capacity=``, which overrides it) sets a
    semaphore's permits as ``run --capacity`` does, down to what its clients are told; a mutex
    refuses it in one line before anything starts."""
    pytester.makepyfile(
        """
        import pytest

        def test_option(lockchaos_campaign):
            print("PERMITS", lockchaos_campaign.workload().capacity)

        @pytest.mark.lockchaos(capacity=2)
        def test_marked(lockchaos_campaign):
            print("PERMITS", lockchaos_campaign.workload().capacity)

        @pytest.mark.lockchaos(lock="lua")
        def test_mutex(lockchaos_campaign):
            raise AssertionError("never reached")
        """
    )
    result = _run(pytester, "--lock", "lua-semaphore", "--lockchaos-capacity", "5", "-s")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*PERMITS 5*", "*PERMITS 2*",
                                 "*lockchaos: lock 'lua' is a mutex: --capacity must be 1*"])


def test_hypothesis_profiles_are_registered_and_loaded_only_when_asked(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        from hypothesis import settings

        def test_profile():
            assert settings.get_profile("lockchaos-dev").deadline is None
            assert settings.default.derandomize is True  # the ci profile, named below
        """
    )
    _run(pytester, "--hypothesis-profile", "lockchaos-ci").assert_outcomes(passed=1)


def test_the_plugin_leaves_a_suites_hypothesis_settings_alone(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Installed in another project, lockchaos must not change its Hypothesis settings, not
    even under CI (a fresh process: this suite has loaded its own profile in this one)."""
    monkeypatch.setenv("CI", "true")
    pytester.makepyfile(
        """
        from hypothesis import settings

        def test_profile(request):
            assert request.config.pluginmanager.has_plugin("lockchaos")
            ours = settings.get_profile("lockchaos-ci")  # registered, not loaded
            assert settings.default.max_examples == 100 != ours.max_examples
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")  # the entry point loads it
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("autoload", [True, False], ids=["entry-point", "no-autoload"])
def test_the_root_conftest_loads_the_plugin_once(autoload: bool) -> None:
    """With the entry point (after ``make setup``) and without it (a fresh clone, or
    PYTEST_DISABLE_PLUGIN_AUTOLOAD): the options exist and nothing is registered twice."""
    env = dict(os.environ)
    env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    argv = [sys.executable, "-m", "pytest", "--co", "-q", EXAMPLE]
    if not autoload:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        argv += ["-p", "pytest_timeout", "-p", "pytest_rerunfailures"]  # the ini sets their options
    done = subprocess.run(
        [*argv, "--lock", "lua"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 test collected" in done.stdout


def test_docs_examples_are_the_tests_that_run() -> None:
    """docs/pytest.md leads with the audit, then the faults chosen by hand: each block is a
    file the suite runs, word for word."""
    doc = (ROOT / "docs" / "pytest.md").read_text()
    examples = re.findall(r"```python\n(.*?)```", doc, re.S)
    assert examples[:2] == [(ROOT / EXAMPLE).read_text(), (ROOT / FAULTS_EXAMPLE).read_text()]
    assert all(len(code.strip().splitlines()) <= 20 for code in examples[:2])
