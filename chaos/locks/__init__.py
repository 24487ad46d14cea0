"""Locks under test: the plugin contract, the bundled lock zoo, and how ``--lock`` is loaded.

``--lock`` takes a bundled short name (``lua``, ``redlock``, … — ``lockchaos list``),
``module:attr`` naming a factory ``make(ctx: LockContext) -> LockClient`` (``module`` may also
be a path to a ``.py`` file), or ``exec:'CMD ARGS'``, a lock in any language run as a driver
(``chaos.drivers``). The contract lives in ``chaos.locks.contract`` and is documented in
``docs/writing-a-lock-adapter.md``.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Protocol, cast

import redis

# The module, not its names: chaos.drivers.catalog imports chaos.locks.contract, so whichever of
# the two packages is imported first, the other finds this one partly loaded; its names are
# looked up when a lock is loaded.
from chaos.drivers import catalog as drivers
from chaos.errors import UsageError
from chaos.locks.context import build_context
from chaos.locks.contract import (
    CLIENT_CAPABILITIES,
    MODES,
    SHARED,
    ExtendableLockClient,
    Lease,
    LockClient,
    LockContext,
    LockFactory,
    LockInfo,
)

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
    # Locks in other languages, run as drivers (chaos/drivers/catalog.py).
    "jedis-setnx-expire": "chaos.drivers.catalog:jedis_setnx_expire",
    "jedis-getset-timestamp": "chaos.drivers.catalog:jedis_getset_timestamp",
    "jedis-del-release": "chaos.drivers.catalog:jedis_del_release",
    "jedis-get-then-del": "chaos.drivers.catalog:jedis_get_then_del",
    "jedis-lua": "chaos.drivers.catalog:jedis_lua",
    "redisson": "chaos.drivers.catalog:redisson",
    "redisson-lease": "chaos.drivers.catalog:redisson_lease",
    "redsync": "chaos.drivers.catalog:redsync",
    "node-redlock": "chaos.drivers.catalog:node_redlock",
    "redisson-semaphore": "chaos.drivers.catalog:redisson_semaphore",
    "redisson-permit-expirable-semaphore": (
        "chaos.drivers.catalog:redisson_permit_expirable_semaphore"
    ),
    "redisson-rwlock": "chaos.drivers.catalog:redisson_rwlock",
    "redisson-fair": "chaos.drivers.catalog:redisson_fair",
    "node-semaphore": "chaos.drivers.catalog:node_semaphore",
}

_HINT = "run `lockchaos list` for the bundled locks, or pass module:attr"


def load(spec: str) -> LockFactory:
    """The factory a ``--lock`` value names; ``UsageError`` (one line) if there is none."""
    if spec.startswith(drivers.EXEC):  # a driver in any language: docs/driver-protocol.md
        return cast(LockFactory, drivers.exec_factory(spec[len(drivers.EXEC) :]))
    if spec in drivers.BUNDLED_DRIVERS:  # a bundled driver: one line up front if it is not built
        drivers.BUNDLED_DRIVERS[spec].argv()
    target = BUNDLED.get(spec, spec)
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"unknown lock {spec!r}: {_HINT}")
    module = _import(spec, module_name)
    obj: object = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise UsageError(
                f"lock {spec!r}: {module.__name__!r} has no attribute {attr!r} ({_HINT})"
            ) from None
    if not callable(obj):
        raise UsageError(
            f"lock {spec!r}: {module.__name__}.{attr} is a {type(obj).__name__}, not a "
            "callable factory make(ctx) -> LockClient"
        )
    return cast(LockFactory, obj)


def _import(spec: str, module_name: str) -> ModuleType:
    if module_name.endswith(".py") or os.sep in module_name:
        return _import_file(spec, Path(module_name))
    # Like `python -m`, let a user's module in the working directory be found.
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.append(os.getcwd())
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise UsageError(f"lock {spec!r}: no module named {exc.name!r} ({_HINT})") from None
    except Exception as exc:
        raise UsageError(
            f"lock {spec!r}: importing {module_name} failed: {type(exc).__name__}: {exc}"
        ) from None


def _import_file(spec: str, path: Path) -> ModuleType:
    if not path.is_file():
        raise UsageError(f"lock {spec!r}: no such file {str(path)!r} ({_HINT})")
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:8]
    name = f"lockchaos_user_{path.stem}_{digest}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise UsageError(f"lock {spec!r}: cannot import {str(path)!r} as a Python module")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise UsageError(
            f"lock {spec!r}: importing {path} failed: {type(exc).__name__}: {exc}"
        ) from None
    return module


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


def create(spec: str, ctx: LockContext) -> LockClient:
    """Load ``spec``, call the factory with ``ctx``, check what it returned.

    Redis errors from the factory propagate (they are faults, not mistakes); any other error
    means the lock is broken and becomes a one-line ``UsageError``.
    """
    factory = load(spec)
    try:
        client = factory(ctx)
    except (UsageError, redis.RedisError):
        raise
    except Exception as exc:
        raise UsageError(f"lock factory {spec} failed: {type(exc).__name__}: {exc}") from None
    return check_client(client, spec)


class ClientNeeds(Protocol):
    """What a fault asks of the lock client (``chaos.nemesis.Fault`` has these)."""

    @property
    def name(self) -> str: ...

    @property
    def client_needs(self) -> frozenset[str]: ...


def check_faults(spec: str, faults: Iterable[ClientNeeds]) -> None:
    """``UsageError`` up front, naming the fault and what it lacks, when the client of lock
    ``spec`` cannot do what one of ``faults`` needs from it. A Python lock can do all of it
    (its commands go through the harness's connections); a driver, what it says it can (asked
    only when a fault needs something)."""
    wanting = [fault for fault in faults if fault.client_needs]
    has = drivers.capabilities(spec) if wanting else None
    if has is None:
        return
    for fault in wanting:
        missing = sorted(fault.client_needs - has)
        if missing:
            meaning = CLIENT_CAPABILITIES.get(missing[0])
            raise UsageError(
                f"lock {spec!r}: {fault.name} needs a driver with the {missing[0]!r} "
                + (f"capability ({meaning})" if meaning else "capability")
                + ", which this one does not announce (docs/driver-protocol.md)"
            )


def can_extend(client: LockClient) -> bool:
    return callable(getattr(client, "extend", None))


def catalog() -> list[LockInfo]:
    """Every bundled lock, in ``BUNDLED`` order, with its seed, flaw and needs."""
    infos = []
    for name, target in BUNDLED.items():
        module = importlib.import_module(target.partition(":")[0])
        info: LockInfo = module.INFOS[name] if hasattr(module, "INFOS") else module.INFO
        if info.name != name:
            raise RuntimeError(f"{module.__name__}.INFO names {info.name!r}, registered {name!r}")
        infos.append(info)
    return infos


def info(name: str) -> LockInfo | None:
    """The catalog entry of a bundled lock; what a user's ``exec:`` driver declares in its
    ``describe`` answer (None if it gives none); what a user's ``module:attr`` factory
    declares in its ``info`` attribute (``contract.grants``; None if it declares nothing: a
    mutex), checked (``UsageError``, one line, for a bad one)."""
    if name.startswith(drivers.EXEC):
        return drivers.described_info(name)
    if name in BUNDLED:
        return next(i for i in catalog() if i.name == name)
    declared = getattr(load(name), "info", None)
    return None if declared is None else _checked(name, declared)


def is_module_attr(spec: str) -> bool:
    """Whether ``spec`` is a user's ``module:attr`` lock (not bundled, not ``exec:``): its
    declaration says what it grants, never what it can do (a client is asked that)."""
    return spec not in BUNDLED and not spec.startswith(drivers.EXEC)


def _checked(spec: str, declared: object) -> LockInfo:
    """A user's declaration, named after its ``--lock``; ``UsageError`` (one line) if it does
    not make sense."""
    where = f"lock {spec!r}: its factory's info"
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
    return replace(declared, name=spec, target=spec)


def check_topology(spec: str, kind: str, nodes: int) -> None:
    """``UsageError`` if lock ``spec`` cannot run on this topology, as its ``info`` says (a
    user's ``module:attr`` declares no needs: it passes)."""
    entry = info(spec)
    if entry is None:
        return
    if entry.topology == "standalone" and kind != "standalone":
        raise UsageError(
            f"lock {spec!r} needs independent masters: use --topology standalone "
            f"--nodes {max(entry.min_nodes, 5)}"
        )
    if nodes < entry.min_nodes:
        raise UsageError(f"lock {spec!r} needs at least {entry.min_nodes} nodes (got {nodes})")


def check_ttl(spec: str, ttl_ms: int) -> None:
    """``UsageError`` if lock ``spec`` cannot express ``ttl_ms``: its ``info`` says its TTLs
    are multiples of ``ttl_granularity_ms`` (whole seconds: 1000). The checker holds a lease
    to the TTL the run asked for; a lock that rounds it (up: a longer lease than claimed; down
    to 0: an error) would be judged on a TTL it never set."""
    entry = info(spec)
    step = 1 if entry is None else entry.ttl_granularity_ms
    if ttl_ms % step:
        kept = max(step, ttl_ms // step * step)
        raise UsageError(
            f"lock {spec!r} expresses its TTL in multiples of {step} ms"
            + (" (whole seconds)" if step == 1000 else "")
            + f": --ttl-ms {ttl_ms} cannot be kept; use --ttl-ms {kept}"
            + (f" or {kept + step}" if kept < ttl_ms else "")
        )


__all__ = [
    "BUNDLED",
    "ClientNeeds",
    "ExtendableLockClient",
    "Lease",
    "LockClient",
    "LockContext",
    "LockFactory",
    "LockInfo",
    "build_context",
    "can_extend",
    "catalog",
    "check_client",
    "check_faults",
    "check_topology",
    "check_ttl",
    "create",
    "info",
    "is_module_attr",
    "load",
]
