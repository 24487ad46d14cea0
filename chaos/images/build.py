"""Building lockchaos's images: debootstrap each Debian suite once, copy that base for each
image of the suite, put the recipe's pieces in, ``docker import`` (``present``/``missing``:
which are up to date; ``build``: the rest, ``jobs`` at a time).

Work directories live under ``.cache/images/`` and are deleted after the import; the suites'
bases once every image of the build is done.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.errors import UsageError
from chaos.images import failures, sources
from chaos.images.debian import debian_mirror
from chaos.images.recipes import (
    ENTRYPOINT_SCRIPT,
    IMAGE_CACHE,
    LOCKCHAOS_SCRIPT,
    RECIPES,
    FromSource,
    FullRecipe,
    LockchaosRecipe,
    OnLockchaos,
    PythonRecipe,
    Recipe,
    ServerRecipe,
    ToxiproxyRecipe,
    driver_builds,
    driver_files,
    image_id,
    needs,
    recipe_hash,
    requirements,
    source_tree,
)
from chaos.topology import binaries
from chaos.topology.engine import engine
from chaos.topology.images import (
    FAKETIME_FILE,
    LABEL,
    NAME_LABEL,
    RECIPE_LABEL,
    VERSION_LABEL,
    image_for,
    labels,
)

WORK = binaries.CACHE / "images"
BASES = WORK / "bases"  # each suite's debootstrapped minbase, for the images of one build
SOURCES = binaries.CACHE / "sources"  # verified upstream tarballs (setup.sh's too)
WHEELHOUSE = binaries.CACHE / "wheelhouse"  # dependency wheels (tests/redis/test_install.py's too)
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SITE_PACKAGES = "/usr/local/lib/python3.11/dist-packages"  # where Debian's python3 looks
# Images built at once: two cores. A server's make and a suite's debootstrap or an apt-get
# (mostly waiting on the mirror) overlap; four at once only made each slower.
JOBS = 2
# A tag prefix (``--prefix scratch/``): lowercase words of a repository name, ending "/" or "-".
PREFIX = re.compile(r"([a-z0-9]+[._/-]+)*")
DEBOOTSTRAP_TIMEOUT_S = 900
BUILD_TIMEOUT_S = 1800
STEP_TIMEOUT_S = 300
PIP_TIMEOUT_S = 600
APT_TIMEOUT_S = 900  # apt-get update and install of the full image's runtimes
CHECK_TIMEOUT_S = 30  # a jemalloc binary under libfaketime hangs: do not wait for it long
WAIT_FOR_OTHER_BUILD_S = 3600  # another process building the same images, on this machine
_WHEELHOUSE = threading.Lock()  # the images built at once add wheels to it one at a time


# -- queries (Docker SDK) --------------------------------------------------------------------


def _engine() -> Any:
    return engine(60, needed_by="lockchaos's images", fix="`docker info` must work")


def present(
    names: Iterable[str] | None = None,
    *,
    client: Any = None,
    source: Path | None = None,
    prefix: str = "",
) -> list[str]:
    """The names (of ``names``, default all) whose image exists, built from today's recipe
    (``source``: the demo's source tree, see ``source_tree``; ``prefix``: see ``build``)."""
    client = client or _engine()
    mirror = debian_mirror()
    up_to_date = []
    for name in chosen(names, source):
        recipe = RECIPES[name]
        found = labels(client, prefix + recipe.image)
        if found is not None and found.get(RECIPE_LABEL) == _hash_or_none(
            recipe, mirror, source, prefix
        ):
            up_to_date.append(name)
    return up_to_date


def missing(
    names: Iterable[str] | None = None,
    *,
    client: Any = None,
    source: Path | None = None,
    prefix: str = "",
) -> list[str]:
    """The names whose image is absent or from another recipe (what ``build`` would build)."""
    wanted = chosen(names, source)
    have = set(present(wanted, client=client, source=source, prefix=prefix))
    return [name for name in wanted if name not in have]


def chosen(names: Iterable[str] | None, source: Path | None) -> list[str]:
    """``names``, or by default every image, except the demo and lockchaos images (slim and
    full) when there is no lockchaos source tree to wheel them from (an installed wheel, no
    ``source`` given): the demo is a checkout's Compose demo, the lockchaos images are for
    CI, a run needs none of them."""
    if names or source is not None:
        return list(names or RECIPES)
    try:
        source_tree(None)
    except UsageError:
        return [name for name, recipe in RECIPES.items() if not isinstance(recipe, OnLockchaos)]
    return list(RECIPES)


def check_prefix(prefix: str) -> str:
    """``prefix`` if it can begin an image's name (``scratch/``), else ``UsageError``."""
    if not PREFIX.fullmatch(prefix):
        raise UsageError(f"--prefix {prefix!r} cannot begin an image name: lowercase letters, "
                         "digits and . _ - /, ending in / or - (e.g. scratch/)")  # fmt: skip
    return prefix


def _hash_or_none(recipe: Recipe, mirror: str, source: Path | None, prefix: str) -> str | None:
    try:
        return recipe_hash(recipe, mirror, source, prefix)
    except UsageError:  # no toxiproxy-server, source tree or driver to hash: not up to date
        return None


# -- building --------------------------------------------------------------------------------


def build(
    names: Sequence[str] | None = None,
    progress: Callable[[str], None] = print,
    *,
    force: bool = False,
    retry: bool = False,
    source: Path | None = None,
    prefix: str = "",
    jobs: int = JOBS,
) -> list[str]:
    """Build the images of ``names`` (default: all) that are missing or out of date.

    Idempotent: an image whose ``org.lockchaos.recipe`` label matches is skipped (``force``
    rebuilds it; the images it is made from, ``recipes.needs``, are built only when missing).
    So is one whose build failed before with the same recipe hash (``failures``: remembered
    in the cache) unless ``retry`` or ``force``. ``jobs`` images are built at once, each once
    the images it is made from are; each Debian suite is debootstrapped once, and every image
    of it starts from a copy of that base. A failed image does not stop the others (those
    made from it are not tried): then a ``RuntimeError`` (one line) names every image not
    built and why. ``source``: the lockchaos source tree the demo and lockchaos images are
    wheeled from (``source_tree``). ``prefix`` goes before every tag built and read
    (``scratch/`` builds ``scratch/lockchaos/redis:7.0``…: a build from nothing that leaves
    the images runs use alone). One build of a prefix at a time on a machine: another waits
    for it, then builds what it left missing. Returns the names built; ``progress`` gets one
    line per step. ``UsageError`` (one line) when a prerequisite is missing.
    """
    wanted = chosen(names, source)
    for name in wanted:
        image_for(name)  # UsageError for an unknown name
    check_prefix(prefix)
    if jobs < 1:
        raise UsageError(f"--jobs must be at least 1 (got {jobs})")
    client = _engine()
    forced = set(wanted) if force else set()  # not the images they are made from
    wanted = _with_needs(wanted)
    with _one_build_at_a_time(prefix, progress):
        absent = set(missing(wanted, client=client, source=source, prefix=prefix))
        todo = [name for name in wanted if name in forced or name in absent]
        if not todo:
            return []
        _check_prerequisites(todo, source)
        mirror = debian_mirror()
        run = _Run(mirror, source, prefix, _serialised(progress), failures.load(), retry or force)
        try:
            reasons = _in_order(todo, run.make, jobs)
        finally:
            _remove_tree(BASES)
    not_built = [reason for reason in reasons.values() if reason is not None]
    if not_built:
        raise RuntimeError(f"{'; '.join(not_built)} ({failures.RETRY_HINT})")
    return [name for name in todo if reasons[name] is None]


def _with_needs(names: list[str]) -> list[str]:
    """``names`` and, before each, the images it is made from (theirs too: the full image
    is made from the lockchaos image, made from the python and redis-7.0 images)."""
    ordered: list[str] = []

    def add(name: str) -> None:
        for needed in needs(RECIPES[name]):
            add(needed)
        if name not in ordered:
            ordered.append(name)

    for name in names:
        add(name)
    return ordered


def _in_order(
    todo: list[str], make: Callable[[str], str | None], jobs: int
) -> dict[str, str | None]:
    """``make`` each of ``todo``, ``jobs`` at a time, in ``todo``'s order as far as each one
    waits for the images it is made from (``needs``) among them; one made from an image that
    was not built is not tried. Each name's outcome: None (built) or why not, in one line."""
    outcome: dict[str, str | None] = {}
    pending = list(todo)
    running: dict[Future[str | None], str] = {}
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="image") as pool:
        while pending or running:
            for name in list(pending):
                if len(running) >= jobs:
                    break
                made_from = [n for n in needs(RECIPES[name]) if n in todo]
                if any(n not in outcome for n in made_from):
                    continue  # its base is still being built
                pending.remove(name)
                unbuilt = [n for n in made_from if outcome[n] is not None]
                if unbuilt:
                    outcome[name] = f"{name} not built: it is made from {unbuilt[0]}, not built"
                    continue
                running[pool.submit(make, name)] = name
            if not running:  # each one left waits for one never made: none (needs is a tree)
                assert not pending, pending
                break
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                outcome[running.pop(future)] = future.result()
    return outcome


def _serialised(progress: Callable[[str], None]) -> Callable[[str], None]:
    """``progress``, one line at a time whichever image's thread calls it."""
    lock = threading.Lock()

    def say(line: str) -> None:
        with lock:
            progress(line)

    return say


@contextmanager
def _one_build_at_a_time(prefix: str, progress: Callable[[str], None]) -> Iterator[None]:
    """Hold this machine's lock of ``prefix``'s images: two checkouts' set-ups at once (one
    engine, the same tags) build each image once, the second after the first, seeing what it
    built. Bounded: ``WAIT_FOR_OTHER_BUILD_S``."""
    name = re.sub(r"[^a-z0-9]+", "-", prefix).strip("-")
    path = Path(tempfile.gettempdir()) / f"lockchaos-images{'-' + name if name else ''}.lock"
    with path.open("a") as held:
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress(f"waiting for another build of lockchaos's images ({path})")
            deadline = time.monotonic() + WAIT_FOR_OTHER_BUILD_S
            while True:
                try:
                    fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"another build of lockchaos's images has held "
                                           f"{path} for {WAIT_FOR_OTHER_BUILD_S} s") from None
                    time.sleep(1)
        try:
            yield
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)


@dataclass(frozen=True)
class _Base:
    """A suite's debootstrapped minbase: its root file system, a ``file://`` mirror of the
    indexes its debootstrap fetched and verified (the signed ``InRelease``, ``Packages``), and
    the packages it holds."""

    rootfs: Path
    index: Path
    installed: frozenset[str]


class _Bases:
    """Each Debian suite's ``debootstrap --variant=minbase`` root file system, made once per
    build by the first image of the suite that needs it (the others wait for it) and copied
    by each: nine images, two debootstraps. A suite whose debootstrap failed fails each of
    its images with that reason, without trying again."""

    def __init__(self, mirror: str, progress: Callable[[str], None]) -> None:
        self._mirror, self._progress = mirror, progress
        self._guard = threading.Lock()
        self._suites: dict[str, threading.Lock] = {}
        self._made: dict[str, _Base | RuntimeError] = {}

    def copy(self, suite: str, rootfs: Path, log: Path) -> None:
        """A copy of ``suite``'s base as ``rootfs`` (which must not exist)."""
        _run(["cp", "-a", str(self._base(suite, log).rootfs), str(rootfs)], log, STEP_TIMEOUT_S)

    def include(
        self, suite: str, packages: Sequence[str], rootfs: Path, work: Path, log: Path
    ) -> None:
        """Into ``rootfs``, a copy of ``suite``'s base: what ``debootstrap --include=packages``
        installs beyond the base, as debootstrap's own resolver chooses it (``--print-debs``,
        against the base's indexes: no download), installed by ``apt-get``. Not apt's choice:
        where another installed package provides a dependency, apt takes it and debootstrap
        installs the package named (bookworm's ``redis-server`` needs ``lsb-base``, which its
        ``sysvinit-utils`` provides: apt would leave ``lsb-base`` out)."""
        base = self._base(suite, log)
        argv = ["debootstrap", "--variant=minbase", "--include=" + ",".join(packages),
                "--print-debs", suite, str(work / "resolve"), base.index.as_uri()]  # fmt: skip
        chosen = set(_run(argv, log, DEBOOTSTRAP_TIMEOUT_S, capture=True).split())
        _apt_install(rootfs, sorted(chosen - base.installed), log)

    def _base(self, suite: str, log: Path) -> _Base:
        with self._guard:
            lock = self._suites.setdefault(suite, threading.Lock())
        with lock:
            if suite not in self._made:
                self._made[suite] = self._debootstrap(suite, log)
            made = self._made[suite]
        if isinstance(made, RuntimeError):
            raise made
        return made

    def _debootstrap(self, suite: str, log: Path) -> _Base | RuntimeError:
        rootfs, index = BASES / suite, BASES / f"{suite}.index"
        _remove_tree(rootfs)
        _remove_tree(index)
        rootfs.parent.mkdir(parents=True, exist_ok=True)
        self._progress(f"debootstrap {suite} ({self._mirror}): the base of its images")
        started = time.monotonic()
        argv = ["debootstrap", "--variant=minbase", suite, str(rootfs), self._mirror]
        try:
            _run(argv, log, DEBOOTSTRAP_TIMEOUT_S)
            installed = _chroot(rootfs, {"PATH": PATH}, ["dpkg-query", "-W", "-f", "${Package}\n"],
                                log)  # fmt: skip
        except RuntimeError as exc:
            return RuntimeError(f"the {suite} base: {exc}")
        # apt's name of each index the debootstrap fetched: MIRROR_dists_SUITE_PATH, "/" as "_"
        fetched = re.sub(r"^[a-z]+://", "", self._mirror).replace("/", "_") + f"_dists_{suite}_"
        for path in (rootfs / "var" / "lib" / "apt" / "lists").glob(fetched + "*"):
            copy = index / "dists" / suite / path.name.removeprefix(fetched).replace("_", "/")
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, copy)
        self._progress(f"debootstrap {suite}: done in {time.monotonic() - started:.0f} s")
        return _Base(rootfs, index, frozenset(installed.split()))


@dataclass
class _Run:
    """What the images of one ``build`` share: the mirror, the source tree, the tag prefix,
    the progress lines, the suites' bases and the failures remembered."""

    mirror: str
    source: Path | None
    prefix: str
    progress: Callable[[str], None]
    remembered: dict[str, failures.Failure]
    retry: bool
    bases: _Bases = field(init=False)
    _failures: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.bases = _Bases(self.mirror, self.progress)

    def tag(self, name: str) -> str:
        """The tag the image of recipe ``name`` has in this build."""
        return self.prefix + image_for(name)

    def make(self, name: str) -> str | None:
        """Build ``name``'s image: None, or why not (one line; remembered as its failure)."""
        recipe = RECIPES[name]
        inputs = _hash_or_none(recipe, self.mirror, self.source, self.prefix)  # after its base
        earlier = failures.not_retried(name, inputs, self.remembered, retry=self.retry)
        if earlier is not None:
            self.progress(f"{name}: not retried: its build failed at {earlier.at} with the "
                          f"same recipe ({earlier.recipe})")  # fmt: skip
            return f"{name} not retried (failed at {earlier.at}): {earlier.reason}"
        started = time.monotonic()
        work = WORK / name
        try:
            if isinstance(recipe, FromSource):
                _build_from_source(recipe, self, work)
            elif isinstance(recipe, FullRecipe):
                _build_full(recipe, self, work)
            else:
                _build_one(recipe, self, work)
        except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            with self._failures:
                failures.record(name, inputs, reason)
            self.progress(f"{name}: failed: {reason}")
            return f"{name} failed: {reason}"
        finally:
            _remove_tree(work)
        with self._failures:
            failures.forget(name)
        self.progress(f"{name}: {self.tag(name)} built in {time.monotonic() - started:.0f} s")
        return None


def _check_prerequisites(names: Sequence[str], source: Path | None) -> None:
    from_source = [n for n in names if isinstance(RECIPES[n], OnLockchaos)]
    if from_source:
        source_tree(source)  # UsageError when there is none
    if "toxiproxy" in names or "lockchaos" in names:
        binaries.find("toxiproxy-server")  # UsageError naming `lockchaos setup`
    if len(from_source) == len(names):
        return  # docker create/cp/commit, apt-get in a container and pip: no root needed
    if os.geteuid() != 0:
        raise UsageError("building lockchaos images needs root (debootstrap and chroot)")
    tools = ["debootstrap", "tar", "docker", "mount"]
    if any(isinstance(RECIPES[n], ServerRecipe) for n in names):
        tools += ["gpgv", "make", "cc", "c++"]
    absent = [tool for tool in tools if shutil.which(tool) is None]
    if absent:
        raise UsageError(f"building lockchaos images needs {', '.join(absent)} (apt-get install)")


def _build_one(
    recipe: ServerRecipe | ToxiproxyRecipe | PythonRecipe, run: _Run, work: Path
) -> None:
    """A copy of the suite's base, the recipe's packages installed in it (what
    ``debootstrap --include`` would take: their dependencies, no recommends), its pieces
    put in, imported. A server's make needs only its source: it runs beside the suite's
    debootstrap and the packages' install (a mirror and the disk), not after them — from
    nothing, the first two servers' makes waited 45-55 s for those."""
    _remove_tree(work)
    work.mkdir(parents=True)
    rootfs = work / "rootfs"
    log = work / "build.log"
    tag = run.tag(recipe.name)
    run.progress(f"{recipe.name}: building {tag} from {recipe.suite} ({run.mirror})")
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"make-{recipe.name}") as maker:
        # (leaving this block waits for the make, whatever happened: the work tree goes after)
        made = maker.submit(_compile, recipe, work, run.progress) \
            if isinstance(recipe, ServerRecipe) else None
        run.bases.copy(recipe.suite, rootfs, log)
        if isinstance(recipe, ServerRecipe | PythonRecipe):
            run.progress(f"{recipe.name}: apt-get install {', '.join(recipe.packages)}")
            run.bases.include(recipe.suite, recipe.packages, rootfs, work, log)
        if isinstance(recipe, ServerRecipe):
            assert made is not None
            changes = _make_server(recipe, made.result(), rootfs, log)
        elif isinstance(recipe, PythonRecipe):
            changes = _make_python(recipe, rootfs, log, run.progress)
        else:
            changes = _make_toxiproxy(recipe, rootfs)
    _slim(rootfs)
    labels = {LABEL: "1", NAME_LABEL: recipe.name,
              RECIPE_LABEL: recipe_hash(recipe, run.mirror, prefix=run.prefix)}  # fmt: skip
    changes += [f"LABEL {key}={value}" for key, value in labels.items()]
    run.progress(f"{recipe.name}: docker import {tag}")
    with _replacing(tag):
        _import(rootfs, tag, changes, log)


def _apt_install(rootfs: Path, packages: Sequence[str], log: Path) -> None:
    """``apt-get install --no-install-recommends packages`` in ``rootfs`` from the indexes its
    debootstrap fetched, as debootstrap installs (``/proc`` mounted, no service started: a
    ``policy-rc.d`` that says no, removed after)."""
    policy = rootfs / "usr" / "sbin" / "policy-rc.d"
    policy.write_text("#!/bin/sh\nexit 101\n")
    policy.chmod(0o755)
    proc = rootfs / "proc"
    _run(["mount", "-t", "proc", "proc", str(proc)], log, STEP_TIMEOUT_S)
    try:
        env = {"PATH": PATH, "DEBIAN_FRONTEND": "noninteractive", **_proxies()}
        # unsafe-io: no fsync per file (a build that dies is thrown away whole)
        _chroot(rootfs, env, ["apt-get", "install", "-y", "-q", "--no-install-recommends",
                              "-o", "Dpkg::Options::=--force-unsafe-io", *packages], log,
                APT_TIMEOUT_S)  # fmt: skip
    finally:
        subprocess.run(["umount", str(proc)], capture_output=True, timeout=STEP_TIMEOUT_S)
        policy.unlink(missing_ok=True)


def _proxies() -> dict[str, str]:
    """This machine's proxy settings (``http_proxy``…), for a download made in a chroot."""
    return {k: v for k, v in os.environ.items() if k.lower().endswith("_proxy")}


@contextmanager
def _replacing(tag: str) -> Iterator[None]:
    """Around making ``tag``: the image it named before, now untagged, is removed."""
    replaced = image_id(tag)
    yield
    if replaced and replaced != image_id(tag):
        subprocess.run(["docker", "rmi", replaced], capture_output=True, timeout=STEP_TIMEOUT_S)


def _compile(recipe: ServerRecipe, work: Path, progress: Callable[[str], None]) -> Path:
    """The server's verified upstream source, fetched, unpacked and made (its own log, beside
    the image's steps): the source tree."""
    tarball = sources.fetch(recipe.source, SOURCES, lambda line: progress(f"{recipe.name}: {line}"))
    source = sources.unpack(tarball, work / "src")
    progress(f"{recipe.name}: make {' '.join(recipe.make_flags)} ({tarball.name})")
    jobs = str(os.cpu_count() or 1)
    # GIT_CEILING_DIRECTORIES: the build stamps a git sha, and must not take lockchaos's
    _run(["make", "-C", str(source), f"-j{jobs}", *recipe.make_flags], work / "make.log",
         BUILD_TIMEOUT_S, env={"GIT_CEILING_DIRECTORIES": str(work)})  # fmt: skip
    return source


def _make_server(recipe: ServerRecipe, source: Path, rootfs: Path, log: Path) -> list[str]:
    """The server made from ``source`` (``_compile``) put into ``rootfs``, and checked there."""
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
        f"LABEL {VERSION_LABEL}={version.split()[2].removeprefix('v=')}",
    ]


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
        f"LABEL {VERSION_LABEL}={recipe.version}",
    ]


def _make_python(
    recipe: PythonRecipe, rootfs: Path, log: Path, progress: Callable[[str], None]
) -> list[str]:
    """lockchaos's dependencies into the suite's python3, by that python3 (its version
    decides markers such as redis's ``async-timeout; python_full_version < "3.11.3"``),
    running pip from its wheel offline from a copy of the wheelhouse; ``python`` too."""
    wanted = requirements()
    progress(f"{recipe.name}: pip install {len(wanted)} dependencies from {WHEELHOUSE}")
    WHEELHOUSE.mkdir(parents=True, exist_ok=True)
    pip = [sys.executable, "-m", "pip"]
    with _WHEELHOUSE:
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
        _chroot(rootfs, {**plain, **_proxies()}, download, log, PIP_TIMEOUT_S)
        with _WHEELHOUSE:
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
        f"LABEL {VERSION_LABEL}={version}",
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
    with _WHEELHOUSE:
        _run([*pip, "download", "-q", "--only-binary=:all:", "--dest", str(WHEELHOUSE), *needs],
             log, PIP_TIMEOUT_S)  # fmt: skip
    _run(offline, log, PIP_TIMEOUT_S)


def _build_from_source(recipe: FromSource, run: _Run, work: Path) -> None:
    """A wheel of the source tree, installed (no dependencies: the base has them) into a
    container of the base image with ``docker cp`` (the lockchaos image: with the local
    provider's programs, ``_local_programs``), committed as the recipe's image."""
    tree, progress, tag = source_tree(run.source), run.progress, run.tag(recipe.name)
    progress(f"{recipe.name}: building {tag} on {run.tag(recipe.base)}")
    _remove_tree(work)
    work.mkdir(parents=True)
    log = work / "build.log"
    src, dist, layer = work / "src", work / "dist", work / "layer"
    site = layer / SITE_PACKAGES.lstrip("/")
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(tree / name, src / name)
    shutil.copytree(tree / "chaos", src / "chaos",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))  # fmt: skip
    progress(f"{recipe.name}: pip wheel lockchaos")
    # setuptools/wheel for the isolated build: the wheelhouse's, else PyPI's (kept there)
    _wheelhouse_run(["wheel", "--no-deps", "-w", str(dist), str(src)],
                    ["setuptools>=68", "wheel"], log)  # fmt: skip
    (wheel,) = dist.glob("lockchaos-*.whl")
    _run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
          "--target", str(site), str(wheel)], log, PIP_TIMEOUT_S)  # fmt: skip
    shutil.rmtree(site / "bin", ignore_errors=True)  # this venv's console scripts
    changes = ['CMD ["python", "-m", "chaos.cli"]']
    if isinstance(recipe, LockchaosRecipe):
        progress(f"{recipe.name}: redis-server and libfaketime of {run.tag(recipe.server)}, "
                 "toxiproxy-server")  # fmt: skip
        changes = _local_programs(run.tag(recipe.server), layer, log)
    progress(f"{recipe.name}: docker commit {tag}")
    labels = {LABEL: "1", NAME_LABEL: recipe.name,
              RECIPE_LABEL: recipe_hash(recipe, "", tree, run.prefix),
              VERSION_LABEL: wheel.name.split("-")[1]}  # fmt: skip
    with _replacing(tag), _container(run.tag(recipe.base)) as container:
        _run(["docker", "cp", f"{layer}/.", f"{container}:/"], log, STEP_TIMEOUT_S)
        _commit(container, tag, labels, changes, log)


def _local_programs(server_image: str, layer: Path, log: Path) -> list[str]:
    """Into ``layer``: what the local provider runs, where ``chaos.topology.binaries`` finds
    it (``IMAGE_CACHE``'s ``redis/bin``, ``bin``; libfaketime where Debian puts it) and the
    ``lockchaos`` command (the server's from ``server_image``); returns the image's
    ``ENTRYPOINT`` and the rest."""
    cache = layer / IMAGE_CACHE.lstrip("/")
    redis_bin, tool_bin = cache / "redis" / "bin", cache / "bin"
    redis_bin.mkdir(parents=True)
    tool_bin.mkdir(parents=True)
    lib = layer / "usr" / "lib" / "x86_64-linux-gnu"
    lib.mkdir(parents=True)
    with _container(server_image) as server:
        for program in ("redis-server", "redis-cli"):
            _run(["docker", "cp", f"{server}:/usr/bin/{program}", str(redis_bin / program)],
                 log, STEP_TIMEOUT_S)  # fmt: skip
        _run(["docker", "cp", f"{server}:/usr/lib/x86_64-linux-gnu/faketime", str(lib)], log,
             STEP_TIMEOUT_S)  # fmt: skip
    _symlink(redis_bin / "redis-sentinel", "redis-server")
    for program in ("toxiproxy-server", "toxiproxy-cli"):
        shutil.copy2(os.path.realpath(binaries.find(program)), tool_bin / program)
    script = layer / "usr" / "local" / "bin" / "lockchaos"
    script.parent.mkdir(parents=True)
    script.write_text(LOCKCHAOS_SCRIPT)
    script.chmod(0o755)
    (layer / "project").mkdir()
    return [
        f"ENV LOCKCHAOS_CACHE={IMAGE_CACHE}",
        "ENV PYTHONUNBUFFERED=1",
        "WORKDIR /project",
        'ENTRYPOINT ["lockchaos"]',
        'CMD ["--help"]',
    ]


def _build_full(recipe: FullRecipe, run: _Run, work: Path) -> None:
    """``apt-get install`` of the runtimes in a container of the base image (its apt sources
    are the mirror it was debootstrapped from), the drivers' builds copied into its cache
    (``docker cp``), committed as the recipe's image with the base's entrypoint."""
    tag = run.tag(recipe.name)
    run.progress(f"{recipe.name}: building {tag} on {run.tag(recipe.base)}")
    _remove_tree(work)
    work.mkdir(parents=True)
    log = work / "build.log"
    layer = work / "layer"
    try:
        builds = driver_builds()
        inputs = recipe_hash(recipe, run.mirror, prefix=run.prefix)
    except UsageError as exc:  # a driver not built: this image fails, the others go on
        raise RuntimeError(str(exc)) from None
    drivers = layer / IMAGE_CACHE.lstrip("/") / "drivers"
    for build, built in builds.items():
        for path in driver_files(built):
            copy = drivers / build / path.relative_to(built)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, copy)
    packages = " ".join(recipe.packages)
    # the JRE's postinst links its man pages: the base's /usr/share/man was slimmed away
    script = (
        f"mkdir -p /usr/share/man/man1 && apt-get update -q && DEBIAN_FRONTEND=noninteractive"
        f" apt-get install -y -q --no-install-recommends {packages} && apt-get clean && "
        "rm -rf /var/lib/apt/lists/* /usr/share/doc/* /usr/share/man/* /var/log/*.log"
    )
    run.progress(f"{recipe.name}: apt-get install {packages}, the drivers {', '.join(builds)}")
    with _replacing(tag), _container(run.tag(recipe.base), "sh", "-c", script) as container:
        _run(["docker", "start", "-a", container], log, APT_TIMEOUT_S)
        _run(["docker", "cp", f"{layer}/.", f"{container}:/"], log, STEP_TIMEOUT_S)
        labels = {NAME_LABEL: recipe.name, RECIPE_LABEL: inputs}
        # the base's entrypoint, not the install script's
        _commit(container, tag, labels, ['ENTRYPOINT ["lockchaos"]', 'CMD ["--help"]'], log)


def _commit(
    container: str, image: str, labels: dict[str, str], changes: list[str], log: Path
) -> None:
    """``docker commit`` of ``container`` as ``image``, with ``labels`` and the Dockerfile
    instructions ``changes``."""
    commit = ["docker", "commit"]
    for change in [*(f"LABEL {key}={value}" for key, value in labels.items()), *changes]:
        commit += ["--change", change]
    _run([*commit, container, image], log, STEP_TIMEOUT_S)


@contextmanager
def _container(image: str, *entrypoint: str) -> Iterator[str]:
    """A created container of ``image`` (never started unless ``entrypoint``: what it runs
    then), removed afterwards."""
    created = subprocess.run(
        ["docker", "create", "--label", f"{LABEL}-build=1",
         *(["--entrypoint", entrypoint[0], image, *entrypoint[1:]] if entrypoint
           else [image, "true"])],
        capture_output=True, text=True, timeout=STEP_TIMEOUT_S,
    )  # fmt: skip
    if created.returncode != 0:
        raise RuntimeError(f"docker create {image} failed: {created.stderr.strip()[-300:]}")
    container = created.stdout.strip()
    try:
        yield container
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True,
                       timeout=STEP_TIMEOUT_S)  # fmt: skip


def _faketime_library(rootfs: Path) -> str:
    found = sorted(rootfs.glob("usr/lib/*/faketime/libfaketime.so.1"))
    if not found:
        raise RuntimeError(f"libfaketime.so.1 missing from {rootfs}")
    return "/" + str(found[0].relative_to(rootfs))


def _slim(rootfs: Path) -> None:
    """Drop what a container never reads: apt's lists, caches, logs and lock (and what an
    ``apt-get install`` leaves that a debootstrap never writes: its record of the packages it
    installed as dependencies, debconf's scratch directory), docs, man pages, locales."""
    for pattern in (
        "var/lib/apt/lists/*",
        "var/lib/apt/extended_states",
        "var/cache/apt/*.bin",
        "var/cache/apt/archives/*.deb",
        "var/cache/apt/archives/lock",
        "var/cache/debconf/tmp.ci",
        "var/log/apt/*",
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


def _run(
    argv: list[str],
    log: Path,
    timeout_s: float,
    env: dict[str, str] | None = None,
    capture: bool = False,
) -> str:
    """Run ``argv``, its output into ``log`` (``capture``: its standard output returned
    instead); ``RuntimeError`` with the log's last line when it fails or times out."""
    with log.open("ab") as out:
        out.write(f"$ {' '.join(argv)}\n".encode())
        out.flush()
        try:
            done = subprocess.run(
                argv, stdout=subprocess.PIPE if capture else out, stderr=out, timeout=timeout_s,
                env={**os.environ, **(env or {})},
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"`{argv[0]}` took more than {timeout_s:.0f} s") from None
    if done.returncode != 0:
        raise RuntimeError(f"`{' '.join(argv[:3])} …` failed: {_tail(log)}")
    return done.stdout.decode(errors="replace") if capture else ""


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
