"""What the suite shares: its groups (one folder each, marked by path) and the fixtures that
start real topologies (real redis-server, redis-sentinel, toxiproxy-server).

Each folder under tests/ holds the tests that need one kind of thing, and its tests carry that
folder's marker, so ``pytest tests/pure`` and ``pytest -m pure`` run the same tests:

* ``pure`` — nothing but Python (and short-lived Python processes): seconds;
* ``redis`` — local Redis, Sentinel and Toxiproxy processes (``make setup`` builds them);
* ``docker`` — a Docker engine with Compose v2 and lockchaos's images;
* ``drivers`` — the Java, Go and Node lock drivers (``make setup`` builds them);
* ``browser`` — headless Chromium.

At the end of a run, one line per group says how many of its tests passed, failed and were
skipped, with the first skip reason: a group that did not run shows at a glance.

A test that needs what `make setup` provides outside Python skips naming exactly what is
missing, and fails instead under CI (tests/prerequisites.py): a docker test declares the
images it runs, ``@pytest.mark.images("redis-8.0", "toxiproxy")``, and is gated on exactly
those (plus the engine and Compose v2); one that declares none fails, so none is forgotten.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from cells import CellRuns
from lease_span import pytest_runtest_call  # noqa: F401  (the hook: a stalled run's failure runs again)
from leftovers import left_by
from prerequisites import docker_gap, need

from chaos import topology
from chaos.explore.profiles import select_profile
from chaos.explore.session import reset
from chaos.topology import LocalTopology

select_profile()  # this suite opts in: lockchaos-ci under CI, lockchaos-dev otherwise

TESTS = Path(__file__).resolve().parent
GROUPS = ("pure", "redis", "docker", "drivers", "browser")


def group_of(path: Path) -> str | None:
    """The group of a test file: the folder under tests/ it sits in."""
    try:
        folder = path.resolve().relative_to(TESTS).parts[0]
    except (ValueError, IndexError):
        return None  # a file pytester wrote elsewhere
    return folder if folder in GROUPS else None


# docs/pytest.md's example audit of a sound lock runs its whole budget (a minute), like the
# tests marked ``budget``; it is the documentation's text word for word, so it cannot say so.
WHOLE_BUDGET_EXAMPLES = (TESTS / "redis" / "test_pytest_plugin_example.py",)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        group = group_of(item.path)
        if group is not None:
            item.add_marker(group)
        if item.path.resolve() in WHOLE_BUDGET_EXAMPLES:
            item.add_marker("budget")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "images(*names): the lockchaos images a docker test runs (redis-8.0, "
        "toxiproxy…): it skips naming the absent ones, and fails under CI"
    )


@pytest.hookimpl(tryfirst=True)  # before its fixtures start anything
def pytest_runtest_setup(item: pytest.Item) -> None:
    declared = item.get_closest_marker("images")
    if declared is not None:
        need(docker_gap(declared.args))
    elif group_of(item.path) == "docker":
        pytest.fail("a docker test declares the images it runs: @pytest.mark.images(...)",
                    pytrace=False)  # fmt: skip


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    counts: dict[str, Counter[str]] = {}
    first_skip: dict[str, str] = {}
    for outcome in ("passed", "failed", "error", "skipped"):
        for report in terminalreporter.stats.get(outcome, []):
            group = group_of(Path(str(report.fspath)))
            if group is None or (outcome == "passed" and report.when != "call"):
                continue
            counts.setdefault(group, Counter())["failed" if outcome == "error" else outcome] += 1
            if outcome == "skipped" and group not in first_skip:
                first_skip[group] = _skip_reason(report)
    if not counts:
        return
    terminalreporter.section("lockchaos groups", sep="-")
    for group in GROUPS:
        if group in counts:
            seen = counts[group]
            line = (f"{group:8} {seen['passed']:4} passed {seen['failed']:4} failed "
                    f"{seen['skipped']:4} skipped")
            if group in first_skip:
                line += f" (first: {first_skip[group]})"
            terminalreporter.write_line(line)


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple):  # (file, line, "Skipped: reason")
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


@pytest.fixture(scope="module")
def _standalone_module() -> Iterator[LocalTopology]:
    with topology.start("standalone", nodes=5) as topo:
        yield topo


@pytest.fixture(scope="module")
def _single_module() -> Iterator[LocalTopology]:
    with topology.start("standalone", nodes=1) as topo:
        yield topo


@pytest.fixture
def standalone(_standalone_module: LocalTopology) -> LocalTopology:
    """Five independent masters behind Toxiproxy, shared by a module's tests and put back to
    a clean slate before each (empty, links whole, nodes running, clocks true)."""
    reset(_standalone_module)
    return _standalone_module


@pytest.fixture
def single(_single_module: LocalTopology) -> LocalTopology:
    """One master behind Toxiproxy, shared by a module's tests and put back to a clean slate
    before each."""
    reset(_single_module)
    return _single_module


@pytest.fixture
def sentinel() -> Iterator[LocalTopology]:
    """Master + 2 replicas + 3 Sentinels behind Toxiproxy, fresh for each test (a failover
    moves the master for good)."""
    with topology.start("sentinel") as topo:
        yield topo


@pytest.fixture(scope="session")
def cell_runs(tmp_path_factory: pytest.TempPathFactory) -> CellRuns:
    """The truth table's cells by name, each run once a session (tests/cells.py)."""
    return CellRuns(tmp_path_factory)


@pytest.fixture
def violated_run(cell_runs: CellRuns) -> Path:
    """The run directory of del-release under slow work, stopped at its first hard violation
    ("A releases B's lock", seed 004): the truth table's cell, a real run on a real topology."""
    return cell_runs("del-release × slow-work")[1].run_dir


@pytest.fixture
def docker_out(tmp_path: Path) -> Iterator[Path]:
    """A docker test's directory for its runs; afterwards, nothing the provider started in
    this process is left on the engine (containers, networks, volumes)."""
    yield tmp_path
    assert left_by(os.getpid()) == []
