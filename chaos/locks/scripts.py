"""Every Lua script the bundled locks run, in one place, as close to the seeds as Lua allows.

Each script is sent with ``EVAL`` (as 004's ``jedis.eval`` does): exactly one round trip,
atomic on the server, and nothing to reload after a restart or a failover (``EVALSHA`` would
cost a ``NOSCRIPT`` + ``SCRIPT LOAD`` + ``EVALSHA`` the first time on each server, which makes
"pause before the n-th command" points drift). A harness sees these commands as ``EVAL``.
"""

from __future__ import annotations

from collections.abc import Sequence
from textwrap import dedent
from typing import Any

import redis


class Lua:
    """A Lua script, run with one ``EVAL``."""

    def __init__(self, name: str, source: str) -> None:
        self.name = name
        self.source = dedent(source).strip()

    def __call__(
        self, client: redis.Redis, keys: Sequence[str], args: Sequence[str | int | float]
    ) -> Any:
        words = [*keys, *(str(arg) for arg in args)]
        return client.eval(self.source, len(keys), *words)

    def __repr__(self) -> str:
        return f"Lua({self.name!r})"


# 000, 002, 004 (正确姿势): delete the key only if it still holds our token. 1 = deleted.
COMPARE_AND_DELETE = Lua(
    "compare-and-delete",
    """
    if redis.call("get",KEYS[1]) == ARGV[1] then
        return redis.call("del",KEYS[1])
    else
        return 0
    end
    """,
)

# 001 (RedisLockV2.set_lock_ttl): reset the TTL, in seconds, only if the key holds our token.
COMPARE_AND_EXPIRE = Lua(
    "compare-and-expire",
    """
    if redis.call("get",KEYS[1]) == ARGV[1] then
        return redis.call("EXPIRE", KEYS[1], ARGV[2])
    else
        return 0
    end
    """,
)

# The same in milliseconds: 001 for sub-second TTLs, and the watchdog's renewal (003).
COMPARE_AND_PEXPIRE = Lua(
    "compare-and-pexpire",
    """
    if redis.call("get",KEYS[1]) == ARGV[1] then
        return redis.call("PEXPIRE", KEYS[1], ARGV[2])
    else
        return 0
    end
    """,
)

# 003 (通过lua脚本保证原子性): SETNX + EXPIRE (seconds) in one script. 1 = set, nil = taken.
SETNX_EXPIRE = Lua(
    "setnx-expire",
    """
    if (redis.call('setnx', KEYS[1], ARGV[1]) == 1) then
        redis.call('expire', KEYS[1], ARGV[2])
        return true
    else
        return false
    end
    """,
)

# 003 (非setnx方式, Redisson): hash lock, field = owner, value = reentrancy count.
# ARGV[1] = expire ms, ARGV[2] = owner. nil = acquired (or re-entered); else the holder's PTTL.
REENTRANT_ACQUIRE = Lua(
    "reentrant-acquire",
    """
    if (redis.call('exists', KEYS[1]) == 0) then
        redis.call('hincrby', KEYS[1], ARGV[2], 1);
        redis.call('pexpire', KEYS[1], ARGV[1]);
        return nil;
    end ;
    if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
        redis.call('hincrby', KEYS[1], ARGV[2], 1);
        redis.call('pexpire', KEYS[1], ARGV[1]);
        return nil;
    end ;
    return redis.call('pttl', KEYS[1]);
    """,
)

# 003: nil = not ours; 0 = count decremented (TTL re-armed), still held; 1 = deleted.
REENTRANT_RELEASE = Lua(
    "reentrant-release",
    """
    if (redis.call('hexists', KEYS[1], ARGV[2]) == 0) then
        return nil;
    end ;
    local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1);
    if (counter > 0) then
        redis.call('pexpire', KEYS[1], ARGV[1]);
        return 0;
    else
        redis.call('del', KEYS[1]);
        return 1;
    end ;
    return nil;
    """,
)

# 003 (Redisson's watchdog over the hash lock): re-arm the hash's TTL while the owner's field
# exists. ARGV[1] = expire ms, ARGV[2] = owner. 1 = renewed, 0 = not ours.
REENTRANT_RENEW = Lua(
    "reentrant-renew",
    """
    if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
        redis.call('pexpire', KEYS[1], ARGV[1]);
        return 1;
    end;
    return 0;
    """,
)

# Beyond the seeds (Kleppmann 2016): SET NX PX and, only if granted, INCR the fence counter.
# KEYS[1] = lock, KEYS[2] = counter; 0 = taken, else the new fencing token (1, 2, 3, …).
FENCED_ACQUIRE = Lua(
    "fenced-acquire",
    """
    if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
        return redis.call('incr', KEYS[2])
    end
    return 0
    """,
)

ALL = (
    COMPARE_AND_DELETE,
    COMPARE_AND_EXPIRE,
    COMPARE_AND_PEXPIRE,
    SETNX_EXPIRE,
    REENTRANT_ACQUIRE,
    REENTRANT_RELEASE,
    REENTRANT_RENEW,
    FENCED_ACQUIRE,
)
