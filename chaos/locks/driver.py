"""Locks written in any language: the driver protocol's harness side.

A *driver* is a program that speaks newline-delimited JSON on its stdin/stdout
(docs/driver-protocol.md, docs/driver-protocol.schema.json). ``DriverLock`` is an ordinary
lock client (``chaos.locks.contract``): the factory starts the driver once per client process,
as a child of the worker and in the worker's process group — so ``client-pause`` freezes the
driver's threads too (a real stop-the-world pause for a JVM) and ``client-crash`` kills it —
sends ``hello`` with this client's addresses, and turns every reply into what the contract
asks for:

* ``ok`` → a ``Lease`` (``release``: True), ``refused`` → None (``release``: False);
* ``error`` with ``definite: true`` → the same as ``refused`` (it certainly did not happen);
* ``error`` with ``definite: false`` → ``DriverError``: the harness records an indeterminate
  outcome, exactly as for a Python lock that raises;
* an unsolicited ``renewed`` line → ``ctx.report_renewal`` (a watchdog's renewal).

Every wait is bounded (counting only time the client process was running: a SIGSTOPped
client's driver cannot answer). A driver that dies, hangs or writes garbage makes the
operation raise with one line saying so (and its last stderr line); ops on a dead driver keep
raising (slowly: no hot loop).

Known flaw: none of its own — a driver is exactly as safe as the lock it runs; each bundled
driver's flaw is in its catalog entry (``lockchaos list``).

``--lock exec:'CMD ARGS'`` runs a user's driver; the bundled drivers (Jedis, Redisson,
redsync, node-redlock; built by ``scripts/drivers-setup.sh`` into ``.cache/drivers/``) are
registered as ordinary short names.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shlex
import shutil
import signal
import subprocess
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import redis

from chaos.errors import UsageError
from chaos.history import now
from chaos.locks.contract import Indeterminate, Lease, LockContext, LockInfo

PROTOCOL = 1
HELLO_TIMEOUT_S = 30.0  # a JVM starting next to four others on two busy cores
OP_TIMEOUT_FLOOR_S = 3.0
DEAD_DRIVER_BACKOFF_S = 0.05
CAP_EXTEND = "extend"
CAP_PAUSE_POINTS = "pause-points"
_STALL_S = 0.25  # a wait slice longer than this means the process was stopped: not counted
_SETPRIV = shutil.which("setpriv")


class DriverError(Indeterminate):
    """An operation whose outcome the driver could not decide (``definite: false``)."""


class DriverBroken(Exception):
    """The driver died, hung or wrote something that is not the protocol: a bug in the driver
    (recorded like any other exception of a lock: an indeterminate outcome, one clear line)."""


# -- addresses: what the hello tells the driver --------------------------------------------


def _address(client: redis.Redis) -> dict[str, Any]:
    kwargs = client.connection_pool.connection_kwargs
    return {"host": kwargs.get("host", "127.0.0.1"), "port": int(kwargs.get("port", 6379))}


def hello_message(ctx: LockContext) -> dict[str, Any]:
    """The ``hello`` for ``ctx``: every node through this client's proxies, and with Sentinel
    the Sentinels, the master name and the route from reported addresses to our proxies."""
    first = ctx.nodes[0].connection_pool.connection_kwargs if ctx.nodes else {}
    timeout = first.get("socket_timeout") or 0.5
    message: dict[str, Any] = {
        "type": "hello",
        "protocol": PROTOCOL,
        "client_id": ctx.client_id,
        "lock_name": ctx.lock_name,
        "ttl_ms": ctx.ttl_ms,
        "nodes": [_address(node) for node in ctx.nodes],
        "socket_timeout_ms": round(float(timeout) * 1000),
        "password": first.get("password"),
        "sentinels": [],
        "master_name": None,
        "route": {},
    }
    if ctx.master is not None:
        pool = ctx.master.connection_pool
        manager = getattr(pool, "sentinel_manager", None)
        sentinels = getattr(manager, "sentinels", [])
        message["sentinels"] = [_address(s) for s in sentinels]
        message["master_name"] = getattr(pool, "service_name", None)
        route = getattr(manager, "route", {})
        message["route"] = {k: {"host": h, "port": p} for k, (h, p) in route.items()}
    return message


# -- the driver process ----------------------------------------------------------------------


def _die_with_worker() -> None:
    # Runs in the child between fork and exec: it dies with the worker (even a SIGKILLed one).
    from chaos.topology.processes import die_with_parent

    die_with_parent(signal.SIGKILL)


def clock_env(argv: list[str], env: dict[str, str]) -> dict[str, str]:
    """The driver's environment. A client under libfaketime (the ``client-clock`` fault,
    chaos/workload/clocks.py) passes it on, so the driver's wall clock moves with its
    client's. One exception: a JVM under ``FAKETIME_DONT_FAKE_MONOTONIC=1`` takes ~3 s to
    start and ~60 ms per lock operation (libfaketime 0.9.10 fails its monotonic timed waits,
    which the JVM retries), so a JVM's monotonic clock is faked too: ``nanoTime`` jumps with
    the wall clock, which nothing the harness records depends on (the history's clock is the
    worker's)."""
    if "faketime" in env.get("LD_PRELOAD", "") and Path(argv[0]).name == "java":
        env = {k: v for k, v in env.items() if k != "FAKETIME_DONT_FAKE_MONOTONIC"}
    return env


class DriverProcess:
    """One running driver: its pipes, a reader thread, the last lines of its stderr."""

    def __init__(self, argv: list[str], *, label: str, env: dict[str, str] | None = None) -> None:
        self.label = label
        self.argv = argv
        # setpriv sets the parent-death signal and execs (so Python can vfork, no preexec_fn in
        # a threaded process); without it, a preexec_fn does the same prctl.
        prefix = [_SETPRIV, "--pdeathsig", "KILL", "--"] if _SETPRIV else []
        full_env = clock_env(argv, {**os.environ, **(env or {})})
        try:
            self.process = subprocess.Popen(
                [*prefix, *argv],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=full_env,
                preexec_fn=None if _SETPRIV else _die_with_worker,
                close_fds=True,
            )
        except OSError as exc:
            raise UsageError(f"driver {label}: cannot start {shlex.join(argv)}: {exc}") from None
        assert self.process.stdin and self.process.stdout and self.process.stderr
        self._stdin: IO[bytes] = self.process.stdin
        self.replies: queue.Queue[dict[str, Any]] = queue.Queue()
        self.stderr_tail: deque[str] = deque(maxlen=20)
        self.broken: str | None = None  # why the driver cannot be used any more
        self.on_renewed: Callable[[dict[str, Any], int], None] = lambda message, at: None
        self._write_lock = threading.Lock()
        self._reader = threading.Thread(
            target=self._read, args=(self.process.stdout,), name="driver-out", daemon=True
        )
        self._err = threading.Thread(
            target=self._read_err, args=(self.process.stderr,), name="driver-err", daemon=True
        )
        self._reader.start()
        self._err.start()

    def _read(self, stream: IO[bytes]) -> None:
        for raw in stream:  # ends at EOF (the driver exited or closed stdout)
            received = now()
            line = raw.decode(errors="replace").strip()
            if not line:
                continue
            try:
                message = json.loads(line)
                if not isinstance(message, dict):
                    raise ValueError("not a JSON object")
            except ValueError:
                shown = line if len(line) <= 80 else line[:77] + "..."
                self._break(f"wrote a line that is not a JSON object: {shown!r}")
                return
            if message.get("type") == "renewed":
                self.on_renewed(message, received)
            elif message.get("type") == "log":
                self.stderr_tail.append(str(message.get("message", "")))
            else:
                self.replies.put(message)
        code = self.process.wait()
        self._break(f"exited with status {code}")

    def _read_err(self, stream: IO[bytes]) -> None:
        log_dir = os.environ.get("LOCKCHAOS_DRIVER_LOG_DIR")  # keep every driver's stderr
        log = None
        if log_dir:
            name = "".join(c if c.isalnum() or c in "-_." else "_" for c in self.label)[:40]
            with contextlib.suppress(OSError):
                log = open(Path(log_dir) / f"{name}-{self.process.pid}.log", "a")  # noqa: SIM115
        for raw in stream:
            line = raw.decode(errors="replace").rstrip()
            if line:
                self.stderr_tail.append(line)
                if log is not None:
                    log.write(line + "\n")
                    log.flush()
        if log is not None:
            log.close()

    def _break(self, why: str) -> None:
        if self.broken is None:
            self.broken = why
        self.replies.put({"type": "__broken__"})

    def describe_failure(self) -> str:
        why = f"driver {self.label} {self.broken or 'failed'}"
        lines = [line.strip() for line in self.stderr_tail if line.strip()]
        # The line that names the error (a stack trace ends with a runtime's banner), else
        # the last one.
        errors = [line for line in lines if "error" in line.lower() or "exception" in line.lower()]
        last = errors[-1] if errors else (lines[-1] if lines else None)
        return f"{why} (stderr: {last[:160]})" if last else why

    def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        with self._write_lock:
            try:
                self._stdin.write(data)
                self._stdin.flush()
            except (BrokenPipeError, ValueError, OSError):
                self._break(f"exited with status {self.process.poll()}")
                raise DriverBroken(self.describe_failure()) from None

    def receive(self, timeout_s: float) -> dict[str, Any] | None:
        """The next reply, or None after ``timeout_s`` of *running* time (time the process
        spent stopped by SIGSTOP does not count: the driver was frozen too)."""
        counted, last = 0.0, time.monotonic()
        for _ in range(int(timeout_s / 0.05) * 4 + 40):  # bounded: stalls are not counted
            try:
                return self.replies.get(timeout=0.05)
            except queue.Empty:
                pass
            t = time.monotonic()
            step, last = t - last, t
            counted += step if step < _STALL_S else 0.05
            if counted >= timeout_s:
                return None
        return None

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._stdin.close()
        try:
            self.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            self.process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=2.0)


# -- the lock client -----------------------------------------------------------------------


@dataclass
class DriverLock:
    """A ``LockClient`` backed by a driver process (see the module docstring)."""

    ctx: LockContext
    argv: list[str]
    label: str
    env: dict[str, str] = field(default_factory=dict)
    hello_timeout_s: float = HELLO_TIMEOUT_S

    def __post_init__(self) -> None:
        self.driver = DriverProcess(self.argv, label=self.label, env=self.env)
        self.driver.on_renewed = self._renewed
        weakref.finalize(self, self.driver.close)  # a lock dropped without close() stops it
        self._next_id = 0
        self.op_timeout_s = max(OP_TIMEOUT_FLOOR_S, 4 * self.ctx.ttl_ms / 1000)
        try:
            self.info = self._hello()
        except BaseException:
            self.driver.close()
            raise
        self.capabilities: set[str] = set(self.info.get("capabilities") or [])

    def _hello(self) -> dict[str, Any]:
        try:
            self.driver.send(hello_message(self.ctx))
        except DriverBroken as exc:
            raise UsageError(str(exc)) from None
        reply = self.driver.receive(self.hello_timeout_s)
        if reply is None:
            self.driver.close()
            raise UsageError(
                f"driver {self.label} did not answer hello within {self.hello_timeout_s:.0f} s"
            )
        if reply.get("type") == "__broken__":
            raise UsageError(self.driver.describe_failure())
        if reply.get("type") != "hello" or reply.get("ok") is False:
            why = reply.get("message") or f"answered hello with {json.dumps(reply)[:120]}"
            raise UsageError(f"driver {self.label} refused to start: {why}")
        return reply

    # -- requests ---------------------------------------------------------------------------

    def _request(self, op: str, **fields: Any) -> dict[str, Any]:
        from chaos.workload.inject import injector

        if self.driver.broken is not None:
            time.sleep(DEAD_DRIVER_BACKOFF_S)
            raise DriverBroken(self.driver.describe_failure())
        self._next_id += 1
        rid = self._next_id
        message: dict[str, Any] = {"type": op, "id": rid, **fields}
        announce = CAP_PAUSE_POINTS in self.capabilities and bool(injector.armed)
        if announce:
            message["announce"] = True
        self.driver.send(message)
        deadline_s = self.op_timeout_s
        for _ in range(1000):  # bounded: one reply plus at most a few hundred announcements
            reply = self.driver.receive(deadline_s)
            if reply is None:
                raise DriverBroken(
                    f"driver {self.label} did not answer {op} #{rid} within {deadline_s:.1f} s"
                )
            kind = reply.get("type")
            if kind == "__broken__":
                raise DriverBroken(self.driver.describe_failure())
            if reply.get("id") != rid:
                continue  # a late answer to a request we already gave up on
            if kind == "before":
                injector.before_command(str(reply.get("command", "")).upper())
                self.driver.send({"type": "go", "id": rid})
                continue
            if kind in ("ok", "refused", "error"):
                return reply
            self.driver._break(f"answered {op} with unknown type {kind!r}")
            raise DriverBroken(self.driver.describe_failure())
        raise DriverBroken(f"driver {self.label} announced too many commands during {op}")

    def _lease(self, reply: dict[str, Any], fallback_token: str | None = None) -> Lease:
        token = reply.get("token") or fallback_token
        if not isinstance(token, str) or not token:
            raise DriverBroken(f"driver {self.label} answered ok without a token")
        validity = reply.get("validity_ms")
        fence = reply.get("fence")
        return Lease(
            token=token,
            validity_ms=float(validity) if validity is not None else None,
            fence=int(fence) if fence is not None else None,
        )

    @staticmethod
    def _definite(reply: dict[str, Any]) -> bool:
        """True for ``refused`` and a definite ``error``; raises for an indeterminate one."""
        if reply["type"] == "refused":
            return True
        if reply["type"] == "error" and reply.get("definite") is True:
            return True
        raise DriverError(str(reply.get("message") or "indeterminate error"))

    def acquire(self) -> Lease | None:
        reply = self._request("acquire")
        if reply["type"] == "ok":
            return self._lease(reply)
        self._definite(reply)
        return None

    def release(self, lease: Lease) -> bool:
        reply = self._request("release", token=lease.token)
        if reply["type"] == "ok":
            return True
        self._definite(reply)
        return False

    def _renewed(self, message: dict[str, Any], received_ns: int) -> None:
        token = message.get("token")
        if not isinstance(token, str):
            return
        age_ms = float(message.get("age_ms") or 0.0)
        validity = message.get("validity_ms")
        self.ctx.report_renewal(
            Lease(token=token),
            float(validity) if validity is not None else None,
            received_ns - int(age_ms * 1e6),
        )

    def close(self) -> None:
        self.driver.close()

    def __repr__(self) -> str:
        return f"DriverLock({self.label!r}, client={self.ctx.client_id!r})"


class ExtendableDriverLock(DriverLock):
    """A driver that announced the ``extend`` capability."""

    def extend(self, lease: Lease) -> Lease | None:
        reply = self._request("extend", token=lease.token)
        if reply["type"] == "ok":
            return self._lease(reply, lease.token)
        self._definite(reply)
        return None


def start(ctx: LockContext, argv: list[str], label: str) -> DriverLock:
    """Start the driver and say hello; an ``ExtendableDriverLock`` if it can extend."""
    lock = DriverLock(ctx, argv, label)
    if CAP_EXTEND in lock.capabilities:
        lock.__class__ = ExtendableDriverLock
    return lock


# -- exec: and the bundled drivers -------------------------------------------------------------


def parse_exec(command: str) -> list[str]:
    """``exec:'CMD ARGS'`` → argv; ``UsageError`` (one line) if it cannot be run."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"lock 'exec:{command}': cannot parse the command: {exc}") from None
    if not argv:
        raise UsageError("lock 'exec:': give the driver's command, e.g. exec:'python3 driver.py'")
    program = argv[0]
    if os.sep in program:
        if not os.access(program, os.X_OK):
            raise UsageError(f"lock 'exec:{command}': {program} is not an executable file")
    elif shutil.which(program) is None:
        raise UsageError(f"lock 'exec:{command}': {program!r} is not on PATH")
    return argv


def exec_factory(command: str) -> Callable[[LockContext], DriverLock]:
    argv = parse_exec(command)

    def make(ctx: LockContext) -> DriverLock:
        return start(ctx, argv, f"exec:{command}")

    return make


def drivers_dir() -> Path:
    """Where ``scripts/drivers-setup.sh`` builds the drivers (``LOCKCHAOS_DRIVERS_DIR``)."""
    override = os.environ.get("LOCKCHAOS_DRIVERS_DIR")
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[2] / ".cache" / "drivers"


JVM_FLAGS = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k", "-Xmx128m",
             "-XX:-UsePerfData", "-Xshare:auto"]  # fmt: skip


@dataclass(frozen=True)
class Bundled:
    """A bundled driver: where its build lives and how to start it."""

    info: LockInfo
    build: str  # the directory under .cache/drivers/
    language: str
    library: str
    launcher: Callable[[Path], list[str]]
    ready: str  # a file inside the build directory that exists once it is built

    def argv(self) -> list[str]:
        root = drivers_dir() / self.build
        if not (root / self.ready).exists():
            raise UsageError(
                f"lock {self.info.name!r}: its {self.language} driver is not built "
                f"(no {root / self.ready}): run scripts/drivers-setup.sh"
            )
        return self.launcher(root)


def _java(main: str, *args: str) -> Callable[[Path], list[str]]:
    def argv(root: Path) -> list[str]:
        java = os.environ.get("LOCKCHAOS_JAVA") or shutil.which("java") or "java"
        cp = f"{root / 'classes'}:{root / 'lib'}/*"
        return [java, *JVM_FLAGS, "-cp", cp, main, *args]

    return argv


def _go(root: Path) -> list[str]:
    return [str(root / "redsync-driver")]


def _node(root: Path) -> list[str]:
    node = os.environ.get("LOCKCHAOS_NODE") or shutil.which("node") or "node"
    return [node, str(root / "driver.js")]


def _info(name: str, summary: str, seed: str, flaw: str, **flags: Any) -> LockInfo:
    return LockInfo(
        name=name,
        target=f"chaos.locks.driver:{name.replace('-', '_')}",
        summary=summary,
        seed=seed,
        flaw=flaw,
        **flags,
    )


JEDIS = "Jedis 8.0.2"
REDISSON = "Redisson 3.45.1"
REDSYNC = "go-redsync v4.13.0 + go-redis v9"
NODE_REDLOCK = "redlock 5.0.0-beta.2 + ioredis 5"
_SEED_004 = "004_8e2bee48344fb8f7.txt"


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
            _go,
            "redsync-driver",
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
    )
}

INFOS: dict[str, LockInfo] = {name: b.info for name, b in BUNDLED_DRIVERS.items()}


def bundled(name: str) -> Callable[[LockContext], DriverLock]:
    spec = BUNDLED_DRIVERS[name]

    def make(ctx: LockContext) -> DriverLock:
        return start(ctx, spec.argv(), name)

    make.__name__ = name.replace("-", "_")
    return make


def check_capabilities(spec: str, faults: list[str]) -> None:
    """``UsageError`` up front when a fault needs a capability the driver lacks (today:
    ``client-pause-at`` needs ``pause-points``). Bundled drivers all have it; an ``exec:``
    driver is asked with a ``describe`` request."""
    if "client-pause-at" not in faults:
        return
    if spec in BUNDLED_DRIVERS:
        return
    if not spec.startswith("exec:"):
        return
    caps = describe(spec[len("exec:") :]).get("capabilities") or []
    if CAP_PAUSE_POINTS not in caps:
        raise UsageError(
            f"lock {spec!r}: client-pause-at needs a driver with the 'pause-points' capability "
            "(docs/driver-protocol.md); this one does not announce it"
        )


def describe(command: str, timeout_s: float = HELLO_TIMEOUT_S) -> dict[str, Any]:
    """Start the driver, send ``describe``, return its answer (it exits at end of input)."""
    driver = DriverProcess(parse_exec(command), label=f"exec:{command}")
    try:
        driver.send({"type": "describe", "protocol": PROTOCOL})
        reply = driver.receive(timeout_s)
    finally:
        driver.close()
    if reply is None or reply.get("type") != "describe":
        return {}
    return reply


jedis_setnx_expire = bundled("jedis-setnx-expire")
jedis_getset_timestamp = bundled("jedis-getset-timestamp")
jedis_del_release = bundled("jedis-del-release")
jedis_get_then_del = bundled("jedis-get-then-del")
jedis_lua = bundled("jedis-lua")
redisson = bundled("redisson")
redisson_lease = bundled("redisson-lease")
redsync = bundled("redsync")
node_redlock = bundled("node-redlock")

__all__ = [
    "BUNDLED_DRIVERS",
    "INFOS",
    "DriverBroken",
    "DriverError",
    "DriverLock",
    "ExtendableDriverLock",
    "check_capabilities",
    "describe",
    "exec_factory",
    "hello_message",
]
