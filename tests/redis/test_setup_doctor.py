"""Finding the binaries, ``lockchaos doctor`` and ``lockchaos setup``'s input checks — real
binaries and processes, no mocks.

Debian's redis-server on PATH (jemalloc) stands in for a user who has not run
``lockchaos setup``: runs without a clock fault use it (its nodes off libfaketime), a clock
fault is refused in one line naming the fix. The end-to-end install of the wheel is
tests/redis/test_install.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from chaos.drivers.catalog import BUNDLED_DRIVERS
from chaos.errors import UsageError
from chaos.topology import LocalTopology, binaries
from chaos.topology.base import CLOCK

REPO = Path(__file__).resolve().parents[2]
DEBIAN_REDIS = "/usr/bin/redis-server"  # apt's redis-server: links jemalloc


def _checkout_toxiproxy() -> str:
    found = binaries.locate("toxiproxy-server")
    assert found is not None, "run `make setup`"
    return found.path


def _path_redis_env(tmp_path: Path) -> dict[str, str]:
    """No cache (an empty LOCKCHAOS_CACHE), Debian's redis on PATH, Toxiproxy by override."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCKCHAOS_")}
    env.update(
        LOCKCHAOS_CACHE=str(tmp_path / "empty-cache"),
        LOCKCHAOS_TOXIPROXY_SERVER=_checkout_toxiproxy(),
        PATH="/usr/bin:/bin",
        COLUMNS="200",
    )
    return env


def _lockchaos(
    args: list[str], env: dict[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "chaos.cli", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _loads_libfaketime(pid: int) -> bool:
    return "libfaketime" in Path(f"/proc/{pid}/maps").read_text()


@pytest.fixture
def fresh_lookup() -> Iterator[None]:
    """Forget what earlier lookups found (they are cached per process), before and after."""

    def clear() -> None:
        for cached in (binaries.locate, binaries.version_line, binaries.locate_libfaketime):
            cached.cache_clear()

    clear()
    yield
    clear()


def test_debian_redis_is_the_jemalloc_build_this_file_relies_on() -> None:
    assert os.access(DEBIAN_REDIS, os.X_OK), "apt's redis-server (make setup installs it)"
    assert not binaries.is_libc_build(DEBIAN_REDIS)
    assert (binaries.redis_malloc(DEBIAN_REDIS) or "").startswith("jemalloc")
    setup_build = binaries.locate("redis-server")
    assert setup_build is not None and binaries.is_libc_build(setup_build.path)


def test_path_redis_runs_a_lock_without_clock_faults(tmp_path: Path) -> None:
    env = _path_redis_env(tmp_path)
    out = tmp_path / "reports"
    proc = _lockchaos(
        ["run", "--lock", "lua", "--faults", "latency", "--duration", "1.5", "--out", str(out),
         "--json"], env, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    verdict = json.loads(proc.stdout)
    # ok — or a lease a loaded machine let lapse mid-work (a fresh clone's CI: soft), below
    # the gate: what this test is about is that the PATH's redis-server ran the lock.
    assert verdict["verdict"] in ("ok", "soft", "data"), verdict["explanations"]
    assert verdict["counts"]["lock_cycles"] >= 2
    assert Path(verdict["run_dir"]).parent == out


def test_clock_fault_with_path_redis_is_one_line_naming_setup(tmp_path: Path) -> None:
    proc = _lockchaos(
        ["run", "--lock", "lua", "--faults", "clock-jump", "--duration", "1",
         "--out", str(tmp_path / "reports")], _path_redis_env(tmp_path), cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("lockchaos: clock-jump needs a redis-server built with MALLOC=libc")
    assert f"({DEBIAN_REDIS}, from PATH) links jemalloc" in line
    assert "run `lockchaos setup` (or `make setup` in this checkout)" in line
    assert not (tmp_path / "reports").exists()  # refused before anything started


def test_path_redis_nodes_run_off_libfaketime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_lookup: None
) -> None:
    for name, value in _path_redis_env(tmp_path).items():
        monkeypatch.setenv(name, value)
    with LocalTopology("standalone", nodes=1) as topo:
        assert topo.clock is False and CLOCK not in topo.capabilities
        node = topo.nodes[0]
        assert not _loads_libfaketime(node.pid)
        assert os.path.realpath(f"/proc/{node.pid}/exe") == os.path.realpath(DEBIAN_REDIS)
        with pytest.raises(UsageError, match="runs without libfaketime"):
            node.set_clock_offset(5.0)
        assert node.client().ping()
    with pytest.raises(UsageError, match="MALLOC=libc"):
        LocalTopology("standalone", nodes=1, clock=True)


def test_setup_build_nodes_run_under_libfaketime(fresh_lookup: None) -> None:
    with LocalTopology("standalone", nodes=1) as topo:
        assert topo.clock is True and CLOCK in topo.capabilities
        assert _loads_libfaketime(topo.nodes[0].pid)


def test_doctor_in_the_checkout_finds_everything() -> None:
    proc = _lockchaos(["doctor", "--json"], {**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["ok"] and report["in_checkout"] and report["clock_faults"]
    assert report["caches"][0] == {
        "source": "checkout cache",
        "path": str(REPO / ".cache"),
        "exists": True,
    }
    assert report["programs"]["redis-server"]["libc_build"] is True
    assert all("local" in entry["providers"] for entry in report["faults"].values())
    # a driver is listed with its build when it has one (tests/drivers: when there is none)
    for build, entry in report["drivers"].items():
        assert entry["path"] in (None, str(REPO / ".cache" / "drivers" / build)), build
    assert report["kits"]["python"]["path"] == str(REPO / ".cache" / "drivers" / "kits" /
                                                   "python")
    text = _lockchaos(["doctor"], {**os.environ, "COLUMNS": "200"})
    assert text.returncode == 0
    assert "ready: every fault can run on the local provider" in text.stdout


def test_doctor_with_path_redis_names_the_clock_faults_it_cannot_run(tmp_path: Path) -> None:
    env = _path_redis_env(tmp_path)
    proc = _lockchaos(["doctor", "--json"], env)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    server = report["programs"]["redis-server"]
    assert server["source"] == "PATH" and server["libc_build"] is False
    assert report["programs"]["toxiproxy-server"]["source"] == "LOCKCHAOS_TOXIPROXY_SERVER"
    assert report["clock_faults"] is False
    assert "local" not in report["faults"]["clock-jump"]["providers"]
    assert "local" in report["faults"]["latency"]["providers"]
    text = _lockchaos(["doctor"], env).stdout
    assert "every run works except clock-jump" in text
    assert "for the MALLOC=libc build" in text


def test_doctor_without_the_basics_exits_1_naming_setup(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCKCHAOS_")}
    env.update(LOCKCHAOS_CACHE=str(tmp_path / "empty"), PATH=str(tmp_path / "no-bin"))
    proc = _lockchaos(["doctor", "--json"], env)
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert report["missing"] == ["redis-server", "redis-sentinel", "toxiproxy-server"]
    # No docker on PATH, no driver in the (empty) cache: none is listed as possible, and each
    # says the one command that sets it up.
    assert all(not entry["providers"] for entry in report["faults"].values())
    assert report["docker"]["problem"] == "no Docker engine answers `docker info`"
    builds = list(dict.fromkeys(entry.build for entry in BUNDLED_DRIVERS.values()))
    assert list(report["drivers"]) == builds
    assert all(entry["path"] is None for entry in report["drivers"].values())
    # The kits: python's needs no program of its own, the others' toolchains are not on PATH
    assert report["kits"]["python"] == {"skeletons": ["redis-py"], "tools_missing": [],
                                        "path": None}
    assert all(entry["tools_missing"] for name, entry in report["kits"].items()
               if name != "python")
    text = _lockchaos(["doctor"], {**env, "COLUMNS": "200"})
    assert text.returncode == 1
    assert (
        "missing: redis-server, redis-sentinel, toxiproxy-server: run `lockchaos setup`"
        in text.stdout
    )
    assert "docker provider: not usable: no Docker engine answers `docker info`" in text.stdout
    assert (  # one line, which a terminal of 200 columns may wrap
        f"drivers not built: {', '.join(builds)}, the python kit: run `lockchaos setup "
        "--drivers` (or `make setup` in this checkout)" in " ".join(text.stdout.split())
    )


def test_setup_into_a_file_is_one_line_exit_2(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    proc = _lockchaos(["setup", "--cache", str(not_a_dir)], dict(os.environ))
    assert proc.returncode == 2
    expected = f"lockchaos: --cache {not_a_dir} is not a directory"
    assert proc.stderr.strip().splitlines() == [expected]


def test_setup_into_the_checkout_cache_is_idempotent_and_quick() -> None:
    """Everything is present after `make setup`: a second run builds nothing."""
    proc = _lockchaos(["setup"], {**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    assert f"[setup] cache: {REPO / '.cache'}" in proc.stdout
    for step in ("apt packages", "toxiproxy", "redis (MALLOC=libc)"):
        assert f"[setup] {step}: present" in proc.stdout
    assert "ready: every fault can run on the local provider" in proc.stdout


def test_the_setup_steps_are_written_once() -> None:
    """scripts/setup.sh runs the shipped script; it keeps no copy of its steps."""
    checkout = (REPO / "scripts" / "setup.sh").read_text()
    shipped = (REPO / "chaos" / "commands" / "setup.sh").read_text()
    assert 'bash "$ROOT/chaos/commands/setup.sh" "$CACHE"' in checkout
    steps = ("chaos.images.sources", "go install", "MALLOC=libc BUILD_TLS=no", "libfaketime gpgv")
    for step in steps:
        assert step in shipped and step not in checkout
