"""What each of lockchaos's images is made of, and the hash that says it is up to date.

* servers (``redis-7.0`` → ``lockchaos/redis:7.0`` (bookworm), ``redis-8.0`` →
  ``lockchaos/redis:8.0`` and ``valkey-8.1`` → ``lockchaos/valkey:8.1`` (trixie)): Debian's
  server packages, whose server binary is replaced by one built from the same suite's source
  with ``make MALLOC=libc`` (Debian's binary links jemalloc, which deadlocks under
  libfaketime), and libfaketime preloaded for every process: the wall clock is true time plus
  the offset in ``FAKETIME_FILE`` (``+0`` at first; rewrite it to jump the clock, ``docker
  exec``), the monotonic clock is never faked. An entrypoint adds ``--protected-mode no`` to
  ``redis-server``/``valkey-server`` as the official images do.
* ``toxiproxy`` → ``lockchaos/toxiproxy:2.12.0``: a bookworm minbase with the
  ``toxiproxy-server``/``-cli`` that ``make setup`` builds (``go install``), entrypoint
  ``/toxiproxy`` as in the official image.
* ``python`` → ``lockchaos/python:3.11``: a bookworm minbase with Debian's ``python3`` (3.11,
  also as ``python``) and lockchaos's dependencies, installed from the wheelhouse
  (``.cache/wheelhouse``; what it lacks is ``pip download``-ed into it from PyPI).
* ``demo`` → ``lockchaos-demo`` (the image compose/docker-compose.yml's demo services run,
  otherwise built by compose/Dockerfile FROM ``python:3.11-slim``): ``lockchaos/python:3.11``
  plus lockchaos itself, from a wheel of a lockchaos source tree (``source_tree``). Its recipe
  hash covers the tree's package sources, so a changed tree makes it out of date.
* ``lockchaos`` → ``lockchaos/lockchaos`` (for CI and Kubernetes: entrypoint ``lockchaos``):
  the demo's making plus what the local provider runs, so a run inside needs no set-up: the
  MALLOC=libc ``redis-server`` and libfaketime of ``server``'s image, and Toxiproxy.
* ``lockchaos-full`` → ``lockchaos/lockchaos:full``: the lockchaos image plus the bundled
  drivers' builds (``driver_builds``) and the runtimes they need, Debian's JRE and Node.js
  (the Go driver is a binary), so a run of a driver lock inside needs no set-up either.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from chaos.errors import UsageError
from chaos.images.sources import LOCAL_REDIS, Upstream, file_sha256
from chaos.topology import binaries
from chaos.topology.images import IMAGES, TOXIPROXY_VERSION, image_for

REVISION = 2  # bump when the way images are put together changes (forces a rebuild)
INSPECT_TIMEOUT_S = 60

# Inserts --protected-mode no after redis-server/valkey-server (and its config file, if the
# first argument is one), as the official images' entrypoint does; a later argument wins.
# (Not before --version and the like: the server only reads those as its first argument.)
ENTRYPOINT_SCRIPT = """#!/bin/sh
set -e
case "$2" in
  -v|--version|-h|--help|--test-memory|--check-system) exec "$@" ;;
esac
case "$1" in
  redis-server|valkey-server)
    prog="$1"; shift
    if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
      conf="$1"; shift
      set -- "$prog" "$conf" --protected-mode no "$@"
    else
      set -- "$prog" --protected-mode no "$@"
    fi ;;
esac
exec "$@"
"""


class _Named:
    """A recipe's image is the one the runtime names it by (``chaos.topology.images``)."""

    name: str

    @property
    def image(self) -> str:
        return image_for(self.name)


@dataclass(frozen=True)
class ServerRecipe(_Named):
    """A Redis-compatible server image: Debian packages + a MALLOC=libc build of the server
    from its upstream source (of a newer suite, maybe: the rest stays the stable suite's)."""

    name: str  # "redis-7.0": what --server / the provider call it (chaos.topology.images)
    suite: str  # Debian suite of the root file system and its packages
    packages: tuple[str, ...]
    source: Upstream  # the server's upstream tarball (chaos.images.sources)
    program: str  # "redis" or "valkey": <program>-server, -sentinel, -cli, -check-*
    compat: bool = False  # also provide redis-server/-sentinel/-cli names (valkey)
    # OPTIMIZATION=-O2, as Redis 7.0 builds by default: Redis 8.0's and Valkey's default, -O3
    # with link-time optimization (Valkey's with fat objects: each file compiled twice), took
    # 2.2 times as long on two cores (valkey 9.1: 55 s, 25 s at -O2) for a speed no test needs.
    make_flags: tuple[str, ...] = ("MALLOC=libc", "BUILD_TLS=no", "USE_SYSTEMD=no",
                                   "OPTIMIZATION=-O2")

    kind = "server"


@dataclass(frozen=True)
class ToxiproxyRecipe(_Named):
    name: str
    suite: str
    version: str

    kind = "toxiproxy"


@dataclass(frozen=True)
class PythonRecipe(_Named):
    """Python 3.11 from the suite's ``python3`` package, with lockchaos's dependencies."""

    name: str
    suite: str
    packages: tuple[str, ...] = ("python3",)

    kind = "python"


@dataclass(frozen=True)
class DemoRecipe(_Named):
    """Seed 001's demo image: the ``base`` recipe's image plus lockchaos from a source tree."""

    name: str
    base: str  # the recipe this one is committed on top of

    kind = "demo"


@dataclass(frozen=True)
class LockchaosRecipe(_Named):
    """The CI/Kubernetes image (``docker run … lockchaos/lockchaos audit --lock …``): the
    ``base`` recipe's image plus lockchaos from a source tree, as the demo, and the local
    provider's programs in its cache (``LOCKCHAOS_CACHE``): ``server``'s MALLOC=libc
    redis-server and libfaketime (the same suite as ``base``), Toxiproxy. Slim: no JDK, Go or
    Node, so not the bundled drivers (docs/images.md)."""

    name: str
    base: str
    server: str

    kind = "lockchaos"


@dataclass(frozen=True)
class FullRecipe(_Named):
    """The lockchaos image with the bundled drivers: the ``base`` (lockchaos) recipe's image
    plus ``packages`` from its suite's mirror (``apt-get install`` in a container of it) and
    the drivers built here (``driver_builds``) in its cache's ``drivers/``."""

    name: str
    base: str
    packages: tuple[str, ...] = ("openjdk-17-jre-headless", "nodejs")

    kind = "lockchaos-full"


Recipe = ServerRecipe | ToxiproxyRecipe | PythonRecipe | DemoRecipe | LockchaosRecipe | FullRecipe
FromSource = DemoRecipe | LockchaosRecipe  # committed on built images, from a source tree
OnLockchaos = FromSource | FullRecipe  # a lockchaos source tree's image, or one built on it

# The lockchaos image's cache (``LOCKCHAOS_CACHE``; chaos.topology.binaries's layout) and its
# ``lockchaos`` command: the package is in Debian's python3's dist-packages.
IMAGE_CACHE = "/opt/lockchaos"
LOCKCHAOS_SCRIPT = '#!/bin/sh\nexec python3 -m chaos.cli "$@"\n'

_REDIS_PACKAGES = ("redis-server", "redis-sentinel", "redis-tools", "procps", "libfaketime")
_VALKEY_PACKAGES = ("valkey-server", "valkey-sentinel", "valkey-tools", "procps", "libfaketime")

RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in (
        ServerRecipe("redis-7.0", "bookworm", _REDIS_PACKAGES, LOCAL_REDIS, "redis"),
        ServerRecipe("redis-8.0", "trixie", _REDIS_PACKAGES,
                     Upstream("redis", "8.0", ("sid", "trixie")), "redis"),
        ServerRecipe("valkey-8.1", "trixie", _VALKEY_PACKAGES,
                     Upstream("valkey", "8.1", ("trixie",)), "valkey", compat=True),
        ServerRecipe("valkey-9.1", "trixie", _VALKEY_PACKAGES,
                     Upstream("valkey", "9.1", ("sid",)), "valkey", compat=True),
        ToxiproxyRecipe("toxiproxy", "bookworm", TOXIPROXY_VERSION),
        PythonRecipe("python", "bookworm"),
        DemoRecipe("demo", "python"),
        LockchaosRecipe("lockchaos", "python", "redis-7.0"),
        FullRecipe("lockchaos-full", "lockchaos"),
    )
}  # fmt: skip
assert RECIPES.keys() == IMAGES.keys(), "an image the runtime names has no recipe, or back"


def recipe_hash(
    recipe: Recipe, mirror: str, source: Path | None = None, prefix: str = ""
) -> str:
    """The hash an image built from ``recipe`` today would carry: of the recipe, the mirror
    and what the image copies in (``source``: the demo's source tree, ``source_tree``'s
    default when None; the images it is made from as built under ``prefix``, the builder's
    ``--prefix``, which the hash does not otherwise cover)."""
    parts: dict[str, Any] = {"revision": REVISION, "mirror": mirror, **asdict(recipe)}
    parts["kind"] = recipe.kind
    parts["image"] = recipe.image
    if isinstance(recipe, ServerRecipe):
        parts["entrypoint"] = ENTRYPOINT_SCRIPT
    elif isinstance(recipe, ToxiproxyRecipe):
        parts["toxiproxy"] = file_sha256(Path(binaries.find("toxiproxy-server")))
    elif isinstance(recipe, PythonRecipe):
        parts["requirements"] = requirements()
    elif isinstance(recipe, FullRecipe):  # the base as built, the drivers' builds
        parts["needs"] = {recipe.base: image_id(prefix + RECIPES[recipe.base].image)}
        parts["drivers"] = {build: _tree_hash(path, driver_files(path))
                            for build, path in driver_builds().items()}  # fmt: skip
        parts["layout"] = [IMAGE_CACHE]
    else:  # the images it is made of as built, and lockchaos's sources
        parts.pop("mirror")
        parts["needs"] = {name: image_id(prefix + RECIPES[name].image) for name in needs(recipe)}
        parts["sources"] = _sources_hash(source_tree(source))
        if isinstance(recipe, LockchaosRecipe):
            parts["toxiproxy"] = file_sha256(Path(binaries.find("toxiproxy-server")))
            parts["layout"] = [IMAGE_CACHE, LOCKCHAOS_SCRIPT]
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def needs(recipe: Recipe) -> tuple[str, ...]:
    """The recipes whose images ``recipe``'s is made from (built before it)."""
    if isinstance(recipe, LockchaosRecipe):
        return (recipe.base, recipe.server)
    return (recipe.base,) if isinstance(recipe, DemoRecipe | FullRecipe) else ()


def driver_builds() -> dict[str, Path]:
    """The bundled drivers' builds the full image carries: each build directory's name
    (``jedis``, ``redisson``, ``redsync``, ``node-redlock``) → where it is built here
    (``chaos.drivers.catalog``'s search). ``UsageError`` naming the set-up when one is not."""
    from chaos.drivers.catalog import BUNDLED_DRIVERS  # it imports the locks: only when asked

    builds: dict[str, Path] = {}
    for driver in BUNDLED_DRIVERS.values():
        if driver.build not in builds:
            built = driver.built()
            if built is None:
                driver.argv()  # its one-line UsageError: not built, and how to build it
            assert built is not None
            builds[driver.build] = built
    return builds


def driver_files(build: Path) -> list[Path]:
    """What of a driver's build the image carries: all but its build log."""
    return sorted(
        path
        for path in build.rglob("*")
        if path.is_file() and path.relative_to(build).parts != ("build.log",)
    )


def requirements() -> list[str]:
    """lockchaos's runtime dependencies, as its metadata lists them (no extras)."""
    from importlib.metadata import PackageNotFoundError, requires

    try:
        listed = requires("lockchaos") or []
    except PackageNotFoundError:
        raise UsageError("lockchaos is not installed (pip install -e .): no dependencies to "
                         "put in the python image") from None
    return sorted(req for req in listed if "extra ==" not in req)


def source_tree(given: Path | None = None) -> Path:
    """The lockchaos source tree (pyproject.toml + chaos/) the demo and lockchaos images are
    wheeled from:
    ``given`` (``--source``), else the one the running package was imported from, when it is
    one (a checkout, an editable install; not an installed wheel). ``UsageError`` if not."""
    tree = given or Path(str(importlib.resources.files("chaos"))).parent
    if not (tree / "pyproject.toml").is_file() or not (tree / "chaos").is_dir():
        raise UsageError(
            f"the demo and lockchaos images are built from a lockchaos source tree, and {tree} "
            "is none (no pyproject.toml and chaos/): pass --source DIR"
        )
    return tree


def image_id(image: str) -> str:
    """The id of ``image`` on the engine (``docker image inspect``); "" when absent."""
    shown = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{.Id}}", image],
        capture_output=True, text=True, timeout=INSPECT_TIMEOUT_S,
    )  # fmt: skip
    return shown.stdout.strip() if shown.returncode == 0 else ""


def _sources_hash(tree: Path) -> str:
    """Of every file of the package (what the demo and lockchaos images install) and
    pyproject.toml."""
    package = tree / "chaos"
    files = [tree / "pyproject.toml", *sorted(
        path for path in package.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    )]  # fmt: skip
    return _tree_hash(tree, files)


def _tree_hash(tree: Path, files: list[Path]) -> str:
    """Of ``files`` (under ``tree``): each one's path in it and its bytes."""
    digest = hashlib.sha256()
    for path in files:
        if path.is_file():
            digest.update(str(path.relative_to(tree)).encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()
