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

# ``lua-loaded-once``'s acquire: SET NX PX as a script (so that it is sent by EVALSHA). 1 = set.
SET_NX_PX = Lua(
    "set-nx-px",
    """
    if redis.call("set",KEYS[1],ARGV[1],"NX","PX",ARGV[2]) then
        return 1
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

# Beyond the seeds: a counting semaphore in one sorted set, each permit a member ``token#i``
# scored by its expiry in server milliseconds (``TIME``: never a client's clock). Every script
# first prunes the expired permits, so a crashed holder's permits come back by themselves. The
# lines every one of them starts with: ``now`` rounded down and ``expires`` (ARGV[ttl_arg] ms
# from now) rounded up, so that no entry ends before the lease its holder was promised, not
# even by the millisecond that rounding ``TIME`` would cost. (Whole milliseconds: a Lua number
# reaches Redis with 14 significant digits, too few for microseconds.)
def _server_now(ttl_arg: int | None = None) -> str:
    expires = "" if ttl_arg is None else (
        "local expires = tonumber(t[1]) * 1000 + math.ceil(tonumber(t[2]) / 1000)"
        f" + tonumber(ARGV[{ttl_arg}])"
    )
    return f"""
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    {expires}
"""


# ARGV[1] = token, ARGV[2] = permits, ARGV[3] = capacity, ARGV[4] = ttl ms.
# 1 = granted (all the permits at once), 0 = not enough free.
SEMAPHORE_ACQUIRE = Lua(
    "semaphore-acquire",
    _server_now(4) + """
    redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
    local permits = tonumber(ARGV[2])
    if redis.call('ZCARD', KEYS[1]) + permits > tonumber(ARGV[3]) then
        return 0
    end
    for i = 1, permits do
        redis.call('ZADD', KEYS[1], expires, ARGV[1] .. '#' .. i)
    end
    redis.call('PEXPIRE', KEYS[1], ARGV[4])
    return 1
    """,
)

# ARGV[1] = token, ARGV[2] = permits. 1 = our permits were still there (and are removed).
SEMAPHORE_RELEASE = Lua(
    "semaphore-release",
    _server_now() + """
    redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
    local removed = 0
    for i = 1, tonumber(ARGV[2]) do
        removed = removed + redis.call('ZREM', KEYS[1], ARGV[1] .. '#' .. i)
    end
    if removed == tonumber(ARGV[2]) then return 1 end
    return 0
    """,
)

# ARGV[1] = token, ARGV[2] = permits, ARGV[3] = ttl ms. Re-scores only our own permits, and
# only if every one of them is still there: 1 = extended, 0 = lapsed (gone).
SEMAPHORE_EXTEND = Lua(
    "semaphore-extend",
    _server_now(3) + """
    redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
    local permits = tonumber(ARGV[2])
    for i = 1, permits do
        if not redis.call('ZSCORE', KEYS[1], ARGV[1] .. '#' .. i) then return 0 end
    end
    for i = 1, permits do
        redis.call('ZADD', KEYS[1], 'XX', expires, ARGV[1] .. '#' .. i)
    end
    if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[3]) then
        redis.call('PEXPIRE', KEYS[1], ARGV[3])
    end
    return 1
    """,
)

# Beyond the seeds: a read-write lock in one hash, a field per holder (``w:token`` for the
# writer, ``r:token`` for each reader) whose value is its expiry in server milliseconds; the
# expired ones are pruned first. A writer refused while readers hold leaves a waiting mark
# (``x:client``, for a TTL), and no new reader is let in while another client's mark is there:
# writers are not starved by a stream of readers. ARGV[1] = field, ARGV[2] = ttl ms,
# ARGV[3] = this client's waiting mark. 1 = granted, 0 = not.
RW_ACQUIRE = Lua(
    "rw-acquire",
    _server_now(2) + """
    local held = redis.call('HGETALL', KEYS[1])
    local readers, writers, waiting = 0, 0, 0
    for i = 1, #held, 2 do
        local kind = string.sub(held[i], 1, 2)
        if tonumber(held[i + 1]) <= now then
            redis.call('HDEL', KEYS[1], held[i])
        elseif kind == 'w:' then
            writers = writers + 1
        elseif kind == 'r:' then
            readers = readers + 1
        elseif held[i] ~= ARGV[3] then
            waiting = waiting + 1
        end
    end
    local ttl = tonumber(ARGV[2])
    if string.sub(ARGV[1], 1, 2) == 'w:' then
        if writers + readers > 0 then
            redis.call('HSET', KEYS[1], ARGV[3], expires)
            if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
            return 0
        end
        redis.call('HDEL', KEYS[1], ARGV[3])
    elseif writers + waiting > 0 then
        return 0
    end
    redis.call('HSET', KEYS[1], ARGV[1], expires)
    if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
    return 1
    """,
)

# ARGV[1] = field. 1 = it was ours and still valid (now removed); 0 = gone or lapsed.
RW_RELEASE = Lua(
    "rw-release",
    _server_now() + """
    local held_until = redis.call('HGET', KEYS[1], ARGV[1])
    if not held_until then return 0 end
    redis.call('HDEL', KEYS[1], ARGV[1])
    if tonumber(held_until) > now then return 1 end
    return 0
    """,
)

# ARGV[1] = field, ARGV[2] = ttl ms. Only our own, still valid entry: 1 = extended, 0 = not.
RW_EXTEND = Lua(
    "rw-extend",
    _server_now(2) + """
    local held_until = redis.call('HGET', KEYS[1], ARGV[1])
    if not held_until or tonumber(held_until) <= now then return 0 end
    redis.call('HSET', KEYS[1], ARGV[1], expires)
    if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
        redis.call('PEXPIRE', KEYS[1], ARGV[2])
    end
    return 1
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
    SEMAPHORE_ACQUIRE,
    SEMAPHORE_RELEASE,
    SEMAPHORE_EXTEND,
    RW_ACQUIRE,
    RW_RELEASE,
    RW_EXTEND,
)
