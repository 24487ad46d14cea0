"""A pause point naming a script call fires on it however the library sends it.

A library picks ``EVAL`` or ``EVALSHA`` per connection (redis-py's ``Script`` sends EVALSHA,
ioredis's ``defineCommand`` EVAL the first time on a socket): ``command=EVAL`` and
``command=EVALSHA`` are one point (docs/driver-protocol.md, pause points).
"""

from __future__ import annotations

import pytest

from chaos.locks.context import build_context
from chaos.topology import LocalTopology
from chaos.workload.inject import InjectingConnection, PausePoint, injector

SCRIPT = "return redis.call('set', KEYS[1], ARGV[1])"


@pytest.mark.parametrize("named", ["EVAL", "EVALSHA"])
@pytest.mark.parametrize("sent", ["EVAL", "EVALSHA"])
def test_eval_and_evalsha_are_one_pause_point(named: str, sent: str) -> None:
    assert PausePoint(named).matches(sent, op=None, count=1)


def test_other_commands_still_match_only_themselves() -> None:
    point = PausePoint("DEL", op="release")
    assert point.matches("DEL", op="release", count=1)
    assert not point.matches("DEL", op="acquire", count=1)
    assert not point.matches("UNLINK", op="release", count=1)
    assert not PausePoint("EVAL").matches("FCALL", op=None, count=1)
    assert not PausePoint("EVAL").matches("EVAL_RO", op=None, count=1)


def test_a_point_naming_eval_stops_redis_pys_evalsha(single: LocalTopology) -> None:
    """redis-py's registered scripts go out as EVALSHA (after a NOSCRIPT, EVAL): a point
    armed on EVAL fires before the first of them, on a real server."""
    ctx = build_context(
        single.client_view("c1"), lock_name="k", ttl_ms=500,
        connection_class=InjectingConnection,
    )
    fired: list[PausePoint] = []
    injector.on_fire = fired.append
    point = PausePoint("EVAL", action="sleep", duration_ms=1, op="release")
    try:
        script = ctx.primary.register_script(SCRIPT)
        injector.arm(point)
        injector.begin("release")
        script(keys=["k"], args=["c1:a"])
        injector.end()
        assert fired == [point]
        assert ctx.primary.get("k") == "c1:a"
    finally:
        injector.disarm_all()
        injector.on_fire = lambda point: None
        ctx.close()
