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
would show nothing ``lua`` and ``lua-extend`` do not. The factory tries both commands on the
server (``check_server``) and refuses in one line on one that lacks either (``UsageError``:
every client's factory fails, and the run stops with that line and exit status 2).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

import redis

from chaos.errors import UsageError
from chaos.locks.contract import Lease, LockContext
from chaos.locks.parts import SetNxPxLock, lock_info


class DelIfEqLock(SetNxPxLock):
    def release(self, lease: Lease) -> bool:
        return bool(self.redis.execute_command("DELIFEQ", self.key, lease.token))

    def extend(self, lease: Lease) -> Lease | None:
        done = self.redis.execute_command(
            "SET", self.key, lease.token, "IFEQ", lease.token, "PX", self.ttl_ms
        )
        return replace(lease, validity_ms=self.ttl_ms) if done else None


def make(ctx: LockContext) -> DelIfEqLock:
    lock = DelIfEqLock(ctx)
    check_server(lock)
    return lock


# How a server refuses a command it does not know, or an option of one (redis-py drops "ERR ").
REFUSED = ("unknown command", "syntax error")


def check_server(lock: DelIfEqLock) -> None:
    """``UsageError`` in one line unless the lock's server has ``DELIFEQ`` (Valkey ≥ 9.0) and
    ``SET … IFEQ`` (Valkey ≥ 8.1). Each is tried once, on a scratch key with a fresh token,
    and leaves it absent: ``DELIFEQ`` deletes nothing that is not there, ``SET … IFEQ`` never
    creates a key. (Trying, rather than ``COMMAND INFO``, reaches the key's node in a Redis
    Cluster too.) Any other error — a fault while trying — propagates: the harness records a
    crash and starts the client again."""
    scratch, token = f"{lock.key}:server-check", lock.new_token()
    tries = {
        "DELIFEQ (Valkey ≥ 9.0)": ("DELIFEQ", scratch, token),
        "SET … IFEQ (Valkey ≥ 8.1)": ("SET", scratch, token, "IFEQ", token),
    }
    for needs, command in tries.items():
        try:
            lock.redis.execute_command(*command)
        except redis.ResponseError as exc:
            if not str(exc).lower().startswith(REFUSED):
                raise
            raise UsageError(
                f"lock 'delifeq' needs {needs}: this server is {_server(lock.redis)}; run it "
                "with --provider docker --server valkey-9.1"
            ) from None


def _server(server: redis.Redis) -> str:
    """What the server says it is: ``redis 7.0.15``, ``valkey 8.1.1``."""
    info = cast(dict[str, Any], server.info("server"))
    if "redis_version" not in info:  # a Redis Cluster answers per node (all run one image)
        info = next(iter(info.values()))
    name = info.get("server_name", "redis")
    return f"{name} {info.get(f'{name}_version', info['redis_version'])}"


INFO = lock_info(__doc__, name="delifeq", module=__name__, extend=True)
