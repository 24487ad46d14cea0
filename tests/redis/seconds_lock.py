"""A sound lock that speaks whole seconds: ``lua-extend`` (``SET … EX``, a compare-and-
``EXPIRE`` extend) declaring ``ttl_granularity_ms=1000``, as a library whose API takes seconds
does. The audit must give it a TTL it can keep in every phase (tests/redis/test_audit.py)."""

from __future__ import annotations

from chaos.locks.contract import LockContext, grants
from chaos.locks.lua_extend import LuaExtendLock


@grants(ttl_granularity_ms=1000)
def make(ctx: LockContext) -> LuaExtendLock:
    return LuaExtendLock(ctx)
