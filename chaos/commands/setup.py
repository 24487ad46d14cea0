"""``lockchaos setup``: install the programs lockchaos runs, into its cache, idempotently.

The steps live in one shell script shipped with the package (``setup.sh`` next to this
module), which a checkout's ``scripts/setup.sh`` runs too (into the checkout's ``.cache``):
apt packages (redis-server, redis-sentinel, redis-tools, libfaketime, gpgv,
debian-archive-keyring), Toxiproxy (``go install``) and Redis built with ``MALLOC=libc`` (for
clock faults) from its verified upstream tarball (``chaos.images.sources``, run with this
interpreter). A second run with
everything present takes about a second.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import typer

from chaos.commands import doctor as doctor_command
from chaos.errors import UsageError
from chaos.topology import binaries

SCRIPT = Path(__file__).with_name("setup.sh")


def setup(
    cache_dir: Path | None = typer.Option(
        None,
        "--cache",
        help="where to install (default: LOCKCHAOS_CACHE, a checkout's .cache, else "
        "$XDG_CACHE_HOME/lockchaos or ~/.cache/lockchaos)",
    ),
) -> None:
    """Install redis-server/redis-sentinel (MALLOC=libc build), Toxiproxy and libfaketime into
    lockchaos's cache (Debian/Ubuntu, apt + Go); safe to run again."""
    bash = shutil.which("bash")
    if bash is None:
        raise UsageError("lockchaos setup needs bash on PATH")
    if not SCRIPT.is_file():
        raise UsageError(f"{SCRIPT} is missing from this installation: reinstall lockchaos")
    target = (cache_dir or binaries.default_cache()).expanduser()
    if target.exists() and not target.is_dir():
        raise UsageError(f"--cache {target} is not a directory")
    sys.stdout.flush()
    env = {**os.environ, "LOCKCHAOS_SETUP_PYTHON": sys.executable}  # for chaos.images.sources
    code = subprocess.run([bash, str(SCRIPT), str(target)], env=env, check=False).returncode
    if code != 0:
        # The script's last line on stderr said what failed.
        raise typer.Exit(1)
    if cache_dir is not None and target.resolve() != binaries.default_cache().resolve():
        print(
            f"lockchaos looks in {binaries.default_cache()} by default: "
            f"set LOCKCHAOS_CACHE={target} to use what was installed here"
        )
        return
    for cached in (binaries.locate, binaries.version_line, binaries.locate_libfaketime):
        cached.cache_clear()
    report = doctor_command.diagnose()
    doctor_command.print_report(report)
    raise typer.Exit(0 if report["ok"] else 1)
