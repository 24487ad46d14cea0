"""``lockchaos setup``: install the programs lockchaos runs, into its cache, idempotently.

The steps live in one shell script shipped with the package (``setup.sh`` next to this
module), which a checkout's ``scripts/setup.sh`` runs too (into the checkout's ``.cache``):
apt packages (redis-server, redis-sentinel, redis-tools, libfaketime, gpgv,
debian-archive-keyring), Toxiproxy (``go install``) and Redis built with ``MALLOC=libc`` (for
clock faults) from its verified upstream tarball (``chaos.images.sources``, run with this
interpreter). A second run with
everything present takes about a second.

What else the package ships, on request, into the same cache: ``--drivers`` builds the driver
kits (``chaos/drivers/kits/``, each installed where its language's tools look, for ``lockchaos
driver new``) and the bundled Java, Go and Node lock drivers written on them, from their
sources in the package (``chaos/drivers/build.sh``, what a checkout's
``scripts/drivers-setup.sh`` runs too); ``--docker`` checks that a Docker
engine and Compose v2 answer and builds lockchaos's images the docker provider runs (every
``--server`` and Toxiproxy: ``python -m chaos.images build``, root and debootstrap). Each is
idempotent; the report at the end (``lockchaos doctor``'s) says what runs now.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import typer

from chaos.commands import doctor as doctor_command
from chaos.drivers import catalog
from chaos.errors import UsageError
from chaos.topology import binaries
from chaos.topology.images import SERVERS

SCRIPT = Path(__file__).with_name("setup.sh")
DOCKER_IMAGES = (*SERVERS, "toxiproxy")  # what the docker provider runs (not the demo's)


def setup(
    cache_dir: Path | None = typer.Option(
        None,
        "--cache",
        help="where to install (default: LOCKCHAOS_CACHE, a checkout's .cache, else "
        "$XDG_CACHE_HOME/lockchaos or ~/.cache/lockchaos)",
    ),
    drivers: bool = typer.Option(
        False,
        "--drivers",
        help="also build the driver kits (lockchaos driver new) and the bundled Java, Go and "
        "Node lock drivers (needs a JDK 17 and Maven, Go, Node.js 18+ and npm, Rust's cargo; "
        "downloads from Maven Central, the Go proxy, npm, crates.io)",
    ),
    docker: bool = typer.Option(
        False,
        "--docker",
        help="also set up the docker provider: check the Docker engine and Compose v2, build "
        "lockchaos's images (as root: debootstrap; minutes per image the first time)",
    ),
) -> None:
    """Install redis-server/redis-sentinel (MALLOC=libc build), Toxiproxy and libfaketime into
    lockchaos's cache (Debian/Ubuntu, apt + Go), and with --drivers/--docker the bundled
    drivers and the docker provider's images; safe to run again."""
    bash = shutil.which("bash")
    if bash is None:
        raise UsageError("lockchaos setup needs bash on PATH")
    if not SCRIPT.is_file():
        raise UsageError(f"{SCRIPT} is missing from this installation: reinstall lockchaos")
    target = (cache_dir or binaries.default_cache()).expanduser()
    if target.exists() and not target.is_dir():
        raise UsageError(f"--cache {target} is not a directory")
    env = {**os.environ, "LOCKCHAOS_SETUP_PYTHON": sys.executable}  # for chaos.images.sources
    if cache_dir is not None:
        env["LOCKCHAOS_CACHE"] = str(target)  # chaos.images builds with what was installed here
    # Each step's last line on stderr says what failed.
    if not _step([bash, str(SCRIPT), str(target)], env):
        raise typer.Exit(1)
    done = True
    if drivers:
        into = target / "drivers" if cache_dir is not None else catalog.build_dirs()[0]
        done = _step([bash, str(catalog.BUILD_SCRIPT), str(into)], env) and done
    if docker:
        done = _docker_setup(env) and done
    if cache_dir is not None and target.resolve() != binaries.default_cache().resolve():
        print(
            f"lockchaos looks in {binaries.default_cache()} by default: "
            f"set LOCKCHAOS_CACHE={target} to use what was installed here"
        )
        raise typer.Exit(0 if done else 1)
    for cached in (binaries.locate, binaries.version_line, binaries.locate_libfaketime):
        cached.cache_clear()
    report = doctor_command.diagnose()
    doctor_command.print_report(report)
    usable = report["ok"] and (not docker or report["docker"]["problem"] is None)
    raise typer.Exit(0 if done and usable else 1)


def _step(argv: list[str], env: dict[str, str]) -> bool:
    """Run one set-up step (its output goes straight through); True when it succeeded."""
    sys.stdout.flush()
    return subprocess.run(argv, env=env, check=False).returncode == 0


def _docker_setup(env: dict[str, str]) -> bool:
    """The docker provider's prerequisites: an engine and Compose v2 must answer (installing
    and starting an engine is the system's business, said in one line), then lockchaos's
    images are built where missing (``python -m chaos.images build``, with this interpreter)."""
    found = doctor_command.docker_provider()
    if found["engine"] is None or found["compose"] is None:
        print(f"setup: docker provider: {found['problem']}: {found['fix']}", file=sys.stderr)
        return False
    print("[setup] docker provider: engine and Compose v2 answer; building missing images")
    build = [sys.executable, "-m", "chaos.images", "build", *DOCKER_IMAGES]
    return _step(build, env)
