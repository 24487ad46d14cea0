"""lockchaos as a user installs it: a wheel of this checkout, installed into a fresh venv, run
from a directory that is not the checkout, with a per-user cache (tests/redis/test_install.py,
tests/drivers/test_installed_wheel.py).

Two caches make a second run fast: the dependency wheels (``.cache/wheelhouse``, filled from
PyPI only when an offline install fails) and the per-user cache ``lockchaos setup`` fills
(``.cache/user-cache``, as ``XDG_CACHE_HOME``). ``seed_user_cache`` starts that cache from the
builds ``make setup`` made in this checkout with the same script the wheel carries
(``chaos/commands/setup.sh``, ``chaos/drivers/build.sh``), which builds them from nothing on
every fresh clone: building them again into the user cache would cost CI four minutes to prove
the same script twice (``scripts/fresh-machine.sh`` proves set-up from nothing end to end).
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WHEELHOUSE = REPO / ".cache" / "wheelhouse"
USER_CACHE = REPO / ".cache" / "user-cache"  # XDG_CACHE_HOME of the "user"
STEP_TIMEOUT_S = 900  # the first `lockchaos setup` builds Toxiproxy and Redis (and drivers)
# What every `lockchaos setup` builds, with or without --drivers: a test that seeds less makes
# its setup build them from nothing (a fresh clone's test_installed_wheel once took 207 s so,
# and test_install waited for it on the cache's lock).
SET_UP = ("redis", "bin/toxiproxy-server", "bin/toxiproxy-cli")


Argv = list[str | Path]


def run(
    argv: Argv, *, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``argv`` to its end (bounded by ``STEP_TIMEOUT_S``), its output captured."""
    return subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT_S,
        check=False,
    )


def ok(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    """``proc``, once it is known to have exited 0 (else the failure shows its output)."""
    assert proc.returncode == 0, (
        f"{proc.args} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    )
    return proc


def build_wheel(tmp_path: Path) -> Path:
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
    built = run([*wheel, "--no-index", "--find-links", WHEELHOUSE])
    if built.returncode != 0:
        ok(run([*wheel]))
    (found,) = dist.glob("lockchaos-*.whl")
    return found


def install(wheel: Path, venv: Path) -> None:
    """``pip install WHEEL`` into a fresh venv: offline from the wheelhouse when it has every
    dependency, else from PyPI (keeping the dependencies' wheels for next time). The venv is
    made without pip and this interpreter's pip installs into it (``--python``), without
    compiling byte code: a minute less on a busy machine, and the same files installed."""
    ok(run([sys.executable, "-m", "venv", "--without-pip", venv]))
    pip: Argv = [sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install",
                 "-q", "--no-compile"]  # fmt: skip
    WHEELHOUSE.mkdir(parents=True, exist_ok=True)
    # One install at a time: two pytest workers filling an empty wheelhouse (a fresh clone)
    # removed each other's copy of the wheel under test mid-install.
    with open(WHEELHOUSE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        offline = run([*pip, "--no-index", "--find-links", WHEELHOUSE, wheel])
        if offline.returncode == 0:
            return
        ok(run([sys.executable, "-m", "pip", "wheel", "-q", "-w", WHEELHOUSE, wheel,
                "setuptools>=68", "wheel"]))  # fmt: skip
        for own in WHEELHOUSE.glob("lockchaos-*.whl"):
            own.unlink()  # the wheel under test is always the one just built
        ok(run([*pip, "--no-index", "--find-links", WHEELHOUSE, wheel]))


def seed_user_cache(*extra: str) -> Path:
    """The user's lockchaos cache, holding a copy of each of this checkout's builds in
    ``SET_UP`` and ``extra`` that exists (paths under ``.cache/``, e.g. ``drivers``);
    ``lockchaos setup`` then finds them present, as after a first set-up. Returns the cache.

    Each copy is made beside its place and renamed into it, so a setup running meanwhile in
    another test (two pytest workers share this cache) never sees half a build."""
    cache = USER_CACHE / "lockchaos"
    for build in (*SET_UP, *extra):
        source, target = REPO / ".cache" / build, cache / build
        if not source.exists() or target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.{os.getpid()}")
        if source.is_dir():
            shutil.copytree(source, partial, symlinks=True)
        else:
            shutil.copy2(source, partial)
        try:
            os.rename(partial, target)  # atomic; a directory is refused if another got there
        except OSError:
            shutil.rmtree(partial, ignore_errors=True)
    return cache


def user_env() -> dict[str, str]:
    """The environment of a user outside the checkout: no LOCKCHAOS_* overrides, the
    per-user cache under ``USER_CACHE``, nothing of the checkout on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOCKCHAOS_", "PYTHON"))}
    env.pop("VIRTUAL_ENV", None)
    env["XDG_CACHE_HOME"] = str(USER_CACHE)
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if p and not p.startswith(str(REPO))
    )
    return env


def verdict_of(proc: subprocess.CompletedProcess[str], cwd: Path) -> tuple[str, Path]:
    """The verdict and run directory ``lockchaos run`` (run in ``cwd``) printed."""
    match = re.search(r"^verdict: (\S+) — run dir (\S+)$", proc.stdout, re.MULTILINE)
    assert match, proc.stdout + proc.stderr
    return match.group(1), cwd / match.group(2)
