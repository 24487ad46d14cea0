"""The shared resource the lock protects, Jepsen ``lock-set`` style.

A critical section reads the set (a list of operation ids), holds it for the work time, appends
its own id and writes the whole list back. Two holders at once make a lost update: both read
``[a]``, one writes ``[a, b]``, the other ``[a, c]``, and ``b`` is gone — which the checker sees
by comparing acknowledged writes with the final state.

With a fencing token (Kleppmann 2016) every access, read as well as write, goes through one
Lua script that keeps the highest token seen and rejects any access with a lower one, so a
paused stale holder can neither read-modify-write nor overwrite.
"""

from __future__ import annotations

import redis

DATA_KEY = "lockchaos:resource"
HIGHEST_KEY = "lockchaos:resource:highest-token"
SEPARATOR = ","
STALE_PREFIX = "STALE"

FENCED_ACCESS = """
local highest = tonumber(redis.call('GET', KEYS[2]) or '-1')
local token = tonumber(ARGV[1])
if token < highest then
    return redis.error_reply('STALE token ' .. token .. ' < highest ' .. highest)
end
redis.call('SET', KEYS[2], token)
if ARGV[2] == 'write' then
    redis.call('SET', KEYS[1], ARGV[3])
    return 'OK'
end
return redis.call('GET', KEYS[1]) or ''
"""


class StaleToken(Exception):
    """The resource rejected an access because a newer fencing token had been seen."""


def _decode(raw: bytes | str | None) -> list[str]:
    if not raw:
        return []
    text = raw.decode() if isinstance(raw, bytes) else raw
    return text.split(SEPARATOR)


class Resource:
    """One client's handle on the resource (plain, or fenced when given a token)."""

    def __init__(self, conn: redis.Redis) -> None:
        self._conn = conn
        self._fenced = conn.register_script(FENCED_ACCESS)

    def read(self, fence: int | None = None) -> list[str]:
        if fence is None:
            raw: bytes | None = self._conn.get(DATA_KEY)  # type: ignore[assignment]
            return _decode(raw)
        return _decode(self._fenced_call(fence, "read"))

    def write(self, items: list[str], fence: int | None = None) -> None:
        value = SEPARATOR.join(items)
        if fence is None:
            self._conn.set(DATA_KEY, value)
        else:
            self._fenced_call(fence, "write", value)

    def _fenced_call(self, fence: int, op: str, value: str = "") -> bytes | str | None:
        try:
            reply: bytes | str | None = self._fenced(
                keys=[DATA_KEY, HIGHEST_KEY], args=[fence, op, value]
            )
        except redis.ResponseError as exc:
            if str(exc).startswith(STALE_PREFIX):
                raise StaleToken(str(exc)) from None
            raise
        return reply

    def reset(self) -> None:
        self._conn.delete(DATA_KEY, HIGHEST_KEY)
