"""What a test needs that `make setup` and `make docker` provide outside Python (a Docker
engine and lockchaos's images, a built lock driver, Chromium), and what happens when it is
not here.

Outside CI the test skips, naming exactly what is missing (a laptop without Docker still
runs the rest). Under CI (the ``CI`` variable set, as CI services set it: ``CI=true``) the
test fails with that line instead: CI ran `make setup` (and `make docker` before the docker
tests), which under CI fail when they cannot set a prerequisite up, so a missing one there
means something is broken, and a skip would turn that into a green run that tested nothing
(issue 21).

One decision for every group: ``need(gap)``. The gaps are one line each ("" when nothing is
missing): ``image_gap`` (pure: declared images vs present ones), ``docker_gap`` (the engine,
Compose v2 and the declared images), ``driver_gap``. A docker test declares the images it
runs with ``@pytest.mark.images("redis-8.0", "toxiproxy")`` (tests/conftest.py gates it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Collection, Sequence
from functools import cache
from typing import NoReturn

import pytest

from chaos.drivers import catalog
from chaos.errors import UsageError
from chaos.topology.images import IMAGES, image_for

DOCKER_TIMEOUT_S = 20
IMAGES_HINT = "make docker builds them"


def under_ci() -> bool:
    """True under CI (``CI`` set and not empty: what chaos.explore.profiles reads too)."""
    return bool(os.environ.get("CI"))


def unavailable(reason: str) -> NoReturn:
    """Skip the running test naming what is missing; under CI, fail it with the same line."""
    if under_ci():
        pytest.fail(f"{reason} (CI: set-up ran, so a missing prerequisite is a failure)",
                    pytrace=False)  # fmt: skip
    pytest.skip(reason)


def need(gap: str) -> None:
    """Go on when ``gap`` is "" (nothing missing); otherwise ``unavailable(gap)``."""
    if gap:
        unavailable(gap)


def image_gap(declared: Sequence[str], present: Collection[str]) -> str:
    """The images of ``declared`` (names: ``redis-8.0``…) not in ``present``, in one line.
    An unknown name is a ``UsageError`` naming the choices: a typo must not skip."""
    absent = [image_for(name) for name in declared if name not in present]
    return f"no image {', '.join(absent)} ({IMAGES_HINT})" if absent else ""


def docker_gap(declared: Sequence[str]) -> str:
    """What a docker test that runs the images ``declared`` lacks here, in one line."""
    return _engine_gap() or image_gap(declared, _present_images())


def driver_gap(lock: str) -> str:
    """Why the bundled driver of ``lock`` cannot start here ("" when it is built)."""
    try:
        catalog.BUNDLED_DRIVERS[lock].argv()
    except UsageError as exc:
        return str(exc)
    return ""


TOOLCHAINS = ("java", "javac", "mvn", "go", "node", "npm", "cargo")  # what drivers/build.sh runs


def toolchain_gap() -> str:
    """The programs building the bundled drivers takes that are not on PATH, in one line."""
    absent = [program for program in TOOLCHAINS if shutil.which(program) is None]
    if not absent:
        return ""
    return (f"no {', '.join(absent)} on PATH: the bundled drivers cannot be built (a JDK 17 "
            "and Maven, Go, Node.js and npm, Rust's cargo; scripts/setup.sh does not install "
            "them)")  # fmt: skip


@cache
def _engine_gap() -> str:
    """The engine or Compose v2 that is missing (asked once a session)."""
    if not _answers(["docker", "info"]):
        return "no Docker engine: `docker info` failed (make docker starts one as root)"
    if not _answers(["docker", "compose", "version"]):
        return "no Compose v2: `docker compose version` failed (make docker builds it)"
    return ""


@cache
def _present_images() -> frozenset[str]:
    """The names of lockchaos's images the engine has (asked once a session)."""
    return frozenset(
        name for name, own in IMAGES.items() if _answers(["docker", "image", "inspect", own.image])
    )


def _answers(argv: list[str]) -> bool:
    try:
        done = subprocess.run(argv, capture_output=True, timeout=DOCKER_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0
