"""lockchaos as a user installs it: a wheel in a fresh venv, outside the checkout.

Builds the wheel from a copy of the package's sources, installs it into a new venv, runs
``lockchaos setup`` into a per-user cache and ``lockchaos run --lock lua --duration 3`` from a
directory that is not the checkout. Real processes throughout, nothing mocked.

Two caches make the second run of this test fast: the dependency wheels
(``.cache/wheelhouse``, filled from PyPI only when an offline install fails) and the per-user
cache ``lockchaos setup`` fills (``.cache/user-cache``, as ``XDG_CACHE_HOME``): its Redis build
happens once per machine, not once per test run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WHEELHOUSE = REPO / ".cache" / "wheelhouse"
USER_CACHE = REPO / ".cache" / "user-cache"  # XDG_CACHE_HOME of the "user"
STEP_TIMEOUT_S = 900  # the first `lockchaos setup` builds Toxiproxy and Redis


Argv = list[str | Path]


def _run(
    argv: Argv, *, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT_S,
        check=False,
    )


def _ok(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert proc.returncode == 0, (
        f"{proc.args} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    )
    return proc


def _build_wheel(tmp_path: Path) -> Path:
    """The wheel of a copy of the sources (the shared checkout gets no build/ directory)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(
        REPO / "chaos", src / "chaos", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    dist = tmp_path / "dist"
    wheel: Argv = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", dist, src]
    # setuptools/wheel for the isolated build come from the wheelhouse once it has them.
    built = _run([*wheel, "--no-index", "--find-links", WHEELHOUSE])
    if built.returncode != 0:
        _ok(_run([*wheel]))
    (found,) = dist.glob("lockchaos-*.whl")
    return found


def _install(wheel: Path, venv: Path) -> None:
    """``pip install WHEEL`` into a fresh venv: offline from the wheelhouse when it has every
    dependency, else from PyPI (keeping the dependencies' wheels for next time)."""
    _ok(_run([sys.executable, "-m", "venv", venv]))
    pip: Argv = [venv / "bin" / "python", "-m", "pip", "install", "-q"]
    offline = _run([*pip, "--no-index", "--find-links", WHEELHOUSE, wheel])
    if offline.returncode == 0:
        return
    WHEELHOUSE.mkdir(parents=True, exist_ok=True)
    _ok(_run([sys.executable, "-m", "pip", "wheel", "-q", "-w", WHEELHOUSE, wheel,
              "setuptools>=68", "wheel"]))  # fmt: skip
    for own in WHEELHOUSE.glob("lockchaos-*.whl"):
        own.unlink()  # the wheel under test is always the one just built
    _ok(_run([*pip, "--no-index", "--find-links", WHEELHOUSE, wheel]))


def _user_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a user outside the checkout: no LOCKCHAOS_* overrides, the
    per-user cache under ``USER_CACHE``, nothing of the checkout on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOCKCHAOS_", "PYTHON"))}
    env.pop("VIRTUAL_ENV", None)
    env["XDG_CACHE_HOME"] = str(USER_CACHE)
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if p and not p.startswith(str(REPO))
    )
    return env


@pytest.mark.slow
@pytest.mark.timeout(3 * STEP_TIMEOUT_S)
def test_wheel_in_a_fresh_venv_sets_up_and_runs_outside_the_checkout(tmp_path: Path) -> None:
    wheel = _build_wheel(tmp_path)
    venv = tmp_path / "venv"
    _install(wheel, venv)
    lockchaos = venv / "bin" / "lockchaos"
    elsewhere = tmp_path / "elsewhere"  # the user's project, not a lockchaos checkout
    elsewhere.mkdir()
    env = _user_env(tmp_path)

    # The package ships the set-up script and finds no checkout around itself.
    site = _ok(_run([venv / "bin" / "python", "-c", "import chaos; print(chaos.__file__)"],
                    cwd=elsewhere, env=env)).stdout.strip()  # fmt: skip
    assert not site.startswith(str(REPO))
    assert (Path(site).parent / "commands" / "setup.sh").is_file()
    # ...and the docker provider's Compose file and Toxiproxy config, where it looks for them.
    shown = _run([venv / "bin" / "python", "-c",
                  "from chaos.topology.docker import COMPOSE_FILE; print(COMPOSE_FILE)"],
                 cwd=elsewhere, env=env)  # fmt: skip
    compose = Path(_ok(shown).stdout.strip())
    assert compose == Path(site).parent / "topology" / "compose" / "docker-compose.yml"
    assert compose.is_file() and compose.with_name("toxiproxy.json").is_file()

    setup = _ok(_run([lockchaos, "setup"], cwd=elsewhere, env=env))
    assert f"[setup] cache: {USER_CACHE / 'lockchaos'}" in setup.stdout
    assert "ready: every fault can run on the local provider" in setup.stdout

    # idempotent: nothing is built twice (bench/timings.py times a second setup)
    again = _ok(_run([lockchaos, "setup"], cwd=elsewhere, env=env))
    assert "[setup] redis (MALLOC=libc): present" in again.stdout
    assert "[setup] toxiproxy: present" in again.stdout

    doctor = json.loads(_ok(_run([lockchaos, "doctor", "--json"], cwd=elsewhere, env=env)).stdout)
    assert doctor["in_checkout"] is False and doctor["ok"] is True
    assert doctor["clock_faults"] is True
    server = doctor["programs"]["redis-server"]
    assert server["source"] == "user cache" and server["libc_build"] is True
    assert server["path"].startswith(str(USER_CACHE / "lockchaos"))
    assert doctor["programs"]["toxiproxy-server"]["source"] == "user cache"

    run = _run([lockchaos, "run", "--lock", "lua", "--duration", "3"], cwd=elsewhere, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    match = re.search(r"^verdict: (\S+) — run dir (\S+)$", run.stdout, re.MULTILINE)
    assert match, run.stdout
    assert match.group(1) == "ok"
    run_dir = elsewhere / match.group(2)
    assert run_dir.parent == elsewhere / "reports"
    for name in ("history.jsonl", "verdict.json", "junit.xml", "report.html"):
        assert (run_dir / name).is_file(), name
    assert json.loads((run_dir / "verdict.json").read_text())["verdict"] == "ok"
