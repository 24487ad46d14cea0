"""Where the external programs lockchaos runs live.

Order of preference: an environment override (``LOCKCHAOS_REDIS_SERVER`` …), the checkout's
``.cache/`` (when lockchaos runs from a checkout: what ``make setup`` fills), the per-user cache
(``$XDG_CACHE_HOME/lockchaos`` or ``~/.cache/lockchaos``: what ``lockchaos setup`` fills), then
``PATH``. ``LOCKCHAOS_CACHE`` replaces both caches with one directory.

Any redis-server will do for a run without clock faults. Clock faults run the data nodes under
libfaketime, which cannot wrap a jemalloc-linked binary (Debian's): they need the MALLOC=libc
build that ``lockchaos setup`` makes (``clock_problem``, ``require_clock``).
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from chaos.errors import UsageError

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# Running from a checkout (not from an installed wheel): its .cache is searched first.
IN_CHECKOUT = (PROJECT_ROOT / "pyproject.toml").is_file() and (
    PROJECT_ROOT / "scripts" / "setup.sh"
).is_file()

PROGRAMS = ("redis-server", "redis-sentinel", "toxiproxy-server", "toxiproxy-cli")
BASICS = ("redis-server", "redis-sentinel", "toxiproxy-server")  # what every run needs
_IN_CACHE = {
    "redis-server": Path("redis", "bin", "redis-server"),
    "redis-sentinel": Path("redis", "bin", "redis-sentinel"),
    "redis-benchmark": Path("redis", "bin", "redis-benchmark"),
    "toxiproxy-server": Path("bin", "toxiproxy-server"),
    "toxiproxy-cli": Path("bin", "toxiproxy-cli"),
}
_LIBFAKETIME_GLOBS = (
    "/usr/lib/*/faketime/libfaketime.so.1",
    "/usr/lib/faketime/libfaketime.so.1",
    "/usr/local/lib/faketime/libfaketime.so.1",
    "/usr/local/lib/faketime/libfaketime.1.dylib",
)


def user_cache() -> Path:
    """The per-user cache ``lockchaos setup`` fills by default outside a checkout."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lockchaos"


def caches() -> list[tuple[str, Path]]:
    """The cache directories searched, in order, each with what it is."""
    override = os.environ.get("LOCKCHAOS_CACHE")
    if override:
        return [("LOCKCHAOS_CACHE", Path(override))]
    found = [("checkout cache", PROJECT_ROOT / ".cache")] if IN_CHECKOUT else []
    return [*found, ("user cache", user_cache())]


def default_cache() -> Path:
    """Where ``lockchaos setup`` installs and lockchaos keeps its own files: the first cache
    searched (``LOCKCHAOS_CACHE``, else the checkout's ``.cache``, else the per-user cache)."""
    return caches()[0][1]


CACHE = default_cache()


def setup_hint(flag: str = "") -> str:
    """The command that installs what is missing, as an error line should name it: ``lockchaos
    setup`` (with ``flag``, e.g. ``--drivers``), which works for a pip install and a checkout
    alike; in a checkout, ``make setup`` does it too (``make docker`` for ``--docker``)."""
    command = f"lockchaos setup {flag}".strip()
    make = "make docker" if flag == "--docker" else "make setup"
    return f"run `{command}`" + (f" (or `{make}` in this checkout)" if IN_CHECKOUT else "")


def env_name(program: str) -> str:
    return "LOCKCHAOS_" + program.upper().replace("-", "_")


@dataclass(frozen=True)
class Found:
    """Where a program was found: its path and which place (``PATH``, ``user cache``, …)."""

    program: str
    path: str
    source: str


@cache
def locate(program: str) -> Found | None:
    """Where ``program`` is, in the order of the module docstring; None when nowhere."""
    override = os.environ.get(env_name(program))
    if override:
        if not os.access(override, os.X_OK):
            raise UsageError(f"{env_name(program)}={override} is not an executable file")
        return Found(program, override, env_name(program))
    relative = _IN_CACHE.get(program)
    if relative is not None:
        for source, directory in caches():
            candidate = directory / relative
            if os.access(candidate, os.X_OK):
                return Found(program, str(candidate), source)
    on_path = shutil.which(program)
    return Found(program, on_path, "PATH") if on_path else None


def find(program: str) -> str:
    """Absolute path of ``program``; ``UsageError`` naming ``lockchaos setup`` when missing."""
    found = locate(program)
    if found is None:
        raise UsageError(f"{program} not found: {setup_hint()}, or set {env_name(program)}")
    return found.path


@cache
def version_line(path: str) -> str:
    """The first line ``path --version`` prints ("" when it cannot be run)."""
    try:
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = (out.stdout or out.stderr).strip().splitlines()
    return lines[0].strip() if lines else ""


def redis_malloc(path: str) -> str | None:
    """The allocator a redis-server links (``libc``, ``jemalloc-5.3.0`` …), None if unknown."""
    match = re.search(r"\bmalloc=(\S+)", version_line(path))
    return match.group(1) if match else None


def is_libc_build(path: str) -> bool:
    """Built with MALLOC=libc, so libfaketime can wrap it."""
    malloc = redis_malloc(path)
    return malloc is not None and malloc.startswith("libc")


@cache
def locate_libfaketime() -> str | None:
    override = os.environ.get("LOCKCHAOS_LIBFAKETIME")
    if override:
        return override if os.path.exists(override) else None
    for pattern in _LIBFAKETIME_GLOBS:
        for candidate in sorted(glob.glob(pattern)):
            if os.path.exists(candidate):
                return candidate
    return None


def libfaketime() -> str:
    """Path of libfaketime.so.1 (Debian's ``libfaketime`` package)."""
    found = locate_libfaketime()
    if found is None:
        raise UsageError(f"libfaketime not found: {setup_hint()}, or set LOCKCHAOS_LIBFAKETIME")
    return found


def clock_problem() -> str | None:
    """Why data nodes cannot run under libfaketime here (so clock faults cannot run), or
    None when they can."""
    server = locate("redis-server")
    if server is None:
        return "redis-server is not installed"
    if not is_libc_build(server.path):
        malloc = redis_malloc(server.path) or "an unknown allocator"
        return (
            f"the redis-server found ({server.path}, from {server.source}) links {malloc}, "
            "which libfaketime cannot wrap"
        )
    if locate_libfaketime() is None:
        return "libfaketime is not installed"
    return None


def require_clock(fault: str) -> None:
    """``UsageError`` (one line, naming the fix) when ``fault`` cannot jump node clocks here."""
    problem = clock_problem()
    if problem is not None:
        raise UsageError(
            f"{fault} needs a redis-server built with MALLOC=libc and libfaketime (its nodes "
            f"run under libfaketime), but {problem}: {setup_hint()}, or drop {fault}"
        )
