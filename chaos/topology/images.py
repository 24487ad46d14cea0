"""lockchaos's own container images, built offline from Debian packages (docs/images.md).

Where no container registry is reachable, the docker provider runs these instead of the
official ``redis``/``valkey``/Toxiproxy images. Each one is a ``debootstrap --variant=minbase``
root file system of a Debian suite, imported with ``docker import`` under lockchaos's own
name (``lockchaos/…``: never an official image's name):

* ``redis-7.0`` → ``lockchaos/redis:7.0`` (bookworm), ``redis-8.0`` → ``lockchaos/redis:8.0``
  and ``valkey-8.1`` → ``lockchaos/valkey:8.1`` (trixie): Debian's server packages, whose
  server binary is replaced by one built from the same suite's Debian source package with
  ``make MALLOC=libc`` (Debian's binary links jemalloc, which deadlocks under libfaketime),
  and libfaketime preloaded for every process: the wall clock is true time plus the offset
  in ``FAKETIME_FILE`` (``+0`` at first; rewrite it to jump the clock, ``docker exec``), the
  monotonic clock is never faked. An entrypoint adds ``--protected-mode no`` to
  ``redis-server``/``valkey-server`` as the official images do.
* ``toxiproxy`` → ``lockchaos/toxiproxy:2.12.0``: a bookworm minbase with the
  ``toxiproxy-server``/``-cli`` that ``make setup`` builds (``go install``), entrypoint
  ``/toxiproxy`` as in the official image.
* ``python`` → ``lockchaos/python:3.11``: a bookworm minbase with Debian's ``python3`` (3.11,
  also as ``python``) and lockchaos's dependencies, installed from the wheelhouse
  (``.cache/wheelhouse``; what it lacks is ``pip download``-ed into it from PyPI).
* ``demo`` → ``lockchaos-demo`` (the image compose/docker-compose.yml's demo services run,
  otherwise built by compose/Dockerfile FROM ``python:3.11-slim``): ``lockchaos/python:3.11``
  plus lockchaos itself, from a wheel of this checkout (``docker create``, ``docker cp``,
  ``docker commit``: seconds). Its recipe hash covers the package's sources, so a changed
  checkout makes it out of date.

Every image carries the labels ``org.lockchaos.image=1``, ``org.lockchaos.name=<name>`` and
``org.lockchaos.recipe=<hash of its recipe>``; ``build`` skips an image whose recipe hash
matches, so building is idempotent. Work directories live under ``.cache/images/`` and are
deleted after the import. Building needs root (debootstrap, chroot), a Docker engine, the
Debian mirror apt uses, ``dpkg-source``, ``make`` and a C/C++ compiler.

``python -m chaos.topology.images [build|present|missing] [NAME…]`` is what
``scripts/docker-setup.sh`` runs.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from chaos.errors import UsageError
from chaos.topology import binaries

REVISION = 2  # bump when the way images are put together changes (forces a rebuild)
LABEL = "org.lockchaos.image"
NAME_LABEL = "org.lockchaos.name"
RECIPE_LABEL = "org.lockchaos.recipe"
WORK = binaries.CACHE / "images"
FAKETIME_FILE = "/var/lib/lockchaos/faketime"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
TOXIPROXY_VERSION = "2.12.0"
DEBOOTSTRAP_TIMEOUT_S = 900
BUILD_TIMEOUT_S = 1800
STEP_TIMEOUT_S = 300
CHECK_TIMEOUT_S = 30  # a jemalloc binary under libfaketime hangs: do not wait for it long

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


@dataclass(frozen=True)
class ServerRecipe:
    """A Redis-compatible server image: Debian packages + a MALLOC=libc build of the server."""

    name: str  # "redis-7.0": what --server / the provider call it
    image: str  # "lockchaos/redis:7.0"
    suite: str  # Debian suite the packages and the source come from
    packages: tuple[str, ...]
    source: str  # Debian source package of the server
    program: str  # "redis" or "valkey": <program>-server, -sentinel, -cli, -check-*
    compat: bool = False  # also provide redis-server/-sentinel/-cli names (valkey)
    make_flags: tuple[str, ...] = ("MALLOC=libc", "BUILD_TLS=no", "USE_SYSTEMD=no")

    kind = "server"


@dataclass(frozen=True)
class ToxiproxyRecipe:
    name: str
    image: str
    suite: str
    version: str

    kind = "toxiproxy"


@dataclass(frozen=True)
class PythonRecipe:
    """Python 3.11 from the suite's ``python3`` package, with lockchaos's dependencies."""

    name: str
    image: str
    suite: str
    packages: tuple[str, ...] = ("python3",)

    kind = "python"


@dataclass(frozen=True)
class DemoRecipe:
    """Seed 001's demo image: the ``base`` recipe's image plus lockchaos from this checkout."""

    name: str
    image: str
    base: str  # the recipe this one is committed on top of

    kind = "demo"


Recipe = ServerRecipe | ToxiproxyRecipe | PythonRecipe | DemoRecipe

_REDIS_PACKAGES = ("redis-server", "redis-sentinel", "redis-tools", "procps", "libfaketime")
_VALKEY_PACKAGES = ("valkey-server", "valkey-sentinel", "valkey-tools", "procps", "libfaketime")

RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in (
        ServerRecipe("redis-7.0", "lockchaos/redis:7.0", "bookworm", _REDIS_PACKAGES,
                     "redis", "redis"),
        ServerRecipe("redis-8.0", "lockchaos/redis:8.0", "trixie", _REDIS_PACKAGES,
                     "redis", "redis"),
        ServerRecipe("valkey-8.1", "lockchaos/valkey:8.1", "trixie", _VALKEY_PACKAGES,
                     "valkey", "valkey", compat=True),
        ToxiproxyRecipe("toxiproxy", f"lockchaos/toxiproxy:{TOXIPROXY_VERSION}", "bookworm",
                        TOXIPROXY_VERSION),
        PythonRecipe("python", "lockchaos/python:3.11", "bookworm"),
        DemoRecipe("demo", "lockchaos-demo", "python"),
    )
}  # fmt: skip
SERVERS = tuple(name for name, r in RECIPES.items() if isinstance(r, ServerRecipe))
DEFAULT_SERVER = "redis-7.0"
CHECKOUT = Path(__file__).resolve().parents[2]  # pyproject.toml + chaos/: the demo's wheel
WHEELHOUSE = binaries.CACHE / "wheelhouse"  # dependency wheels (tests/test_install.py's too)
SITE_PACKAGES = "/usr/local/lib/python3.11/dist-packages"  # where Debian's python3 looks
PIP_TIMEOUT_S = 600


def image_for(name: str) -> str:
    """The image of a server (``redis-7.0``…) or of ``toxiproxy``."""
    try:
        return RECIPES[name].image
    except KeyError:
        raise UsageError(
            f"no lockchaos image named {name!r}: choose from {', '.join(RECIPES)}"
        ) from None


def server_images() -> dict[str, str]:
    """Server name → lockchaos image name (``redis-7.0`` → ``lockchaos/redis:7.0``…)."""
    return {name: RECIPES[name].image for name in SERVERS}


# -- what the recipe hash covers ------------------------------------------------------------


def debian_mirror() -> str:
    """The Debian mirror apt is configured with (``LOCKCHAOS_DEBIAN_MIRROR`` overrides)."""
    override = os.environ.get("LOCKCHAOS_DEBIAN_MIRROR")
    if override:
        return override.rstrip("/")
    for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        for stanza in Path(path).read_text(errors="replace").split("\n\n"):
            fields = _deb822(stanza)
            if "deb" in fields.get("types", "").split() and _is_debian_main(
                fields.get("uris", ""), fields.get("suites", "")
            ):
                return fields["uris"].split()[0].rstrip("/")
    lists = ["/etc/apt/sources.list", *sorted(glob.glob("/etc/apt/sources.list.d/*.list"))]
    for path in lists:
        if not os.path.exists(path):
            continue
        for line in Path(path).read_text(errors="replace").splitlines():
            words = re.sub(r"\[[^]]*\]", "", line.split("#", 1)[0]).split()
            if len(words) >= 3 and words[0] == "deb" and _is_debian_main(words[1], words[2]):
                return words[1].rstrip("/")
    raise UsageError(
        "no Debian mirror found in /etc/apt/sources.list(.d): set LOCKCHAOS_DEBIAN_MIRROR "
        "(e.g. http://deb.debian.org/debian)"
    )


def _deb822(stanza: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in stanza.splitlines():
        if line.startswith("#") or ":" not in line or line[:1].isspace():
            continue
        key, _, value = line.partition(":")
        fields[key.strip().lower()] = value.strip()
    return fields


def _is_debian_main(uri: str, suites: str) -> bool:
    """A Debian archive (not -security, not a third-party repository) of a plain suite."""
    return (
        "security" not in uri
        and "/debian" in uri
        and any(suite.isalpha() for suite in suites.split())
    )


def recipe_hash(recipe: Recipe, mirror: str) -> str:
    parts: dict[str, Any] = {"revision": REVISION, "mirror": mirror, **asdict(recipe)}
    parts["kind"] = recipe.kind
    if isinstance(recipe, ServerRecipe):
        parts["entrypoint"] = ENTRYPOINT_SCRIPT
    elif isinstance(recipe, ToxiproxyRecipe):
        parts["toxiproxy"] = _file_hash(Path(binaries.find("toxiproxy-server")))
    elif isinstance(recipe, PythonRecipe):
        parts["requirements"] = requirements()
    else:  # the demo: its base image as built, and lockchaos's sources
        parts.pop("mirror")
        parts["base"] = _image_id(RECIPES[recipe.base].image)
        parts["sources"] = _sources_hash()
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def requirements() -> list[str]:
    """lockchaos's runtime dependencies, as its metadata lists them (no extras)."""
    from importlib.metadata import PackageNotFoundError, requires

    try:
        listed = requires("lockchaos") or []
    except PackageNotFoundError:
        raise UsageError("lockchaos is not installed (pip install -e .): no dependencies to "
                         "put in the python image") from None
    return sorted(req for req in listed if "extra ==" not in req)


def _sources_hash() -> str:
    """Of every file of the package (what the demo image installs) and pyproject.toml."""
    digest = hashlib.sha256()
    package = CHECKOUT / "chaos"
    files = [CHECKOUT / "pyproject.toml", *sorted(
        path for path in package.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    )]  # fmt: skip
    for path in files:
        if path.is_file():
            digest.update(str(path.relative_to(CHECKOUT)).encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# -- queries (Docker SDK) --------------------------------------------------------------------


def _engine() -> Any:
    # Imported here: `python -m chaos.topology.images` must not find the provider loaded.
    from chaos.topology.docker import engine

    return engine(60, needed_by="lockchaos's images", fix="`docker info` must work")


def _labels(client: Any, image: str) -> dict[str, str] | None:
    import docker

    try:
        found = client.images.get(image)
    except docker.errors.ImageNotFound:
        return None
    labels: dict[str, str] = found.labels or {}
    return labels


def present(names: Iterable[str] | None = None, *, client: Any = None) -> list[str]:
    """The names (of ``names``, default all) whose image exists, built from today's recipe."""
    client = client or _engine()
    mirror = debian_mirror()
    up_to_date = []
    for name in names or RECIPES:
        recipe = RECIPES[name]
        labels = _labels(client, recipe.image)
        if labels is not None and labels.get(RECIPE_LABEL) == _hash_or_none(recipe, mirror):
            up_to_date.append(name)
    return up_to_date


def missing(names: Iterable[str] | None = None, *, client: Any = None) -> list[str]:
    """The names whose image is absent or from another recipe (what ``build`` would build)."""
    wanted = list(names or RECIPES)
    have = set(present(wanted, client=client))
    return [name for name in wanted if name not in have]


def _hash_or_none(recipe: Recipe, mirror: str) -> str | None:
    try:
        return recipe_hash(recipe, mirror)
    except UsageError:  # no toxiproxy-server to hash: cannot be up to date
        return None


# -- building --------------------------------------------------------------------------------


def build(
    names: Sequence[str] | None = None,
    progress: Callable[[str], None] = print,
    *,
    force: bool = False,
) -> list[str]:
    """Build the images of ``names`` (default: all) that are missing or out of date.

    Idempotent: an image whose ``org.lockchaos.recipe`` label matches is skipped (``force``
    rebuilds it). Returns the names built; ``progress`` gets one line per step.
    ``UsageError`` (one line) when a prerequisite is missing; ``RuntimeError`` naming the
    log file when a step fails.
    """
    wanted = list(names or RECIPES)
    for name in wanted:
        image_for(name)  # UsageError for an unknown name
    client = _engine()
    for name in list(wanted):  # a demo needs its base image
        recipe = RECIPES[name]
        if isinstance(recipe, DemoRecipe) and recipe.base not in wanted:
            wanted.insert(wanted.index(name), recipe.base)
    todo = wanted if force else missing(wanted, client=client)
    if not todo:
        return []
    _check_prerequisites(todo)
    mirror = debian_mirror()
    built = []
    for name in todo:
        recipe = RECIPES[name]
        started = time.monotonic()
        work = WORK / name
        try:
            if isinstance(recipe, DemoRecipe):
                progress(f"{name}: building {recipe.image} on {RECIPES[recipe.base].image}")
                _build_demo(recipe, work, progress)
            else:
                progress(f"{name}: building {recipe.image} from {recipe.suite} ({mirror})")
                _build_one(recipe, mirror, work, progress)
        finally:
            _remove_tree(work)
        progress(f"{name}: {recipe.image} built in {time.monotonic() - started:.0f} s")
        built.append(name)
    return built


def _check_prerequisites(names: Sequence[str]) -> None:
    if all(isinstance(RECIPES[n], DemoRecipe) for n in names):
        if not (CHECKOUT / "pyproject.toml").is_file():
            raise UsageError("the demo image is built from a lockchaos checkout (compose/)")
        return  # docker create/cp/commit and pip: no root needed
    if os.geteuid() != 0:
        raise UsageError("building lockchaos images needs root (debootstrap and chroot)")
    tools = ["debootstrap", "tar", "docker"]
    if any(isinstance(RECIPES[n], ServerRecipe) for n in names):
        tools += ["dpkg-source", "make", "cc", "c++"]
    absent = [tool for tool in tools if shutil.which(tool) is None]
    if absent:
        raise UsageError(f"building lockchaos images needs {', '.join(absent)} (apt-get install)")
    if "toxiproxy" in names:
        binaries.find("toxiproxy-server")  # UsageError naming `make setup`


def _build_one(
    recipe: ServerRecipe | ToxiproxyRecipe | PythonRecipe,
    mirror: str,
    work: Path,
    progress: Callable[[str], None],
) -> None:
    _remove_tree(work)
    work.mkdir(parents=True)
    rootfs = work / "rootfs"
    log = work / "build.log"
    include = recipe.packages if isinstance(recipe, ServerRecipe | PythonRecipe) else ()
    progress(
        f"{recipe.name}: debootstrap {recipe.suite}"
        + (f" + {', '.join(include)}" if include else "")
    )
    argv = ["debootstrap", "--variant=minbase"]
    if include:
        argv.append("--include=" + ",".join(include))
    _run([*argv, recipe.suite, str(rootfs), mirror], log, DEBOOTSTRAP_TIMEOUT_S)
    if isinstance(recipe, ServerRecipe):
        changes = _make_server(recipe, mirror, work, rootfs, log, progress)
    elif isinstance(recipe, PythonRecipe):
        changes = _make_python(recipe, work, rootfs, log, progress)
    else:
        assert isinstance(recipe, ToxiproxyRecipe)
        changes = _make_toxiproxy(recipe, rootfs)
    _slim(rootfs)
    labels = {LABEL: "1", NAME_LABEL: recipe.name, RECIPE_LABEL: recipe_hash(recipe, mirror)}
    changes += [f"LABEL {key}={value}" for key, value in labels.items()]
    progress(f"{recipe.name}: docker import {recipe.image}")
    replaced = _image_id(recipe.image)
    _import(rootfs, recipe.image, changes, log)
    if replaced and replaced != _image_id(recipe.image):  # the old build, now untagged
        subprocess.run(["docker", "rmi", replaced], capture_output=True, timeout=STEP_TIMEOUT_S)


def _image_id(image: str) -> str:
    shown = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{.Id}}", image],
        capture_output=True, text=True, timeout=STEP_TIMEOUT_S,
    )  # fmt: skip
    return shown.stdout.strip() if shown.returncode == 0 else ""


def _make_server(
    recipe: ServerRecipe,
    mirror: str,
    work: Path,
    rootfs: Path,
    log: Path,
    progress: Callable[[str], None],
) -> list[str]:
    source = _fetch_source(recipe, mirror, work, rootfs, log)
    progress(f"{recipe.name}: make {' '.join(recipe.make_flags)} ({source.name})")
    jobs = str(os.cpu_count() or 1)
    # GIT_CEILING_DIRECTORIES: the build stamps a git sha, and must not take lockchaos's
    _run(["make", "-C", str(source), f"-j{jobs}", *recipe.make_flags], log, BUILD_TIMEOUT_S,
         env={"GIT_CEILING_DIRECTORIES": str(work)})  # fmt: skip
    program = recipe.program
    usr_bin = rootfs / "usr" / "bin"
    # Every Debian binary that links jemalloc is replaced (under libfaketime it would hang):
    # the server (Debian's is a symlink to the check-rdb binary), the cli and the benchmark.
    for tool in ("server", "cli", "benchmark"):
        target = usr_bin / f"{program}-{tool}"
        target.unlink(missing_ok=True)
        shutil.copy2(source / "src" / f"{program}-{tool}", target)
    for alias in ("sentinel", "check-rdb", "check-aof"):
        _symlink(usr_bin / f"{program}-{alias}", f"{program}-server")
    plain = {"PATH": PATH}
    _chroot(rootfs, plain, ["dpkg", "--purge", "--force-depends", "libjemalloc2"], log)
    if recipe.compat:
        for alias in ("server", "sentinel", "cli", "check-rdb", "check-aof", "benchmark"):
            target = usr_bin / f"{program}-{alias}"
            if target.exists():
                _symlink(usr_bin / f"redis-{alias}", target.name)
    faketime = _faketime_library(rootfs)
    clock = rootfs / FAKETIME_FILE.lstrip("/")
    clock.parent.mkdir(parents=True, exist_ok=True)
    clock.write_text("+0\n")
    entrypoint = rootfs / "usr" / "local" / "bin" / "docker-entrypoint.sh"
    entrypoint.write_text(ENTRYPOINT_SCRIPT)
    entrypoint.chmod(0o755)
    (rootfs / "data").mkdir(exist_ok=True)
    env = {
        "PATH": PATH,
        "LD_PRELOAD": faketime,
        "FAKETIME_TIMESTAMP_FILE": FAKETIME_FILE,
        "FAKETIME_NO_CACHE": "1",
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
    }
    # The binaries must start in their own suite, under libfaketime (jemalloc would hang).
    version = _chroot(rootfs, env, [f"{program}-server", "--version"], log, CHECK_TIMEOUT_S)
    _chroot(rootfs, env, [f"{program}-cli", "--version"], log, CHECK_TIMEOUT_S)
    _chroot(rootfs, env, ["sh", "-c", f"{program}-sentinel --version"], log, CHECK_TIMEOUT_S)
    if "malloc=libc" not in version:
        raise RuntimeError(f"{recipe.name}: {program}-server is not a MALLOC=libc build: {version}")
    return [
        *(f"ENV {key}={value}" for key, value in env.items()),
        "WORKDIR /data",
        "EXPOSE 6379",
        'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]',
        f'CMD ["{program}-server"]',
        f"LABEL org.lockchaos.version={version.split()[2].removeprefix('v=')}",
    ]


def _fetch_source(recipe: ServerRecipe, mirror: str, work: Path, rootfs: Path, log: Path) -> Path:
    """``apt-get source`` inside the root file system (so from the image's own suite), then
    ``dpkg-source -x`` here; the root file system keeps no trace of it."""
    sources = rootfs / "etc" / "apt" / "sources.list.d" / "lockchaos-src.list"
    sources.write_text(f"deb-src {mirror} {recipe.suite} main\n")
    download = rootfs / "tmp" / "lockchaos-src"
    download.mkdir(parents=True, exist_ok=True)
    try:
        _chroot(rootfs, {"PATH": PATH}, ["apt-get", "update", "-qq"], log)
        _chroot(rootfs, {"PATH": PATH},
                ["sh", "-c", f"cd /tmp/lockchaos-src && apt-get source --download-only "
                             f"{recipe.source}"], log)  # fmt: skip
        (dsc,) = download.glob("*.dsc")
        tree = work / "src"
        _run(["dpkg-source", "-x", str(dsc), str(tree)], log, STEP_TIMEOUT_S)
    finally:
        sources.unlink(missing_ok=True)
        _remove_tree(download)
    return tree


def _make_toxiproxy(recipe: ToxiproxyRecipe, rootfs: Path) -> list[str]:
    local_bin = rootfs / "usr" / "local" / "bin"
    local_bin.mkdir(parents=True, exist_ok=True)
    for program in ("toxiproxy-server", "toxiproxy-cli"):
        found = binaries.find(program)
        shutil.copy2(os.path.realpath(found), local_bin / program)
    _symlink(rootfs / "toxiproxy", "usr/local/bin/toxiproxy-server")  # the official paths
    _symlink(rootfs / "toxiproxy-cli", "usr/local/bin/toxiproxy-cli")
    return [
        f"ENV PATH={PATH}",
        "EXPOSE 8474",
        'ENTRYPOINT ["/toxiproxy"]',
        'CMD ["-host=0.0.0.0"]',
        f"LABEL org.lockchaos.version={recipe.version}",
    ]


def _make_python(
    recipe: PythonRecipe, work: Path, rootfs: Path, log: Path, progress: Callable[[str], None]
) -> list[str]:
    """lockchaos's dependencies into the suite's python3, by that python3 (its version
    decides markers such as redis's ``async-timeout; python_full_version < "3.11.3"``),
    running pip from its wheel offline from a copy of the wheelhouse; ``python`` too."""
    wanted = requirements()
    progress(f"{recipe.name}: pip install {len(wanted)} dependencies from {WHEELHOUSE}")
    WHEELHOUSE.mkdir(parents=True, exist_ok=True)
    pip = [sys.executable, "-m", "pip"]
    if not list(WHEELHOUSE.glob("pip-*.whl")):
        _run([*pip, "download", "-q", "--no-deps", "--dest", str(WHEELHOUSE), "pip"], log,
             PIP_TIMEOUT_S)  # fmt: skip
    inside = rootfs / "tmp" / "wheelhouse"
    shutil.copytree(WHEELHOUSE, inside, dirs_exist_ok=True)
    (pip_wheel,) = sorted(inside.glob("pip-*.whl"))[-1:]
    chroot_pip = ["python3", f"/tmp/wheelhouse/{pip_wheel.name}/pip"]
    plain = {"PATH": PATH, "HOME": "/tmp"}
    install = [*chroot_pip, "install", "-q", "--no-index", "--find-links", "/tmp/wheelhouse",
               "--target", SITE_PACKAGES, *wanted]  # fmt: skip
    try:
        _chroot(rootfs, plain, install, log, PIP_TIMEOUT_S)
    except RuntimeError:  # the wheelhouse lacks some: from PyPI into it, then again
        download = [*chroot_pip, "download", "-q", "--only-binary=:all:",
                    "--dest", "/tmp/wheelhouse", *wanted]  # fmt: skip
        # this machine's CA bundle and proxy settings (a minbase has no ca-certificates)
        cert = os.environ.get("PIP_CERT") or "/etc/ssl/certs/ca-certificates.crt"
        if os.path.isfile(cert):
            shutil.copy2(cert, inside / "ca.crt")
            download += ["--cert", "/tmp/wheelhouse/ca.crt"]
        proxies = {k: v for k, v in os.environ.items() if k.lower().endswith("_proxy")}
        _chroot(rootfs, {**plain, **proxies}, download, log, PIP_TIMEOUT_S)
        for wheel in inside.glob("*.whl"):
            if not (WHEELHOUSE / wheel.name).exists():
                shutil.copy2(wheel, WHEELHOUSE / wheel.name)
        _chroot(rootfs, plain, install, log, PIP_TIMEOUT_S)
    finally:
        shutil.rmtree(inside, ignore_errors=True)
    _symlink(rootfs / "usr" / "local" / "bin" / "python", "/usr/bin/python3")
    imports = "import redis, msgspec, pydantic, typer, rich, hypothesis, jinja2, plotly, docker"
    _chroot(rootfs, plain, ["python", "-c", imports], log, CHECK_TIMEOUT_S)
    version = _chroot(rootfs, plain, ["python", "-c", "import sys; print(sys.version.split()[0])"],
                      log, CHECK_TIMEOUT_S)  # fmt: skip
    return [
        f"ENV PATH={PATH}",
        "ENV PYTHONUNBUFFERED=1",
        "WORKDIR /",
        'CMD ["python"]',
        f"LABEL org.lockchaos.version={version}",
    ]


def _wheelhouse_run(pip_args: list[str], needs: list[str], log: Path) -> None:
    """``pip <pip_args>`` offline from the wheelhouse; if that fails, the wheels of ``needs``
    (requirements) are ``pip download``-ed into the wheelhouse from PyPI first."""
    pip = [sys.executable, "-m", "pip"]
    offline = [*pip, *pip_args, "--no-index", "--find-links", str(WHEELHOUSE), "-q"]
    WHEELHOUSE.mkdir(parents=True, exist_ok=True)
    try:
        _run(offline, log, PIP_TIMEOUT_S)
        return
    except RuntimeError:
        pass
    _run([*pip, "download", "-q", "--only-binary=:all:", "--dest", str(WHEELHOUSE), *needs],
         log, PIP_TIMEOUT_S)  # fmt: skip
    _run(offline, log, PIP_TIMEOUT_S)


def _build_demo(recipe: DemoRecipe, work: Path, progress: Callable[[str], None]) -> None:
    """A wheel of this checkout, installed (no dependencies: the base has them) into a
    container of the base image with ``docker cp``, committed as ``recipe.image``."""
    _remove_tree(work)
    work.mkdir(parents=True)
    log = work / "build.log"
    base = RECIPES[recipe.base].image
    src, dist, site = work / "src", work / "dist", work / "site"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(CHECKOUT / name, src / name)
    shutil.copytree(CHECKOUT / "chaos", src / "chaos",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))  # fmt: skip
    progress(f"{recipe.name}: pip wheel lockchaos")
    # setuptools/wheel for the isolated build: the wheelhouse's, else PyPI's (kept there)
    _wheelhouse_run(["wheel", "--no-deps", "-w", str(dist), str(src)],
                    ["setuptools>=68", "wheel"], log)  # fmt: skip
    (wheel,) = dist.glob("lockchaos-*.whl")
    _run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
          "--target", str(site), str(wheel)], log, PIP_TIMEOUT_S)  # fmt: skip
    shutil.rmtree(site / "bin", ignore_errors=True)  # console scripts: `python -m chaos.cli`
    progress(f"{recipe.name}: docker commit {recipe.image}")
    created = subprocess.run(
        ["docker", "create", "--label", f"{LABEL}-build=1", base, "true"],
        capture_output=True, text=True, timeout=STEP_TIMEOUT_S,
    )  # fmt: skip
    if created.returncode != 0:
        raise RuntimeError(f"docker create {base} failed: {created.stderr.strip()[-300:]}")
    container = created.stdout.strip()
    replaced = _image_id(recipe.image)
    labels = {LABEL: "1", NAME_LABEL: recipe.name, RECIPE_LABEL: recipe_hash(recipe, "")}
    try:
        _run(["docker", "cp", f"{site}/.", f"{container}:{SITE_PACKAGES}/"], log, STEP_TIMEOUT_S)
        commit = ["docker", "commit"]
        for change in [*(f"LABEL {key}={value}" for key, value in labels.items()),
                       f"LABEL org.lockchaos.version={wheel.name.split('-')[1]}",
                       'CMD ["python", "-m", "chaos.cli"]']:  # fmt: skip
            commit += ["--change", change]
        _run([*commit, container, recipe.image], log, STEP_TIMEOUT_S)
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True,
                       timeout=STEP_TIMEOUT_S)  # fmt: skip
    if replaced and replaced != _image_id(recipe.image):  # the old build, now untagged
        subprocess.run(["docker", "rmi", replaced], capture_output=True, timeout=STEP_TIMEOUT_S)


def _faketime_library(rootfs: Path) -> str:
    found = sorted(rootfs.glob("usr/lib/*/faketime/libfaketime.so.1"))
    if not found:
        raise RuntimeError(f"libfaketime.so.1 missing from {rootfs}")
    return "/" + str(found[0].relative_to(rootfs))


def _slim(rootfs: Path) -> None:
    """Drop what a container never reads: apt's lists and caches, docs, man pages, locales."""
    for pattern in (
        "var/lib/apt/lists/*",
        "var/cache/apt/*.bin",
        "var/cache/apt/archives/*.deb",
        "usr/share/doc/*",
        "usr/share/man/*",
        "usr/share/info/*",
        "usr/share/locale/*",
        "var/log/*.log",
        "tmp/*",
    ):
        for path in rootfs.glob(pattern):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()


def _import(rootfs: Path, image: str, changes: list[str], log: Path) -> None:
    argv = ["docker", "import"]
    for change in changes:
        argv += ["--change", change]
    with log.open("ab") as out:
        tar = subprocess.Popen(["tar", "--numeric-owner", "-C", str(rootfs), "-c", "."],
                               stdout=subprocess.PIPE, stderr=out)  # fmt: skip
        try:
            done = subprocess.run([*argv, "-", image], stdin=tar.stdout, stdout=out, stderr=out,
                                  timeout=STEP_TIMEOUT_S)  # fmt: skip
        finally:
            if tar.stdout is not None:
                tar.stdout.close()
            tar_status = tar.wait(timeout=STEP_TIMEOUT_S)
    if tar_status != 0 or done.returncode != 0:
        raise RuntimeError(f"docker import {image} failed: {_tail(log)}")


def _chroot(
    rootfs: Path, env: dict[str, str], argv: list[str], log: Path, timeout_s: float = STEP_TIMEOUT_S
) -> str:
    try:
        done = subprocess.run(
            ["chroot", str(rootfs), "env", "-i", *(f"{k}={v}" for k, v in env.items()), *argv],
            capture_output=True, text=True, timeout=timeout_s,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"`{' '.join(argv)}` hung for {timeout_s:.0f} s in {rootfs}") from None
    with log.open("a") as out:
        out.write(f"$ chroot {rootfs} {' '.join(argv)}\n{done.stdout}{done.stderr}")
    if done.returncode != 0:
        raise RuntimeError(f"`{' '.join(argv)}` failed in {rootfs.name}: {_tail(log)}")
    return done.stdout.strip()


def _run(argv: list[str], log: Path, timeout_s: float, env: dict[str, str] | None = None) -> None:
    with log.open("ab") as out:
        out.write(f"$ {' '.join(argv)}\n".encode())
        out.flush()
        try:
            done = subprocess.run(
                argv, stdout=out, stderr=out, timeout=timeout_s, env={**os.environ, **(env or {})}
            )
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"`{argv[0]}` took more than {timeout_s:.0f} s") from None
    if done.returncode != 0:
        raise RuntimeError(f"`{' '.join(argv[:3])} …` failed: {_tail(log)}")


def _tail(log: Path) -> str:
    lines = log.read_text(errors="replace").strip().splitlines() if log.exists() else []
    return lines[-1][:300] if lines else "(no output)"


def _symlink(path: Path, target: str) -> None:
    if path.is_symlink() or path.exists():
        path.unlink()
    path.symlink_to(target)


def _remove_tree(path: Path) -> None:
    """``rm -rf``, never across a mount point: debootstrap mounts /proc (and /sys) in the
    root file system while it works, and an interrupted one leaves them mounted."""
    if not path.exists():
        return
    prefix = str(path.resolve()) + "/"
    with open("/proc/self/mounts") as mounts:
        points = [line.split()[1] for line in mounts if line.split()[1].startswith(prefix)]
    for point in sorted(points, key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True, timeout=STEP_TIMEOUT_S)
        if os.path.ismount(point):
            raise RuntimeError(f"{point} is still mounted: unmount it, then build again")
    shutil.rmtree(path)


# -- ``python -m chaos.topology.images`` ------------------------------------------------------


def main(argv: list[str]) -> int:
    command, names = (argv[0], argv[1:]) if argv else ("build", [])
    try:
        if command == "build":
            for name in names:
                image_for(name)
            built = build(names or None, lambda line: print(f"[images] {line}", flush=True))
            if not built:
                print(
                    "[images] all present: " + ", ".join(RECIPES[n].image for n in names or RECIPES)
                )
        elif command in ("present", "missing"):
            found = present(names or None) if command == "present" else missing(names or None)
            for name in found:
                print(f"{name} {RECIPES[name].image}")
        else:
            raise UsageError(f"unknown command {command!r}: build, present or missing")
    except (UsageError, RuntimeError) as exc:
        print(f"images: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, UsageError) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
