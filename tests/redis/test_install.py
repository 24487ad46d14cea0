"""lockchaos as a user installs it: a wheel in a fresh venv, outside the checkout.

Builds the wheel from a copy of the package's sources, installs it into a new venv, runs
``lockchaos setup`` into a per-user cache and ``lockchaos run --lock lua --duration 3`` from a
directory that is not the checkout. The per-user cache starts from the Redis and Toxiproxy
builds ``make setup`` made with the script the wheel carries (tests/installed.py says why):
setup must find and keep them. Real processes throughout, nothing mocked.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from installed import (
    REPO,
    STEP_TIMEOUT_S,
    USER_CACHE,
    build_wheel,
    install,
    ok,
    run,
    seed_user_cache,
    user_env,
    verdict_of,
)


@pytest.mark.slow
@pytest.mark.timeout(3 * STEP_TIMEOUT_S)
def test_wheel_in_a_fresh_venv_sets_up_and_runs_outside_the_checkout(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    venv = tmp_path / "venv"
    install(wheel, venv)
    lockchaos = venv / "bin" / "lockchaos"
    elsewhere = tmp_path / "elsewhere"  # the user's project, not a lockchaos checkout
    elsewhere.mkdir()
    env = user_env()
    seed_user_cache()

    # The package ships the set-up script and finds no checkout around itself.
    site = ok(run([venv / "bin" / "python", "-c", "import chaos; print(chaos.__file__)"],
                  cwd=elsewhere, env=env)).stdout.strip()  # fmt: skip
    assert not site.startswith(str(REPO))
    assert (Path(site).parent / "commands" / "setup.sh").is_file()
    # ...and the docker provider's Compose file and Toxiproxy config, where it looks for them.
    shown = run([venv / "bin" / "python", "-c",
                 "from chaos.topology.docker import COMPOSE_FILE; print(COMPOSE_FILE)"],
                cwd=elsewhere, env=env)  # fmt: skip
    compose = Path(ok(shown).stdout.strip())
    assert compose == Path(site).parent / "topology" / "compose" / "docker-compose.yml"
    assert compose.is_file() and compose.with_name("toxiproxy.json").is_file()

    setup = ok(run([lockchaos, "setup"], cwd=elsewhere, env=env))
    assert f"[setup] cache: {USER_CACHE / 'lockchaos'}" in setup.stdout
    assert "ready: every fault can run on the local provider" in setup.stdout

    # what make setup built is kept, not built twice (bench/timings.py times a second setup)
    assert "[setup] redis (MALLOC=libc): present" in setup.stdout
    assert "[setup] toxiproxy: present" in setup.stdout

    doctor = json.loads(ok(run([lockchaos, "doctor", "--json"], cwd=elsewhere, env=env)).stdout)
    assert doctor["in_checkout"] is False and doctor["ok"] is True
    assert doctor["clock_faults"] is True
    server = doctor["programs"]["redis-server"]
    assert server["source"] == "user cache" and server["libc_build"] is True
    assert server["path"].startswith(str(USER_CACHE / "lockchaos"))
    assert doctor["programs"]["toxiproxy-server"]["source"] == "user cache"

    # A 1 s lease: at the default 200 ms, a client starved by the rest of a loaded machine (two
    # pytest workers on two cores) outlived its lease once (soft), which is not what this tests.
    done = run([lockchaos, "run", "--lock", "lua", "--duration", "3", "--ttl-ms", "1000"],
               cwd=elsewhere, env=env)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    verdict, run_dir = verdict_of(done, elsewhere)
    assert verdict == "ok"
    assert run_dir.parent == elsewhere / "reports"
    for name in ("history.jsonl", "verdict.json", "junit.xml", "report.html"):
        assert (run_dir / name).is_file(), name
    assert json.loads((run_dir / "verdict.json").read_text())["verdict"] == "ok"
