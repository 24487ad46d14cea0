"""lockchaos driver kit for Python: write the lock, the kit speaks the driver protocol.

One file, the standard library only (redis-py is used when it is installed, and is needed only
by ``redis_client``/``node_clients``/``primary``), Python 3.8 or later, no lockchaos import: copy
it next to your driver (``lockchaos driver new --lang python DIR`` does) or put its folder on
``PYTHONPATH``. docs/driver-protocol.md is the protocol; this is what a driver is on top of it::

    import lockchaos_driver as kit

    class Lock:
        def __init__(self, hello: kit.Hello) -> None:
            self.redis = kit.primary(hello)             # this client's proxy; hooked, no retries
            self.key, self.ttl_ms = hello.lock_name, hello.ttl_ms

        def acquire(self, req: kit.Request) -> kit.Outcome:
            if self.redis.set(self.key, req.token, nx=True, px=self.ttl_ms):
                return kit.Granted(validity_ms=self.ttl_ms)
            return kit.Refused()

        def release(self, req: kit.Request, lease: kit.Lease) -> kit.Outcome: ...
        def extend(self, req: kit.Request, lease: kit.Lease) -> kit.Outcome: ...   # optional

    kit.serve(kit.Driver(name="my-lock", library="my-lock 1.2"), Lock)

What the kit does so the lock does not have to:

* framing, ``describe`` and ``hello``, a fresh token ``<client_id>:<16 hex>`` per acquire
  (``req.token``: store it as the lock's value where the library lets you choose it) and the map
  from each token to the library's lock object (``Granted(state=…)`` → ``lease.state``);
* bad input: a line that is not JSON, an unknown type, a request before ``hello``, an id that
  does not grow, a second request while one is open — one ``log`` line, and an ``error``
  reply (``definite: true``: nothing was done) when the line has an id. Nothing hangs;
* bounded waits: each request runs on the kit's lock thread, and one the library does not
  finish within 0.8 × the harness's bound (max(3 s, 4 × TTL)) is answered ``error``,
  ``definite: false``; time the process spent stopped (SIGSTOP) and time waiting for the
  harness's ``go`` do not count. A grant that comes back after that is released at once;
* exceptions: one raised after a command went out is ``definite: false``; a connection the
  kit's clients could not open before anything was written is ``definite: true``; anything
  that is not a Redis or socket error is a bug, ``definite: false``, its traceback on stderr;
* pause points: the kit's redis-py clients announce every command of the request that sent
  it (``before``, then wait for ``go``), never connection set-up (``SETUP_COMMANDS``); a
  command sent outside any request, or after its request was answered (a late callback, a
  renewal timer), goes out at once with an unasked ``sent`` line. A library with its own
  threads: ``carry(fn)`` runs ``fn`` under the current request. Another client library: call
  ``before(name)`` right before each command it sends;
* stdout holds only protocol lines (``print`` and logging go to stderr, which the harness keeps
  in the run directory), and the process exits the moment stdin closes.
"""

from __future__ import annotations

import json
import logging
import math
import os
import queue
import secrets
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Union

try:  # optional: only redis_client/node_clients/primary need it
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry
    from redis.sentinel import MasterNotFoundError, Sentinel, SentinelManagedConnection
except ImportError:  # pragma: no cover - the kit runs without redis-py
    redis = None  # type: ignore[assignment]

PROTOCOL = 1
EXTEND, PAUSE_POINTS, FAKED_CLOCK = "extend", "pause-points", "faked-clock"
# Connection set-up, never a pause point: the harness's own connections skip these too.
SETUP_COMMANDS = frozenset({"HELLO", "AUTH", "SELECT", "CLIENT", "PING", "READONLY", "INFO"})
BOUND_FLOOR_S = 3.0  # the harness answers each request within max(3 s, 4 × TTL) of running time
BOUND_SHARE = 0.8  # the kit answers within this share of it: the reply still arrives in time
_SLICE_S, _STALL_S = 0.05, 0.25  # a wait slice longer than _STALL_S: the process was stopped
GO_WAIT_S = 60.0  # the longest a command waits for its "go" (the harness answers each at once)

# -- what a lock returns ------------------------------------------------------------------------


@dataclass(frozen=True)
class Granted:
    """acquire: granted; extend: extended; release: released. ``validity_ms`` counts from when
    the request was sent (``Request.left_at_return`` converts a library's "validity left at
    its reply"; None: the TTL; zero or negative as the library computed it, never raised);
    ``state``: the library's lock object for this lease, handed back as ``lease.state`` (an
    extend that returns a new one replaces it)."""

    validity_ms: float | None = None
    fence: int | None = None
    state: Any = None


@dataclass(frozen=True)
class Refused:
    """A definite no: not granted, certainly not ours any more, not extended."""

    message: str | None = None


@dataclass(frozen=True)
class Failed:
    """``definite``: it certainly did not happen (nothing was sent); else it may have."""

    definite: bool
    message: str


@dataclass(frozen=True)
class Revoked:
    """extend only: not extended, and the library gave the lease up (it deleted the key, or
    told its caller the lock is lost). The lease is valid no more from the request on."""

    message: str | None = None


@dataclass(frozen=True)
class Invalidated:
    """extend only: the library invalidated the lease's lock object (an extend that consumes
    or replaces it): nothing more can be sent for it; its key stays until it expires. The kit
    answers the lease's later release and extend itself (``error``, ``definite: true``)."""

    definite: bool = True
    message: str | None = None


@dataclass(frozen=True)
class Kept:
    """release only: released, and the library keeps the key on purpose until
    ``validity_ms`` from the request (None: until the lease's deadline)."""

    validity_ms: float | None = None


# Union, not |: the kit runs on Pythons older than 3.10
Outcome = Union[Granted, Refused, Failed, Revoked, Invalidated, Kept]  # noqa: UP007
_ONLY = {Revoked: "extend", Invalidated: "extend", Kept: "release"}


class NotSent(Exception):
    """Raise it (or a subclass) from the lock when your own client failed before anything
    reached Redis (no connection): the kit answers ``definite: true``. The kit's redis-py
    clients tell that by themselves."""


class CannotRun(Exception):
    """Raised by the lock's constructor: this deployment cannot run it (``hello`` is answered
    ``ok: false`` with the message, one line: "needs at least 3 masters (got 1)")."""


# -- what the kit hands the lock ------------------------------------------------------------------


@dataclass(frozen=True)
class Driver:
    """What ``describe`` and ``hello`` say of the driver and its lock (docs/driver-protocol.md,
    *describe*). ``extend`` None: whether the lock class has an ``extend`` method.
    ``pause_points``: its commands go through the kit's clients, or it calls ``before``."""

    name: str
    library: str
    language: str = "python"
    extend: bool | None = None
    pause_points: bool = True
    topology: str = "any"  # "standalone": independent masters (a Redlock)
    min_nodes: int = 1  # the fewest it can run on: --topology auto starts enough
    capacity: int | None = 1
    modes: tuple[str, ...] = ("exclusive",)
    fair: bool = False
    max_permits: int | None = None
    ttl_granularity_ms: int = 1  # 1000: the library takes whole seconds
    renews: bool = False  # it renews its leases in the background (report them: renewed)


@dataclass(frozen=True)
class Hello:
    """The harness's ``hello``: every address is this client's own proxy (``route``: each
    address a Sentinel reports → this client's proxy for it)."""

    client_id: str
    lock_name: str
    ttl_ms: int
    nodes: list[tuple[str, int]]
    socket_timeout_ms: int
    password: str | None
    sentinels: list[tuple[str, int]]
    master_name: str | None
    route: dict[str, tuple[str, int]]
    capacity: int | None
    raw: dict[str, Any]

    @property
    def bound_s(self) -> float:
        """The harness's bound on each request, in seconds of running time."""
        return max(BOUND_FLOOR_S, 4 * self.ttl_ms / 1000)


@dataclass
class Request:
    """One acquire, release or extend. ``token``: a fresh one for an acquire, the lease's for
    the others. ``received_ns``: when the kit read it (CLOCK_MONOTONIC), which is when the
    harness's clock for its validity started, give or take the pipe."""

    id: int
    op: str
    token: str
    announce: bool
    received_ns: int
    mode: str | None = None
    permits: int | None = None
    answered: bool = False
    wrote: bool | None = None  # None: no kit connection used; False: none written yet
    waiting: int = 0  # announcements waiting for "go" (the harness's time, not counted)

    @staticmethod
    def left_at_return(left_ms: float, library_elapsed_ms: float) -> float:
        """The validity from the request of a lease the library says has ``left_ms`` left at
        its reply, ``library_elapsed_ms`` after it started (a Redlock's TTL minus the time it
        spent minus the drift): the library's own elapsed time is added back — it started
        after the request was sent — floored to the millisecond, never rounded up. Not a time
        measured here: a pause between the library's reading of its clock and ours would count
        as lease the lock never had. A library that says only what is left: claim ``left_ms``
        (the operation's time is lost, a pause never gained)."""
        return floor_ms(left_ms + library_elapsed_ms)


@dataclass
class Lease:
    """What the kit keeps of a granted lease: its token and the library's lock object."""

    token: str
    state: Any = None
    invalidated_by: int | None = None  # the extend that invalidated its lock object


def floor_ms(value: float) -> float:
    """A validity rounded down to the millisecond: a claim may lose a millisecond, never gain
    one (a library whose clock is truncated to ms, or that floors its PX)."""
    return float(math.floor(value))


GRANTED, REFUSED, UNKNOWN, NOT_SENT = "granted", "refused", "unknown", "not-sent"


def quorum(votes: list[str], needed: int) -> str:
    """A multi-node lock's decision from one vote per node (``GRANTED``, ``REFUSED``,
    ``UNKNOWN``: the command may have landed, ``NOT_SENT``: nothing reached it), for acquire,
    release and extend alike: ``GRANTED`` when the granted ones alone reach ``needed``,
    ``REFUSED`` when granted plus unknown cannot, else ``UNKNOWN`` (answer ``definite:
    false``). A library that cannot tell refused from error per node votes ``UNKNOWN``."""
    granted = votes.count(GRANTED)
    if granted >= needed:
        return GRANTED
    return REFUSED if granted + votes.count(UNKNOWN) < needed else UNKNOWN


# -- the wire -----------------------------------------------------------------------------------

_out = sys.stdout.buffer  # replaced by serve(): the protocol's own copy of fd 1
_write_lock = threading.Lock()
_log = logging.getLogger("lockchaos_driver")


def _write(message: dict[str, Any]) -> None:
    line = (json.dumps(message, separators=(",", ":")) + "\n").encode()
    with _write_lock:
        _out.write(line)
        _out.flush()


def log(message: str) -> None:
    """A line for the driver's log (the harness shows it when the driver breaks)."""
    _write({"type": "log", "message": message})


def now_ns() -> int:
    """CLOCK_MONOTONIC in ns: the history's clock (``renewed``'s ``sent_ns``)."""
    return time.monotonic_ns()


def renewed(token: str, sent_ns: int, validity_ms: float | None = None) -> None:
    """A background renewal of ``token`` sent at ``sent_ns`` (``now_ns()`` just before it went
    out) succeeded: valid ``validity_ms`` from then (None: the TTL; 0: it found the lease gone
    and the library gave it up). Report only renewals you saw succeed."""
    _write({"type": "renewed", "token": token, "validity_ms": validity_ms, "sent_ns": sent_ns})


# -- pause points -------------------------------------------------------------------------------

_local = threading.local()  # .request: the request the current thread works for
_gos: dict[int, deque[threading.Event]] = {}  # request id → its announcements awaiting "go"


def _current() -> Request | None:
    return getattr(_local, "request", None)


def before(command: str) -> None:
    """Call right before the library sends ``command`` (the kit's clients do it for you):
    for the current request's commands, while the harness asks, ``before`` and a wait for
    its ``go``; for one sent outside any request or after its request was answered, an
    unasked ``sent`` line at once. Connection set-up is skipped."""
    name = command.split(" ", 1)[0].upper()
    if name in SETUP_COMMANDS:
        return
    req = _current()
    if req is None or req.answered:
        _write({"type": "sent", "command": name})
        return
    if not req.announce:
        return
    go = threading.Event()
    with _write_lock:  # the line and its place in the queue together: "go"s come in order
        _gos.setdefault(req.id, deque()).append(go)
        req.waiting += 1
        _out.write((json.dumps({"type": "before", "id": req.id, "command": name}) + "\n").encode())
        _out.flush()
    try:
        # The harness answers every "before" it reads (after a pause point's stop, if one is
        # armed); the kit's own answer to the request, at its bound, releases this wait too.
        go.wait(timeout=GO_WAIT_S)
    finally:
        req.waiting -= 1


def _go(rid: int) -> bool:
    with _write_lock:
        waiting = _gos.get(rid)
        if not waiting:
            return False
        waiting.popleft().set()
        return True


def carry(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` to run on another thread (a library's pool) as part of the current request:
    its commands are announced for that request, or reported as ``sent`` once it is answered."""
    req = _current()

    def carried(*args: Any, **kwargs: Any) -> Any:
        _local.request = req
        try:
            return fn(*args, **kwargs)
        finally:
            _local.request = None

    return carried


# -- redis-py clients: hooked, no retries, no handshake of their own -----------------------------

if redis is not None:

    class AnnouncingConnection(redis.Connection):
        """Passes every command the lock sends by ``before``; set-up (``on_connect``) is not
        the lock's. Marks the request's ``wrote`` so an error can be told definite."""

        _setting_up = False

        def connect(self) -> None:
            req = _current()
            if req is not None and self._sock is None and req.wrote is None:
                req.wrote = False  # a connection of ours: nothing written yet
            super().connect()

        def on_connect(self) -> None:
            self._setting_up = True
            try:
                super().on_connect()
            finally:
                self._setting_up = False

        def send_command(self, *args: Any, **kwargs: Any) -> None:
            if not self._setting_up:
                before(_name(args))
            super().send_command(*args, **kwargs)

        def pack_commands(self, commands: Any) -> list[bytes]:
            if not self._setting_up:  # one write for the whole pipeline: announced before it
                for args in commands:
                    before(_name(args))
            packed: list[bytes] = super().pack_commands(commands)
            return packed

        def send_packed_command(self, command: Any, check_health: bool = True) -> None:
            req = _current()
            if req is not None and not self._setting_up:
                req.wrote = True  # from here on, an error may follow a command that landed
            super().send_packed_command(command, check_health)

    class _RoutedSentinel(Sentinel):
        def __init__(self, hello: Hello, **kwargs: Any) -> None:
            super().__init__(hello.sentinels, **kwargs)
            self.route = hello.route

        def discover_master(self, service_name: str) -> tuple[str, int]:
            host, port = super().discover_master(service_name)
            try:
                return self.route[f"{host}:{port}"]
            except KeyError:
                raise MasterNotFoundError(f"no proxy for the master {host}:{port}") from None

    class _SentinelAnnouncing(SentinelManagedConnection, AnnouncingConnection):
        pass


def _name(args: Any) -> str:
    first = args[0] if args else ""
    return (first.decode() if isinstance(first, bytes) else str(first)).split(" ", 1)[0]


def _options(hello: Hello) -> dict[str, Any]:
    timeout = hello.socket_timeout_ms / 1000
    return {"socket_timeout": timeout, "socket_connect_timeout": timeout,
            "password": hello.password, "decode_responses": True, "lib_name": None,
            "lib_version": None, "retry": Retry(NoBackoff(), 0), "retry_on_timeout": False}


def _need_redis() -> None:
    if redis is None:
        raise CannotRun("redis-py is not installed for this Python: pip install redis")


def redis_client(hello: Hello, node: int = 0) -> Any:
    """A redis-py client to ``hello``'s node ``node`` through this client's proxy: the kit's
    hooked connections, the hello's timeout, no retries (a retried SET NX whose reply was lost
    comes back "taken" although the lock is yours), no handshake of its own."""
    _need_redis()
    host, port = hello.nodes[node]
    pool = redis.ConnectionPool(connection_class=AnnouncingConnection, host=host, port=port,
                                **_options(hello))
    return redis.Redis(connection_pool=pool)


def node_clients(hello: Hello) -> list[Any]:
    """One client per node, in node order (a Redlock's masters)."""
    return [redis_client(hello, index) for index in range(len(hello.nodes))]


def primary(hello: Hello) -> Any:
    """Where a single-instance lock lives: the Sentinel master (found through the Sentinels,
    its address mapped through ``route``), else node 0."""
    _need_redis()
    if not hello.sentinels:
        return redis_client(hello)
    options = _options(hello)
    sentinel_options = {k: options[k] for k in ("socket_timeout", "socket_connect_timeout",
                                                 "decode_responses")}
    sentinel = _RoutedSentinel(hello, sentinel_kwargs=sentinel_options)
    return sentinel.master_for(hello.master_name, connection_class=_SentinelAnnouncing,
                               **options)


def _is_redis_error(exc: BaseException) -> bool:
    return redis is not None and isinstance(exc, redis.RedisError)


def _definite(exc: BaseException, req: Request) -> bool:
    """Whether the request certainly did not happen: a kit connection that failed before any
    command was written."""
    return isinstance(exc, NotSent) or (
        req.wrote is False and (isinstance(exc, OSError) or _is_redis_error(exc)))


def _hello(m: dict[str, Any]) -> Hello:
    def address(a: dict[str, Any]) -> tuple[str, int]:
        return str(a["host"]), int(a["port"])

    return Hello(
        client_id=str(m["client_id"]), lock_name=str(m["lock_name"]), ttl_ms=int(m["ttl_ms"]),
        nodes=[address(a) for a in m["nodes"]],
        socket_timeout_ms=int(m.get("socket_timeout_ms") or 500), password=m.get("password"),
        sentinels=[address(a) for a in m.get("sentinels", [])],
        master_name=m.get("master_name"),
        route={k: address(v) for k, v in (m.get("route") or {}).items()},
        capacity=m.get("capacity", 1), raw=m)


# -- serving ------------------------------------------------------------------------------------


class _LockThread(threading.Thread):
    """Runs the lock's methods, one request at a time. Retired (replaced by a fresh one) when
    a request overruns the kit's bound: it finishes that request late, then exits."""

    def __init__(self, server: _Server) -> None:
        super().__init__(name="lockchaos-lock", daemon=True)
        self.server = server
        self.requests: queue.Queue[Request] = queue.Queue()
        self.retired = False
        self.start()

    def run(self) -> None:
        while not self.retired:
            req = self.requests.get()
            _local.request = req
            try:
                outcome = self.server.call(req)
            finally:
                _local.request = None
            self.server.finish(req, outcome)


class _Server:
    def __init__(self, driver: Driver, new_lock: Callable[[Hello], Any]) -> None:
        self.driver = driver
        self.new_lock = new_lock
        self.lock: Any = None
        self.hello: Hello | None = None
        self.leases: dict[str, Lease] = {}
        self.last_id = 0
        self.open: Request | None = None  # the request not answered yet
        self.state = threading.Condition()
        self.thread: _LockThread | None = None

    # -- describe and hello --------------------------------------------------------------

    def capabilities(self) -> list[str]:
        extend = self.driver.extend
        if extend is None:
            extend = callable(getattr(self.new_lock, "extend", None))
        return ([EXTEND] if extend else []) + (
            [PAUSE_POINTS] if self.driver.pause_points else []) + [FAKED_CLOCK]

    def describe(self) -> dict[str, Any]:
        d = self.driver
        return {"type": "describe", "driver": d.name, "language": d.language,
                "library": d.library, "capabilities": self.capabilities(),
                "topology": d.topology, "min_nodes": d.min_nodes, "capacity": d.capacity,
                "modes": list(d.modes), "fair": d.fair, "max_permits": d.max_permits,
                "ttl_granularity_ms": d.ttl_granularity_ms, "renews": d.renews}

    def say_hello(self, m: dict[str, Any]) -> None:
        if self.hello is not None:
            log("a second hello: ignored")
            return
        try:
            hello = _hello(m)
        except (KeyError, TypeError, ValueError) as exc:
            why = f"a hello that is not the protocol: {type(exc).__name__}: {exc}"
            log(why)
            _write({"type": "hello", "ok": False, "message": why})
            return
        try:
            self.lock = self.new_lock(hello)
        except CannotRun as exc:
            _write({"type": "hello", "ok": False, "message": str(exc)})
            return
        except Exception as exc:
            traceback.print_exc()
            _write({"type": "hello", "ok": False, "message": f"{type(exc).__name__}: {exc}"})
            return
        self.hello = hello
        self.thread = _LockThread(self)
        threading.Thread(target=self.watch, name="lockchaos-bound", daemon=True).start()
        _write({"type": "hello", "ok": True, "driver": self.driver.name,
                "language": self.driver.language, "library": self.driver.library,
                "capabilities": self.capabilities()})

    # -- requests ------------------------------------------------------------------------

    def request(self, m: dict[str, Any], rid: Any) -> None:
        op = m["type"]
        why = self.refusal(m, op, rid)
        if why is not None:
            log(f"{op} #{rid}: {why}")
            _write({"type": "error", "id": rid, "definite": True, "message": why})
            return
        token = (f"{self.hello.client_id}:{secrets.token_hex(8)}" if op == "acquire"  # type: ignore[union-attr]
                 else str(m["token"]))
        req = Request(rid, op, token, bool(m.get("announce")), time.monotonic_ns(),
                      m.get("mode"), m.get("permits"))
        self.last_id = rid
        lease = self.leases.get(token)
        if op != "acquire" and lease is not None and lease.invalidated_by is not None:
            self.answer(req, Failed(True, f"not sent: the library invalidated this lease's "
                                          f"lock object (extend #{lease.invalidated_by})"))
            return
        with self.state:
            self.open = req
            self.state.notify_all()
        self.thread.requests.put(req)  # type: ignore[union-attr]

    def refusal(self, m: dict[str, Any], op: str, rid: Any) -> str | None:
        """Why the kit answers this request itself, or None to hand it to the lock."""
        if self.hello is None:
            return f"{op} before hello"
        if not isinstance(rid, int) or isinstance(rid, bool) or rid <= self.last_id:
            return f"request id {rid!r} does not grow (the last was {self.last_id})"
        if self.open is not None:
            return f"{op} while #{self.open.id} is not answered: one request at a time"
        if op != "acquire" and not isinstance(m.get("token"), str):
            return f"{op} without a token"
        if op != "acquire" and m["token"] not in self.leases:
            return f"not sent: no lease {m['token']!r} was granted here"
        if not callable(getattr(self.lock, op, None)):
            return f"this driver has no {op}"
        return None

    def call(self, req: Request) -> Outcome:
        """The lock's answer to ``req``, on the lock thread; exceptions become ``Failed``."""
        lock = self.lock
        try:
            if req.op == "acquire":
                shape = {} if req.mode is None else {"mode": req.mode, "permits": req.permits}
                outcome = lock.acquire(req, **shape)
            else:
                outcome = getattr(lock, req.op)(req, self.leases[req.token])
        except Exception as exc:
            if not isinstance(exc, (OSError, NotSent)) and not _is_redis_error(exc):
                traceback.print_exc()  # a bug in the lock: its traceback is on stderr
            return Failed(_definite(exc, req), f"{type(exc).__name__}: {exc}")
        if not isinstance(outcome, (Granted, Refused, Failed, Revoked, Invalidated, Kept)):
            return Failed(False, f"the lock's {req.op} returned {outcome!r}, not an outcome")
        only = _ONLY.get(type(outcome))
        if only is not None and only != req.op:
            return Failed(False, f"the lock's {req.op} returned {type(outcome).__name__}, "
                                 f"which answers {only} only")
        return outcome

    def finish(self, req: Request, outcome: Outcome) -> None:
        """The lock returned: answer, or — the kit answered already — clean up after it."""
        with self.state:
            late = req.answered
            if not late:
                self.answer(req, outcome)
        if late:
            self.late(req, outcome)

    def answer(self, req: Request, outcome: Outcome) -> None:
        """Write ``req``'s one reply and keep the token map (called once per request)."""
        req.answered = True
        with _write_lock:
            for go in _gos.pop(req.id, ()):
                go.set()  # an announcement the harness will never answer now
        if self.open is req:
            self.open = None
        reply: dict[str, Any] = {"id": req.id}
        if isinstance(outcome, Granted):
            reply.update(type="ok", validity_ms=outcome.validity_ms, fence=outcome.fence)
            if req.op == "acquire":
                reply["token"] = req.token
                self.leases[req.token] = Lease(req.token, outcome.state)
            elif req.op == "extend" and outcome.state is not None:
                self.leases[req.token].state = outcome.state
        elif isinstance(outcome, Refused):
            reply.update(type="refused", message=outcome.message)
        elif isinstance(outcome, Failed):
            reply.update(type="error", definite=outcome.definite, message=outcome.message)
        elif isinstance(outcome, Revoked):
            reply.update(type="revoked", message=outcome.message)
        elif isinstance(outcome, Invalidated):
            reply.update(type="invalidated", definite=outcome.definite, message=outcome.message)
            self.leases[req.token].invalidated_by = req.id
        else:
            reply.update(type="kept", validity_ms=outcome.validity_ms)
        if req.op == "release" or isinstance(outcome, Revoked):
            self.leases.pop(req.token, None)  # nothing will be asked of it again
        _write({k: v for k, v in reply.items() if v is not None})

    def late(self, req: Request, outcome: Outcome) -> None:
        """A request the kit answered at its bound came back: a grant nobody asked for any
        more is released at once (its commands go out as ``sent``)."""
        if req.op != "acquire" or not isinstance(outcome, Granted):
            return
        log(f"acquire #{req.id} was granted after the kit answered it: releasing it")
        _local.request = req
        try:
            self.lock.release(req, Lease(req.token, outcome.state))
        except Exception as exc:
            log(f"releasing the late grant of acquire #{req.id} failed: {exc}")
        finally:
            _local.request = None

    def watch(self) -> None:
        """Answer the open request at the kit's bound, counting only time the process ran and
        the library had the request (not time waiting for the harness's "go")."""
        assert self.hello is not None
        budget = BOUND_SHARE * self.hello.bound_s
        while True:
            with self.state:
                while self.open is None:
                    self.state.wait()
                req = self.open
            counted, last = 0.0, time.monotonic()
            while not req.answered and counted < budget:
                time.sleep(_SLICE_S)
                t = time.monotonic()
                step, last = t - last, t
                if req.waiting == 0:
                    counted += step if step < _STALL_S else _SLICE_S
            with self.state:
                if req.answered:
                    continue
                self.answer(req, Failed(False, f"the library did not return within "
                                               f"{budget:.1f} s (the kit's bound)"))
                self.thread.retired = True  # type: ignore[union-attr]
                self.thread = _LockThread(self)  # the next request need not wait for it


def serve(driver: Driver, new_lock: Callable[[Hello], Any]) -> None:
    """Run the driver: read the harness's lines until stdin closes, then exit at once.
    ``new_lock(hello)`` builds the lock (raise ``CannotRun`` if this deployment cannot run
    it); its ``acquire(req)``, ``release(req, lease)`` and ``extend(req, lease)`` return an
    outcome. A lock that is not a mutex is called ``acquire(req, mode=…, permits=…)``."""
    global _out
    _out = os.fdopen(os.dup(1), "wb")  # the protocol's own stdout ...
    os.dup2(2, 1)  # ... and everything else printed goes to stderr
    sys.stdout = sys.stderr
    if not logging.getLogger().handlers:
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    server = _Server(driver, new_lock)
    for raw in sys.stdin.buffer:
        _handle(server, raw)
    with _write_lock:
        _out.flush()
    os._exit(0)  # stdin closed: the client stopped (a library thread may still be busy)


def _handle(server: _Server, raw: bytes) -> None:
    shown = raw.decode(errors="replace").strip()[:80]
    if not shown:
        return
    try:
        m = json.loads(raw)
    except ValueError:
        log(f"a line that is not JSON: {shown!r}")
        return
    if not isinstance(m, dict):
        log(f"a line that is not a JSON object: {shown!r}")
        return
    kind, rid = m.get("type"), m.get("id")
    try:
        if kind == "describe":
            _write(server.describe())
        elif kind == "hello":
            server.say_hello(m)
        elif kind in ("acquire", "release", "extend"):
            server.request(m, rid)
        elif kind == "go":
            if not isinstance(rid, int) or not _go(rid):
                log(f"go #{rid}: no command is waiting for it")
        else:
            raise ValueError(f"unknown type {kind!r}")
    except (KeyError, TypeError, ValueError) as exc:
        why = f"a line that is not the protocol ({type(exc).__name__}: {exc}): {shown!r}"
        log(why)
        if isinstance(rid, int) and kind != "go":
            _write({"type": "error", "id": rid, "definite": True, "message": why})
