"""What a ``--lock`` value names, resolved once into a ``LockSpec``.

``--lock`` takes a bundled short name (``lua``, ``redlock``, … — ``lockchaos list``:
``BUNDLED``), ``module:attr`` naming a factory ``make(ctx: LockContext) -> LockClient``
(``module`` may also be a path to a ``.py`` file; docs/writing-a-lock-adapter.md), or
``exec:'CMD ARGS'``, a lock in any language run as a driver (``chaos.drivers``;
docs/driver-protocol.md).

``resolve`` is the one place such a string becomes a lock: it loads the factory and reads what
the lock declares — its ``LockInfo`` (what it grants, what it needs of the topology, whether it
extends or renews) and, for a driver, what it can do for a fault — and refuses, in one line
(``UsageError``), a string that names no usable lock. It sits above ``chaos.locks`` (the
contract and the bundled Python locks) and ``chaos.drivers`` (locks in other languages), which
know nothing of this registry; a campaign resolves its lock once (``Campaign.lock_spec``) and
hands the ``LockSpec`` down (``WorkloadConfig.lock``), and nothing below resolves the string
again. Whether the lock suits a run — its faults, ``--capacity``, the topology — the campaign
checks with what the spec says (``Campaign.validate``).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import cached_property
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any, Literal, Protocol, cast

import redis

from chaos.drivers import catalog as drivers
from chaos.errors import UsageError
from chaos.locks.contract import (
    CLIENT_CAPABILITIES,
    MODES,
    SHARED,
    LockClient,
    LockContext,
    LockFactory,
    LockInfo,
)
from chaos.locks.parts import check_ttl_step

BUNDLED: dict[str, str] = {
    "setnx-expire": "chaos.locks.setnx_expire:make",
    "getset-timestamp": "chaos.locks.getset_timestamp:make",
    "del-release": "chaos.locks.del_release:make",
    "get-then-del": "chaos.locks.get_then_del:make",
    "lua": "chaos.locks.lua:make",
    "lua-setnx-expire": "chaos.locks.lua_setnx_expire:make",
    "lua-extend": "chaos.locks.lua_extend:make",
    "reentrant": "chaos.locks.reentrant:make",
    "watchdog": "chaos.locks.watchdog:make",
    "redlock": "chaos.locks.redlock:make",
    "fenced": "chaos.locks.fenced:make",
    "redis-py": "chaos.locks.redis_py:make",
    "check-then-set": "chaos.locks.check_then_set:make",
    "lua-int-expire": "chaos.locks.lua_int_expire:make",
    "lua-ceil": "chaos.locks.lua_ceil:make",
    "thread-id": "chaos.locks.thread_id:make",
    "reentrant-local": "chaos.locks.reentrant_local:make",
    "reentrant-watchdog": "chaos.locks.reentrant_watchdog:make",
    "php-lock": "chaos.locks.php_lock:make",
    "lua-retry-sleep": "chaos.locks.lua_retry_sleep:make",
    "lua-retry-busy": "chaos.locks.lua_retry_busy:make",
    "lua-loaded-once": "chaos.locks.lua_loaded_once:make",  # its scripts by EVALSHA only
    "delifeq": "chaos.locks.delifeq:make",  # Valkey ≥ 9.0 only (its DELIFEQ, SET IFEQ)
    # Beyond the mutex: shared holds (LockInfo.capacity/modes), called acquire(mode=, permits=).
    "lua-semaphore": "chaos.locks.lua_semaphore:make",
    "rwlock": "chaos.locks.rwlock:make",
    # Redis in Action's counting semaphores, 6.3.1 → 6.3.2 → 6.3.4 (docs/semaphores.md).
    "book-semaphore": "chaos.locks.book_semaphore:make",
    "book-fair-semaphore": "chaos.locks.book_fair_semaphore:make",
    "book-semaphore-with-lock": "chaos.locks.book_semaphore_with_lock:make",
    # The corpus: third-party lock libraries, wrapped from their public APIs at the versions
    # their verdicts were read at (pip install 'lockchaos[corpus]'; LockInfo.extra).
    "sherlock": "chaos.locks.sherlock_redislock:make",
    "sherlock-no-expire": "chaos.locks.sherlock_no_expire:make",
    "pottery-redlock": "chaos.locks.pottery_redlock:make",
    "python-redis-lock": "chaos.locks.python_redis_lock:make",
    # Locks in other languages, run as drivers (chaos/drivers/catalog.py).
    "jedis-setnx-expire": "chaos.drivers.catalog:jedis_setnx_expire",
    "jedis-getset-timestamp": "chaos.drivers.catalog:jedis_getset_timestamp",
    "jedis-del-release": "chaos.drivers.catalog:jedis_del_release",
    "jedis-get-then-del": "chaos.drivers.catalog:jedis_get_then_del",
    "jedis-lua": "chaos.drivers.catalog:jedis_lua",
    "redisson": "chaos.drivers.catalog:redisson",
    "redisson-lease": "chaos.drivers.catalog:redisson_lease",
    "redisson-fenced": "chaos.drivers.catalog:redisson_fenced",
    "redsync": "chaos.drivers.catalog:redsync",
    "node-redlock": "chaos.drivers.catalog:node_redlock",
    "redisson-semaphore": "chaos.drivers.catalog:redisson_semaphore",
    "redisson-permit-expirable-semaphore": (
        "chaos.drivers.catalog:redisson_permit_expirable_semaphore"
    ),
    "redisson-rwlock": "chaos.drivers.catalog:redisson_rwlock",
    "redisson-fair": "chaos.drivers.catalog:redisson_fair",
    "node-semaphore": "chaos.drivers.catalog:node_semaphore",
    "rust-redlock": "chaos.drivers.catalog:rust_redlock",
    "bsm-redislock": "chaos.drivers.catalog:bsm_redislock",
    "node-redis-lock": "chaos.drivers.catalog:node_redis_lock",
    "sesame-redlock": "chaos.drivers.catalog:sesame_redlock",
}

# Where a lock comes from: bundled (a short name of ``BUNDLED``), a user's driver
# (``exec:'CMD'``) or a user's factory (``module:attr``).
Origin = Literal["bundled", "exec", "module"]

_HINT = "run `lockchaos list` for the bundled locks, or pass module:attr"


class ClientNeeds(Protocol):
    """What a fault asks of the lock client (``chaos.nemesis.Fault`` has these)."""

    @property
    def name(self) -> str: ...

    @property
    def client_needs(self) -> frozenset[str]: ...


@dataclass(frozen=True)
class LockSpec:
    """A ``--lock`` value resolved (``resolve``): where the lock comes from, what it declares
    (``info``: a bundled lock's catalog entry, a driver's ``describe`` answer, a user's
    factory's ``info`` — None when it declares nothing, a mutex with no needs) and what it
    can do for a fault (``capabilities``: a driver's; None for a Python lock, whose commands
    go through the harness's connections, so it can do all a fault may ask).

    Plain data but for its ``factory``, so it crosses to each client process: a forked one
    inherits the factory resolution loaded; one started afresh (``spawn``, to run under a
    faked clock) receives the spec without it (``__getstate__``) and loads it again from
    ``text`` at its first use — the import alone, not resolution's checks: the string was
    checked in the harness before any client started, and a client that cannot load it now
    records why in the history (``lock_unusable``) as for any lock that cannot start."""

    text: str  # as --lock gave it
    origin: Origin
    info: LockInfo | None
    capabilities: frozenset[str] | None

    @cached_property
    def factory(self) -> LockFactory:
        """``make(ctx) -> LockClient``."""
        return _load(self.text)

    def __getstate__(self) -> dict[str, Any]:
        return {key: value for key, value in self.__dict__.items() if key != "factory"}

    @property
    def renews(self) -> bool:
        """Whether it declares background renewals (a watchdog)."""
        return self.info is not None and self.info.renews

    @property
    def extend(self) -> bool | None:
        """Whether it has ``extend``, as it declares (a bundled lock's entry, a driver's
        ``describe``); None for a user's ``module:attr`` lock, whose declaration says only
        what it grants: a client of it is asked (``can_extend``)."""
        return None if self.info is None or self.origin == "module" else self.info.extend

    @property
    def needs_masters(self) -> bool:
        """Whether it wants independent masters (Redlock), not a replicated group."""
        return self.info is not None and self.info.topology == "standalone"

    @property
    def min_nodes(self) -> int:
        return self.info.min_nodes if self.info is not None else 1

    def create(self, ctx: LockContext) -> LockClient:
        """A client of this lock, checked (``check_client``). Redis errors from the factory
        propagate (they are faults, not mistakes); any other error means the lock is broken
        and becomes a one-line ``UsageError``."""
        try:
            client = self.factory(ctx)
        except (UsageError, redis.RedisError):
            raise
        except Exception as exc:
            raise UsageError(f"lock factory {self.text} failed: {type(exc).__name__}: {exc}") \
                from None
        return check_client(client, self.text)

    def check_faults(self, faults: Iterable[ClientNeeds]) -> None:
        """``UsageError`` up front, naming the fault and what it lacks, when this lock's client
        cannot do what one of ``faults`` needs from it (a driver that does not announce it)."""
        if self.capabilities is None:
            return
        for fault in faults:
            missing = sorted(fault.client_needs - self.capabilities)
            if missing:
                meaning = CLIENT_CAPABILITIES.get(missing[0])
                raise UsageError(
                    f"lock {self.text!r}: {fault.name} needs a driver with the {missing[0]!r} "
                    + (f"capability ({meaning})" if meaning else "capability")
                    + ", which this one does not announce (docs/driver-protocol.md)"
                )

    def check_topology(self, kind: str, nodes: int) -> None:
        """``UsageError`` if this lock cannot run on ``nodes`` masters of shape ``kind``, as
        its ``info`` says (one that declares no needs runs anywhere)."""
        if self.needs_masters and kind != "standalone":
            raise UsageError(
                f"lock {self.text!r} needs independent masters: use --topology standalone "
                f"--nodes {max(self.min_nodes, 5)}"
            )
        if nodes < self.min_nodes:
            raise UsageError(f"lock {self.text!r} needs at least {self.min_nodes} nodes "
                             f"(got {nodes})")

    @property
    def ttl_granularity_ms(self) -> int:
        """The TTLs it can express are multiples of this (1: any; whole seconds: 1000)."""
        return 1 if self.info is None else self.info.ttl_granularity_ms

    def check_ttl(self, ttl_ms: int) -> None:
        """``UsageError`` if this lock cannot express ``ttl_ms``: its ``info`` says its TTLs
        are multiples of ``ttl_granularity_ms`` (whole seconds: 1000). The checker holds a
        lease to the TTL the run asked for, not to one the lock rounded it to."""
        check_ttl_step(self.text, self.ttl_granularity_ms,
                       ttl_ms)


def resolve(text: str) -> LockSpec:
    """The lock ``--lock text`` names: its factory loaded, its declaration read (and checked:
    ``UsageError``, one line, for a user's that makes no sense), a driver's capabilities
    asked (a user's driver is started once per process to ``describe`` itself)."""
    factory = _load(text)
    origin: Origin
    if text.startswith(drivers.EXEC):
        origin, info = "exec", drivers.described_info(text)
    elif text in BUNDLED:
        origin, info = "bundled", bundled_info(text)
    else:
        declared = getattr(factory, "info", None)
        origin, info = "module", None if declared is None else _checked(text, declared)
    spec = LockSpec(text, origin, info, drivers.capabilities(text))
    spec.__dict__["factory"] = factory  # loaded already: ``factory`` need not load it again
    return spec


def catalog() -> list[LockInfo]:
    """Every bundled lock, in ``BUNDLED`` order, with its seed, flaw and needs."""
    return [bundled_info(name) for name in BUNDLED]


def bundled_info(name: str) -> LockInfo:
    """The catalog entry of bundled lock ``name`` (its module's ``INFO``, or its entry in
    the module's ``INFOS``)."""
    module = importlib.import_module(BUNDLED[name].partition(":")[0])
    info: LockInfo = module.INFOS[name] if hasattr(module, "INFOS") else module.INFO
    if info.name != name:
        raise RuntimeError(f"{module.__name__}.INFO names {info.name!r}, registered {name!r}")
    return info


def check_library(text: str, entry: LockInfo) -> None:
    """``UsageError`` (one line) when lock ``text`` wraps a library of an optional dependency
    group (``entry.extra``: the corpus) and that library is not installed at the version its
    entry pins: the lock would fail in every client, or be judged on code its verdict was not
    read from."""
    if entry.extra is None:
        return
    try:
        installed = metadata.version(entry.library)
    except metadata.PackageNotFoundError:
        found = "it is not installed"
    else:
        if installed == entry.version:
            return
        found = f"{installed} is installed"
    raise UsageError(f"lock {text!r} wraps {entry.library} {entry.version}, but {found}: "
                     f"pip install 'lockchaos[{entry.extra}]'")


def check_client(obj: object, factory: str = "the lock factory") -> LockClient:
    """``obj`` if it is usable as a ``LockClient``; else ``UsageError`` naming what is missing."""
    missing = [m for m in ("acquire", "release") if not callable(getattr(obj, m, None))]
    if missing:
        shown = repr(obj)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise UsageError(
            f"lock factory {factory} returned {shown} (a {type(obj).__name__}), which has no "
            + "/".join(f"{m}()" for m in missing)
        )
    if hasattr(obj, "extend") and not callable(obj.extend):
        raise UsageError(f"lock factory {factory} returned an object whose extend is not callable")
    return cast(LockClient, obj)


def can_extend(client: LockClient) -> bool:
    return callable(getattr(client, "extend", None))


def _load(text: str) -> LockFactory:
    """The factory ``text`` names; ``UsageError`` (one line) if there is none."""
    if text.startswith(drivers.EXEC):  # a driver in any language: docs/driver-protocol.md
        return cast(LockFactory, drivers.exec_factory(text[len(drivers.EXEC) :]))
    if text in drivers.BUNDLED_DRIVERS:  # a bundled driver: one line up front if it is not built
        drivers.BUNDLED_DRIVERS[text].argv()
    target = BUNDLED.get(text, text)
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"unknown lock {text!r}: {_HINT}")
    module = _import(text, module_name)
    if text in BUNDLED:
        check_library(text, bundled_info(text))
    obj: object = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise UsageError(
                f"lock {text!r}: {module.__name__!r} has no attribute {attr!r} ({_HINT})"
            ) from None
    if not callable(obj):
        raise UsageError(
            f"lock {text!r}: {module.__name__}.{attr} is a {type(obj).__name__}, not a "
            "callable factory make(ctx) -> LockClient"
        )
    return cast(LockFactory, obj)


def _import(text: str, module_name: str) -> ModuleType:
    if module_name.endswith(".py") or os.sep in module_name:
        return _import_file(text, Path(module_name))
    # Like `python -m`, let a user's module in the working directory be found.
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.append(os.getcwd())
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise UsageError(f"lock {text!r}: no module named {exc.name!r} ({_HINT})") from None
    except Exception as exc:
        raise UsageError(
            f"lock {text!r}: importing {module_name} failed: {type(exc).__name__}: {exc}"
        ) from None


def _import_file(text: str, path: Path) -> ModuleType:
    if not path.is_file():
        raise UsageError(f"lock {text!r}: no such file {str(path)!r} ({_HINT})")
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:8]
    name = f"lockchaos_user_{path.stem}_{digest}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise UsageError(f"lock {text!r}: cannot import {str(path)!r} as a Python module")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise UsageError(
            f"lock {text!r}: importing {path} failed: {type(exc).__name__}: {exc}"
        ) from None
    return module


def _checked(text: str, declared: object) -> LockInfo:
    """A user's declaration, named after its ``--lock``; ``UsageError`` (one line) if it does
    not make sense."""
    where = f"lock {text!r}: its factory's info"
    if not isinstance(declared, LockInfo):
        raise UsageError(f"{where} is a {type(declared).__name__}, not a LockInfo "
                         "(declare it with chaos.locks.contract.grants)")
    modes = declared.modes
    if not modes or len(set(modes)) < len(modes) or set(modes) - set(MODES):
        raise UsageError(f"{where} declares modes {list(modes)!r}: one or both of "
                         f"{', '.join(MODES)}, each once")
    for field in ("capacity", "max_permits", "min_nodes", "ttl_granularity_ms"):
        value = getattr(declared, field)
        if (value is not None or field in ("min_nodes", "ttl_granularity_ms")) and (
                type(value) is not int or value < 1):
            unbounded = ", or None (unbounded)" if field in ("capacity", "max_permits") else ""
            raise UsageError(f"{where} declares {field}={value!r}: a whole number >= 1"
                             + unbounded)
    if declared.topology not in ("any", "standalone"):
        raise UsageError(f"{where} declares topology={declared.topology!r}: 'any', or "
                         "'standalone' (independent masters, a Redlock)")
    if SHARED not in modes and declared.capacity != 1:
        raise UsageError(f"{where} declares capacity={declared.capacity!r} without shared "
                         "holds: a lock with exclusive holds only grants one at a time (1)")
    for flag in ("fair", "renews"):
        if not isinstance(getattr(declared, flag), bool):
            raise UsageError(f"{where} declares {flag}={getattr(declared, flag)!r}: True or "
                             "False")
    return replace(declared, name=text, target=text)
