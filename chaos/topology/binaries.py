"""Where the external programs lockchaos runs live.

Order of preference: an environment override (``LOCKCHAOS_REDIS_SERVER`` …), the project-local
cache that ``make setup`` fills (``.cache/``), then ``PATH``. The Redis used for data nodes must
be the MALLOC=libc build: libfaketime cannot wrap Debian's jemalloc-linked binary.
"""

from __future__ import annotations

import glob
import os
import shutil
from functools import cache
from pathlib import Path

from chaos.errors import UsageError

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("LOCKCHAOS_CACHE", PROJECT_ROOT / ".cache"))

_LOCATIONS = {
    "redis-server": CACHE / "redis" / "bin" / "redis-server",
    "redis-sentinel": CACHE / "redis" / "bin" / "redis-sentinel",
    "redis-benchmark": CACHE / "redis" / "bin" / "redis-benchmark",
    "toxiproxy-server": CACHE / "bin" / "toxiproxy-server",
    "toxiproxy-cli": CACHE / "bin" / "toxiproxy-cli",
}


def _env_name(program: str) -> str:
    return "LOCKCHAOS_" + program.upper().replace("-", "_")


@cache
def find(program: str) -> str:
    """Absolute path of ``program``; ``UsageError`` naming ``make setup`` when it is missing."""
    override = os.environ.get(_env_name(program))
    if override:
        if not os.access(override, os.X_OK):
            raise UsageError(f"{_env_name(program)}={override} is not an executable file")
        return override
    local = _LOCATIONS.get(program)
    if local is not None and os.access(local, os.X_OK):
        return str(local)
    on_path = shutil.which(program)
    if on_path and program != "redis-server":
        return on_path
    raise UsageError(f"{program} not found: run `make setup` (or set {_env_name(program)})")


@cache
def libfaketime() -> str:
    """Path of libfaketime.so.1 (Debian's ``libfaketime`` package)."""
    override = os.environ.get("LOCKCHAOS_LIBFAKETIME")
    candidates = [override] if override else []
    candidates += sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))
    candidates += ["/usr/local/lib/faketime/libfaketime.1.dylib"]
    for candidate in candidates:
        if candidate and os.path.exists(candidate):
            return candidate
    raise UsageError("libfaketime not found: run `make setup` (or set LOCKCHAOS_LIBFAKETIME)")
