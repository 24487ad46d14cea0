"""Which drivers there are: the bundled ones by name, a user's by ``exec:'CMD ARGS'``.

The bundled drivers (Jedis, Redisson, go-redsync, node-redlock, node-semaphore) have their
sources in the package (``sources/``, package data: a wheel carries them) and are built by
``build.sh`` next to this module — which ``lockchaos setup --drivers`` runs into ``drivers/``
of lockchaos's cache, and a checkout's ``make setup`` (``scripts/drivers-setup.sh``) into its
``.cache``. They are found in the caches lockchaos searches for every program it runs
(``chaos.topology.binaries.caches``: ``LOCKCHAOS_CACHE``, a checkout's ``.cache``, the
per-user cache) or in ``LOCKCHAOS_DRIVERS_DIR`` alone when that is set. Each is registered in
``chaos.lockspec.BUNDLED`` as an ordinary short name.

Known flaw: a driver is exactly as safe as the lock it runs; each bundled driver's flaw is in
its entry (``lockchaos list``).

What a driver can do for a fault (``Fault.client_needs``) and what its lock needs of the
topology are declared here for a bundled one and asked of a user's with a ``describe``
request (``capabilities``, ``described_info``).
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from chaos.drivers import adapter
from chaos.drivers.process import DriverBroken, DriverProcess
from chaos.drivers.protocol import EXTEND, Describe, Described
from chaos.errors import UsageError
from chaos.locks.contract import (
    EXCLUSIVE,
    FAKED_CLOCK,
    PAUSE_POINTS,
    SHARED,
    LockContext,
    LockInfo,
)
from chaos.topology.binaries import caches, setup_hint

EXEC = "exec:"  # --lock exec:'CMD ARGS': a user's driver
BUILD_SCRIPT = Path(__file__).with_name("build.sh")  # build.sh OUT_DIR: the bundled drivers

# -- a user's driver: exec:'CMD ARGS' -----------------------------------------------------------


def parse_exec(command: str) -> list[str]:
    """``exec:'CMD ARGS'`` → argv; ``UsageError`` (one line) if it cannot be run."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"lock '{EXEC}{command}': cannot parse the command: {exc}") from None
    if not argv:
        raise UsageError(f"lock '{EXEC}': give the driver's command, e.g. exec:'python3 driver.py'")
    program = argv[0]
    if os.sep in program:
        if not os.access(program, os.X_OK):
            raise UsageError(f"lock '{EXEC}{command}': {program} is not an executable file")
    elif shutil.which(program) is None:
        raise UsageError(f"lock '{EXEC}{command}': {program!r} is not on PATH")
    return argv


def exec_factory(command: str) -> Callable[[LockContext], adapter.DriverLock]:
    argv = parse_exec(command)

    def make(ctx: LockContext) -> adapter.DriverLock:
        return adapter.start(ctx, argv, f"{EXEC}{command}")

    return make


@functools.cache
def describe(command: str) -> Described | None:
    """Start a user's driver, send ``describe`` and end its input, return its answer (None if
    it gave none: a driver that does not know ``describe`` exits at end of input). Asked once
    per process: the answer is a property of the program."""
    driver = DriverProcess(parse_exec(command), label=f"{EXEC}{command}")
    try:
        driver.send(Describe())
        driver.end_input()
        reply = driver.receive(adapter.HELLO_TIMEOUT_S)
    except DriverBroken:
        return None
    finally:
        driver.close()
    return reply if isinstance(reply, Described) else None


def described_info(spec: str) -> LockInfo | None:
    """A user's driver (``exec:'CMD ARGS'``) as its ``describe`` answer declares it, in the
    shape of a bundled lock's entry — what it needs of the topology (``min_nodes``,
    ``topology``), whether it extends — so the campaign's layout chooses for it as for a
    bundled lock; None if it gave no answer."""
    described = describe(spec[len(EXEC) :])
    if described is None:
        return None
    made = ", ".join(part for part in (described.language, described.library) if part)
    return LockInfo(
        name=spec,
        target=spec,
        summary=f"a user's driver{f' ({made})' if made else ''}",
        seed="none: a user's driver",
        flaw="unknown: a user's driver",
        topology=described.topology,
        min_nodes=described.min_nodes,
        extend=EXTEND in described.capabilities,
        capacity=described.capacity,
        modes=tuple(described.modes),
        fair=described.fair,
        max_permits=described.max_permits,
        ttl_granularity_ms=described.ttl_granularity_ms,
        renews=described.renews,
        language=described.language or "",
        library=described.library or "",
    )


# -- the bundled drivers -------------------------------------------------------------------------


def build_dirs() -> list[Path]:
    """Where built drivers are looked for, in order (``lockchaos setup --drivers`` builds
    into the first)."""
    override = os.environ.get("LOCKCHAOS_DRIVERS_DIR")
    if override:
        return [Path(override)]
    return [cache / "drivers" for _, cache in caches()]


JVM_FLAGS = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k", "-Xmx128m",
             "-XX:-UsePerfData", "-Xshare:auto"]  # fmt: skip


@dataclass(frozen=True)
class Library:
    """What a bundled driver's lock is: the library and its version, and the Redis client it
    runs on when that is another library. Written as a summary names it: ``go-redsync v4.13.0
    + go-redis v9``."""

    name: str
    version: str
    client: str = ""

    def __str__(self) -> str:
        return f"{self.name} {self.version}" + (f" + {self.client}" if self.client else "")


@dataclass(frozen=True)
class Bundled:
    """A bundled driver: where its build lives, how to start it, what it can do."""

    declared: LockInfo  # its entry as written; ``info`` adds what it is made with
    build: str  # its directory under drivers/ in a cache
    language: str
    library: Library
    launcher: Callable[[Path], list[str]]
    ready: str  # a file inside the build directory that exists once it is built
    # What it can do for a fault: PAUSE_POINTS as its hello announces it, and FAKED_CLOCK,
    # a property of the runtime it runs on (the JVM and Node.js read the clock through libc).
    capabilities: frozenset[str] = frozenset({PAUSE_POINTS, FAKED_CLOCK})

    @property
    def info(self) -> LockInfo:
        """Its catalog entry: as declared, with its language, library and version."""
        return replace(self.declared, language=self.language, library=self.library.name,
                       version=self.library.version)

    def built(self) -> Path | None:
        """The directory of its build (the first one searched that is finished), or None."""
        for root in build_dirs():
            if (root / self.build / self.ready).exists():
                return root / self.build
        return None

    def argv(self) -> list[str]:
        """How to start it; ``UsageError`` (one line) if it is built nowhere."""
        root = self.built()
        if root is None:
            searched = ", ".join(str(root / self.build) for root in build_dirs())
            raise UsageError(
                f"lock {self.info.name!r}: its {self.language} driver is not built (no "
                f"{self.ready} in {searched}): {setup_hint('--drivers')}"
            )
        return self.launcher(root)


def _java(main: str, *args: str) -> Callable[[Path], list[str]]:
    def argv(root: Path) -> list[str]:
        java = os.environ.get("LOCKCHAOS_JAVA") or shutil.which("java") or "java"
        cp = f"{root / 'classes'}:{root / 'lib'}/*"
        return [java, *JVM_FLAGS, "-cp", cp, main, *args]

    return argv


def _binary(name: str) -> Callable[[Path], list[str]]:
    """A driver that is one executable in its build directory (a Go or Rust build)."""
    return lambda root: [str(root / name)]


def _node(root: Path) -> list[str]:
    node = os.environ.get("LOCKCHAOS_NODE") or shutil.which("node") or "node"
    return [node, str(root / "driver.js")]


def _info(name: str, summary: str, seed: str, flaw: str, **flags: Any) -> LockInfo:
    return LockInfo(
        name=name,
        target=f"{__name__}:{name.replace('-', '_')}",
        summary=summary,
        seed=seed,
        flaw=flaw,
        **flags,
    )
JEDIS = Library("Jedis", "8.0.2")
REDISSON = Library("Redisson", "3.45.1")
REDSYNC = Library("go-redsync", "v4.13.0", "go-redis v9")
NODE_REDLOCK = Library("redlock", "5.0.0-beta.2", "ioredis 5")
NODE_SEMAPHORE = Library("redis-semaphore", "5.8.0", "ioredis 5")
RUST_REDLOCK = Library("redlock", "2.0.0", "redis-rs 0.23.5")
_SEED_004 = "004_8e2bee48344fb8f7.txt"


def _redisson(variant: str, info: LockInfo) -> Bundled:
    """A variant of the Redisson driver (one build, one main class, the variant its argument)."""
    return Bundled(info, "redisson", "java", REDISSON, _java("lockchaos.RedissonDriver", variant),
                   "classes/lockchaos/RedissonDriver.class")


SEMAPHORE_PERMITS = 3  # a semaphore's permits unless the run says otherwise (as lua-semaphore)
_ISSUE_19 = "beyond the seeds: Redisson's own"


def _jedis(name: str, variant: str, summary: str, seed: str, flaw: str) -> Bundled:
    info = _info(name, f"java ({JEDIS}): {summary}", seed, flaw)
    launcher = _java("lockchaos.JedisDriver", variant)
    return Bundled(info, "jedis", "java", JEDIS, launcher, "classes/lockchaos/JedisDriver.class")


BUNDLED_DRIVERS: dict[str, Bundled] = {
    b.info.name: b
    for b in (
        _jedis(
            "jedis-setnx-expire",
            "setnx-expire",
            "jedis.setnx then jedis.expire (seconds), Lua compare-and-delete release",
            f"{_SEED_004}, 错误示例1 wrongGetLock1, as Java",
            "a crash between SETNX and EXPIRE leaves a key with no expiry: deadlock.",
        ),
        _jedis(
            "jedis-getset-timestamp",
            "getset-timestamp",
            "setnx(expiry timestamp), get, getSet when expired; jedis.del release",
            f"{_SEED_004}, 错误示例2 wrongGetLock2, as Java",
            "expiry is judged by each client's clock and any client's DEL releases the lock.",
        ),
        _jedis(
            "jedis-del-release",
            "del-release",
            "SET NX PX, released by jedis.del(lockKey)",
            f"{_SEED_004}, 解锁 错误示例1 wrongReleaseLock1, as Java",
            "a holder whose lease expired deletes the lock another client now holds.",
        ),
        _jedis(
            "jedis-get-then-del",
            "get-then-del",
            "SET NX PX; release = jedis.get, compare, jedis.del",
            f"{_SEED_004}, 解锁 错误示例2 wrongReleaseLock2, as Java",
            "the lock can change hands between the GET and the DEL, which then deletes it.",
        ),
        _jedis(
            "jedis-lua",
            "lua",
            "seed 003's Lua SETNX+EXPIRE acquire, 004's Lua compare-and-delete release",
            "003_ad4e3d3f63ce056d.txt (Lua setnx + expire) and 004's releaseDistributedLock",
            "no fencing: a holder paused past its TTL keeps acting as the holder.",
        ),
        Bundled(
            _info(
                "redisson",
                f"java ({REDISSON}): RLock.tryLock() with the watchdog (no lease time)",
                "003_ad4e3d3f63ce056d.txt (Redisson's hash lock and its watchdog)",
                "a GC pause longer than the watchdog's timeout lets another client in "
                "(soft); a Sentinel failover loses the lock (hard).",
                renews=True,
            ),
            "redisson",
            "java",
            REDISSON,
            _java("lockchaos.RedissonDriver", "watchdog"),
            "classes/lockchaos/RedissonDriver.class",
        ),
        Bundled(
            _info(
                "redisson-lease",
                f"java ({REDISSON}): RLock.tryLock(0, leaseTime = TTL): no watchdog",
                "003_ad4e3d3f63ce056d.txt (Redisson's hash lock)",
                "no fencing and no renewal: slow work past the lease lets another client in.",
            ),
            "redisson",
            "java",
            REDISSON,
            _java("lockchaos.RedissonDriver", "lease"),
            "classes/lockchaos/RedissonDriver.class",
        ),
        _redisson("semaphore", _info(
            "redisson-semaphore",
            f"java ({REDISSON}): RSemaphore: trySetPermits(capacity), tryAcquire(k), release(k)",
            f"{_ISSUE_19} RSemaphore",
            "its permits are a counter with no lease: a holder that crashes never gives its "
            "permits back, and the semaphore stays short of them for good (liveness).",
            capacity=SEMAPHORE_PERMITS, modes=(SHARED,),
        )),
        _redisson("permit-expirable-semaphore", _info(
            "redisson-permit-expirable-semaphore",
            f"java ({REDISSON}): RPermitExpirableSemaphore: tryAcquire(0, leaseTime = TTL) → "
            "a permit id, tryRelease(id)",
            f"{_ISSUE_19} RPermitExpirableSemaphore",
            "a permit's expiry is the acquiring client's clock (currentTimeMillis + lease): a "
            "clock running ahead expires the others' permits early; no fencing.",
            capacity=SEMAPHORE_PERMITS, modes=(SHARED,), max_permits=1,
        )),
        _redisson("rwlock", _info(
            "redisson-rwlock",
            f"java ({REDISSON}): RReadWriteLock: readLock()/writeLock().tryLock(0, "
            "leaseTime = TTL), no watchdog",
            f"{_ISSUE_19} RReadWriteLock",
            "no fencing and no renewal: a reader or writer working past its lease lets a "
            "writer in (soft); a failover loses the lock.",
            capacity=None, modes=(EXCLUSIVE, SHARED), max_permits=1,
        )),
        _redisson("fair", _info(
            "redisson-fair",
            f"java ({REDISSON}): RFairLock.tryLock(wait, leaseTime = TTL): waiters queue in "
            "the order they asked",
            f"{_ISSUE_19} RFairLock",
            "no fencing and no renewal: work past the lease lets the next waiter in (soft); a "
            "waiter stopped at the head of the queue holds up everyone behind it.",
            fair=True,
        )),
        Bundled(
            _info(
                "redsync",
                f"go ({REDSYNC}): Redlock: Mutex.TryLock on N standalone masters",
                "003_ad4e3d3f63ce056d.txt (Redlock), as go-redsync implements it",
                "safety rests on timing: an empty restart of nodes the holder counted on "
                "lets a second client win a quorum (Kleppmann 2016).",
                topology="standalone",
                min_nodes=3,
            ),
            "redsync",
            "go",
            REDSYNC,
            _binary("redsync-driver"),
            "redsync-driver",
            # A pure-Go binary reads the clock through the vDSO, not libc: libfaketime cannot
            # move it, so client-clock would run on the true clock.
            capabilities=frozenset({PAUSE_POINTS}),
        ),
        Bundled(
            _info(
                "node-redlock",
                f"node ({NODE_REDLOCK}): Redlock.acquire on N standalone masters",
                "003_ad4e3d3f63ce056d.txt (Redlock), as the redlock npm package implements it",
                "safety rests on timing: an empty restart of nodes the holder counted on "
                "lets a second client win a quorum (Kleppmann 2016).",
                topology="standalone",
                min_nodes=3,
            ),
            "node-redlock",
            "node",
            NODE_REDLOCK,
            _node,
            "node_modules/redlock/package.json",
        ),
        Bundled(
            _info(
                "node-semaphore",
                f"node ({NODE_SEMAPHORE}): Semaphore.tryAcquire, lockTimeout = TTL, refreshed "
                "every 0.8 TTL",
                "beyond the seeds: npm redis-semaphore's Semaphore",
                "a permit's expiry is the acquiring client's clock (Date.now() scores the "
                "sorted set): a clock running ahead removes the others' permits as expired.",
                capacity=SEMAPHORE_PERMITS, modes=(SHARED,), max_permits=1, renews=True,
            ),
            "node-semaphore",
            "node",
            NODE_SEMAPHORE,
            _node,
            "node_modules/redis-semaphore/package.json",
        ),
        Bundled(
            _info(
                "rust-redlock",
                f"rust ({RUST_REDLOCK}): RedLock::lock on N standalone masters, one attempt",
                "003_ad4e3d3f63ce056d.txt (Redlock), as the redlock crate implements it",
                "its validity is ttl - drift - elapsed in usize: an acquire that outlasts the "
                "TTL wraps it to ~1.8e19 ms and hands over a lease already expired (hard).",
                topology="standalone",
                min_nodes=3,
            ),
            "rust-redlock",
            "rust",
            RUST_REDLOCK,
            _binary("rust-redlock-driver"),
            "rust-redlock-driver",
        ),
    )
}

INFOS: dict[str, LockInfo] = {name: b.info for name, b in BUNDLED_DRIVERS.items()}


def bundled(name: str) -> Callable[[LockContext], adapter.DriverLock]:
    spec = BUNDLED_DRIVERS[name]

    def make(ctx: LockContext) -> adapter.DriverLock:
        return adapter.start(ctx, spec.argv(), name)

    make.__name__ = name.replace("-", "_")
    return make


def capabilities(spec: str) -> frozenset[str] | None:
    """What the driver ``--lock spec`` names can do for a fault: a bundled one's declared
    capabilities, a user's as its ``describe`` answer says (none if it gives no answer);
    None when ``spec`` is not a driver (a Python lock, which can do all a fault may ask)."""
    if spec in BUNDLED_DRIVERS:
        return BUNDLED_DRIVERS[spec].capabilities
    if spec.startswith(EXEC):
        described = describe(spec[len(EXEC) :])
        return frozenset(described.capabilities if described else ())
    return None


jedis_setnx_expire = bundled("jedis-setnx-expire")
jedis_getset_timestamp = bundled("jedis-getset-timestamp")
jedis_del_release = bundled("jedis-del-release")
jedis_get_then_del = bundled("jedis-get-then-del")
jedis_lua = bundled("jedis-lua")
redisson = bundled("redisson")
redisson_lease = bundled("redisson-lease")
redsync = bundled("redsync")
node_redlock = bundled("node-redlock")
redisson_semaphore = bundled("redisson-semaphore")
redisson_permit_expirable_semaphore = bundled("redisson-permit-expirable-semaphore")
redisson_rwlock = bundled("redisson-rwlock")
redisson_fair = bundled("redisson-fair")
node_semaphore = bundled("node-semaphore")
rust_redlock = bundled("rust-redlock")

__all__ = [
    "BUILD_SCRIPT",
    "BUNDLED_DRIVERS",
    "EXEC",
    "INFOS",
    "Bundled",
    "build_dirs",
    "capabilities",
    "describe",
    "described_info",
    "exec_factory",
    "parse_exec",
]
