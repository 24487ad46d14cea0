"""The whole product from a wheel: ``pip install`` into a fresh venv outside the checkout,
``lockchaos setup --drivers`` builds the bundled drivers from the sources the wheel carries
into the per-user cache, and a driver's run and a docker provider's run each get their verdict
from a directory that is not the checkout (issue 21). Real toolchains, processes and Docker.

The per-user cache is shared with tests/redis/test_install.py (tests/installed.py). It starts
from the checkout's own builds (`make setup`'s): setup keeps those whose stamps are the
checksums of the wheel's sources, so the test takes about half a minute.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import installed
import pytest
from installed import REPO, Argv, ok, run
from prerequisites import need, toolchain_gap

from chaos.drivers import catalog

SOURCES = Path("chaos", "drivers", "sources")
KITS = Path("chaos", "drivers", "kits")
REDSYNC = ("go.mod", "go.sum", "main.go")  # what its build stamp is the checksum of


@pytest.mark.slow
@pytest.mark.images("redis-7.0", "toxiproxy")
@pytest.mark.timeout(4 * installed.STEP_TIMEOUT_S)
def test_a_wheel_builds_its_drivers_and_runs_them_and_the_docker_provider(tmp_path: Path) -> None:
    need(toolchain_gap())
    wheel = installed.build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as archive:
        carried = set(archive.namelist())
    shipped = {str(p.relative_to(REPO)) for folder in (SOURCES, KITS)
               for p in (REPO / folder).rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert shipped and shipped <= carried, shipped - carried  # every driver's and kit's sources
    for data in ("chaos/drivers/build.sh", "chaos/topology/compose/docker-compose.yml"):
        assert data in carried, data
    venv = tmp_path / "venv"
    installed.install(wheel, venv)
    lockchaos = venv / "bin" / "lockchaos"
    elsewhere = tmp_path / "elsewhere"  # the user's project, not a lockchaos checkout
    elsewhere.mkdir()
    env = installed.user_env()
    # The builds `make setup` made from this checkout's copy of the sources: setup keeps each
    # driver whose stamp is the checksum of the wheel's copy (asserted below) and builds the rest.
    drivers = installed.seed_user_cache("drivers") / "drivers"

    setup = ok(run([lockchaos, "setup", "--drivers"], cwd=elsewhere, env=env))
    assert f"[drivers] ready: {drivers}" in setup.stdout
    # Redis and Toxiproxy, which setup builds with or without --drivers, are kept too.
    assert "[setup] redis (MALLOC=libc): present" in setup.stdout
    assert "[setup] toxiproxy: present" in setup.stdout
    # Built from the wheel's own copy of the sources: the build's stamp is their checksum.
    site = next((venv / "lib").glob("python3*/site-packages"))
    assert not (site / SOURCES).is_relative_to(REPO)
    digest = hashlib.sha256(b"".join((site / SOURCES / "redsync" / f).read_bytes()
                                     for f in REDSYNC)).hexdigest()  # fmt: skip
    assert (drivers / "redsync" / ".stamp").read_text().startswith(f"{digest}-")

    doctor = json.loads(ok(run([lockchaos, "doctor", "--json"], cwd=elsewhere, env=env)).stdout)
    assert doctor["in_checkout"] is False
    for build in {entry.build for entry in catalog.BUNDLED_DRIVERS.values()}:
        assert doctor["drivers"][build]["path"] == str(drivers / build), build
    assert doctor["docker"]["problem"] is None, doctor["docker"]
    assert doctor["kits"]["python"]["path"] == str(drivers / "kits" / "python")
    assert "docker" in doctor["faults"]["latency"]["providers"]

    # A driver of the user's own, from the wheel's Python skeleton, in the user's project.
    new = ok(run([lockchaos, "driver", "new", "--lang", "python", elsewhere / "mylock"],
                 cwd=elsewhere, env=env))
    mine = new.stdout.rstrip("\n").splitlines()[-1]
    assert mine.startswith("exec:") and str(venv) in mine, new.stdout
    runs: list[tuple[str, str]] = [("local", mine), ("local", "redsync"), ("docker", "lua")]
    for provider, lock in runs:
        # A 1 s lease: a starved client on a loaded machine may outlive a 200 ms one (soft).
        argv: Argv = [lockchaos, "run", "--provider", provider, "--lock", lock, "--duration", "3",
                      "--ttl-ms", "1000"]  # fmt: skip
        done = run(argv, cwd=elsewhere, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        verdict, run_dir = installed.verdict_of(done, elsewhere)
        assert verdict == "ok" and run_dir.parent == elsewhere / "reports", done.stdout
        assert json.loads((run_dir / "verdict.json").read_text())["lock"] == lock
