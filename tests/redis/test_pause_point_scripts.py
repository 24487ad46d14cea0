"""A pause point naming a script call fires on it however the library sends it.

A library picks ``EVAL`` or ``EVALSHA`` per connection (redis-py's ``Script`` sends EVALSHA,
ioredis's ``defineCommand`` EVAL the first time on a socket): ``command=EVAL`` and
``command=EVALSHA`` are one point (docs/driver-protocol.md, pause points).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chaos.campaign.rundir import SCHEDULE
from chaos.cli import main
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


@pytest.mark.parametrize("fault", ["client-pause-at:duration_ms=150", "client-crash"])
def test_a_point_before_a_script_load_is_reached_when_a_flush_follows_it(
    fault: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """redis-py sends SCRIPT LOAD only after a NOSCRIPT. Armed on every client and followed
    by a flush (``--faults-in-order``), the point stops or kills whoever runs a script first
    after it; the run is not inconclusive (exit 0), and both faults had an effect."""
    code = main(["run", "--lock", "redis-py", "--faults",
                 f"{fault}:command=SCRIPT:op=release:client=*,script-flush",
                 "--faults-in-order", "--duration", "3", "--clients", "3", "--seed", "4",
                 "--out", str(tmp_path), "--json"])
    verdict = json.loads(capsys.readouterr().out)
    assert code == 0, verdict
    name = fault.split(":")[0]
    assert verdict["coverage"][name]["effective"] > 0, verdict["coverage"]
    assert verdict["coverage"]["script-flush"]["effective"] > 0, verdict["coverage"]
    schedule = json.loads((Path(verdict["run_dir"]) / SCHEDULE).read_text())
    assert [event["fault"] for event in schedule["events"][:2]] == [name, "script-flush"]


@pytest.mark.parametrize("fault", ["client-pause-at:duration_ms=150", "client-crash"])
def test_a_point_on_every_client_is_armed_on_a_crashed_clients_replacement_too(
    fault: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``lua-loaded-once`` loads its scripts once per process, at its first acquire: after a
    flush it never sends SCRIPT LOAD again, and only a new process does. With ``replaced=1``
    a point armed on every client is armed on each one's first replacement too
    (``WorkerPool.keep_for_replacements``): c1, crashed at its next acquire after the flush,
    comes back and stops (or crashes) there."""
    code = main(["run", "--lock", "lua-loaded-once", "--faults",
                 f"{fault}:command=SCRIPT:op=acquire:client=*:replaced=1,script-flush,"
                 "client-crash:command=EVALSHA:op=acquire:nth=1:client=c1",
                 "--faults-in-order", "--duration", "3", "--clients", "3", "--seed", "4",
                 "--out", str(tmp_path), "--json", "--fail-on", "hard"])
    verdict = json.loads(capsys.readouterr().out)
    assert code == 0, verdict
    events = [json.loads(line) for line in
              (Path(verdict["run_dir"]) / "history.jsonl").read_text().splitlines()]
    crashed = next(e["t"] for e in events if e["f"] == "crash" and e["process"] == "c1")
    reached = [e for e in events if e["f"] == "pause-point" and e["value"].get("fault") == "f1"]
    assert reached and all(e["process"] == "c1" and e["t"] > crashed for e in reached), reached
    assert reached[0]["value"]["command"] == "SCRIPT"
    name = fault.split(":")[0]
    assert verdict["coverage"][name]["effective"] > 0, verdict["coverage"]
