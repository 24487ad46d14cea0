"""delifeq — SET NX PX; DELIFEQ releases, SET IFEQ extends: no Lua (Valkey ≥ 9.0).

Seed: beyond 000_8a1b5bedde93f492.txt, 002_497f2475c0bb3b16.txt and 004_8e2bee48344fb8f7.txt
(正确姿势 ``releaseDistributedLock``), whose compare-and-delete is an ``EVAL`` script (``lua``):
Valkey 9.0 ships it as one command, ``DELIFEQ key token``, and Valkey 8.1 the compare-and-extend,
``SET key token IFEQ token PX ttl``.

Known flaw: the same lease limit as lua: atomic commands keep a stale holder from deleting or
extending another client's lock, but a holder stalled past its TTL still acts as the holder
after another client has acquired the lock, with no fencing token to stop it.

Read top to bottom like redis-py's ``redis/lock.py``: acquire, release, extend, each one round
trip and atomic on the server. ``DELIFEQ`` answers 1 when it deleted the key (the value was
our token), 0 otherwise; ``SET … IFEQ`` answers OK only when the value still equals our token
(then it also resets the TTL to a full TTL from now), nil otherwise — so a lease that expired
and was taken by another client is neither released nor extended. redis-py has no method for
either, so both go through ``execute_command``.

One lock, not two: a Valkey 8.1 variant (``SET IFEQ`` to extend, the Lua script to release)
would show nothing ``lua`` and ``lua-extend`` do not. The factory asks the server whether it
has both commands (``COMMAND INFO DELIFEQ``: nil without it; ``COMMAND DOCS SET``: the
``IFEQ`` token) and refuses in one line on one that does not (``UsageError``: every client's
factory fails, the run stops with that line and exit status 2).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any, cast

import redis

from chaos.errors import UsageError
from chaos.locks.base import SetNxPxLock, lock_info
from chaos.locks.contract import Lease, LockContext


class DelIfEqLock(SetNxPxLock):
    def release(self, lease: Lease) -> bool:
        return bool(self.redis.execute_command("DELIFEQ", self.key, lease.token))

    def extend(self, lease: Lease) -> Lease | None:
        done = self.redis.execute_command(
            "SET", self.key, lease.token, "IFEQ", lease.token, "PX", self.ttl_ms
        )
        return replace(lease, validity_ms=self.ttl_ms) if done else None


def make(ctx: LockContext) -> DelIfEqLock:
    check_server(ctx.primary)
    return DelIfEqLock(ctx)


def check_server(server: redis.Redis) -> None:
    """``UsageError`` in one line unless ``server`` has ``DELIFEQ`` (Valkey ≥ 9.0) and
    ``SET … IFEQ`` (Valkey ≥ 8.1). A Redis error (a fault while asking) propagates."""
    if server.execute_command("COMMAND INFO", "DELIFEQ") == [None]:
        lacks = "DELIFEQ (Valkey ≥ 9.0)"
    elif "IFEQ" not in _words(server.execute_command("COMMAND DOCS", "SET")):
        lacks = "SET … IFEQ (Valkey ≥ 8.1)"
    else:
        return
    raise UsageError(
        f"lock 'delifeq' needs {lacks}: this server is {_server(server)}; run it with "
        "--provider docker --server valkey-9.1"
    )


def _words(reply: Any) -> Iterator[str]:
    """Every string in a nested reply (``COMMAND DOCS``: the arguments and their tokens)."""
    if isinstance(reply, bytes | str):
        yield reply.decode() if isinstance(reply, bytes) else reply
    elif isinstance(reply, list | tuple | dict):
        for item in reply.items() if isinstance(reply, dict) else reply:
            yield from _words(item)


def _server(server: redis.Redis) -> str:
    """What the server says it is: ``redis 7.0.15``, ``valkey 8.1.1``."""
    info = cast(dict[str, Any], server.info("server"))
    if "redis_version" not in info:  # a Redis Cluster answers per node (all run one image)
        info = next(iter(info.values()))
    name = info.get("server_name", "redis")
    return f"{name} {info.get(f'{name}_version', info['redis_version'])}"


INFO = lock_info(__doc__, name="delifeq", module=__name__, extend=True)
