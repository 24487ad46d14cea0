"""The audit on locks whose clients talk in ways its surface must see through (issue 35): each
is sound, and each was called inconclusive because of how its client talks — a handshake, a
probe the server rejects, a thread pool, a subscription. (The locks: surface_locks.py.)"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from chaos.cli import main
from chaos.report.audit_page import AUDIT, AuditFile, load_audit

BUDGET_S = 60
pytestmark = pytest.mark.budget  # each a sound lock's whole budget: `make test-long`


def audit(tmp_path: Path, lock: str, *args: str) -> tuple[int, AuditFile]:
    code = main(["audit", "--lock", lock, "--budget", str(BUDGET_S), "--out", str(tmp_path),
                 *args])
    (directory,) = tmp_path.iterdir()
    return code, load_audit(directory / AUDIT)


def untested(record: AuditFile) -> list[str]:
    """What the audit did not test, but for points whose campaign had no time: how a client
    talks is not why a campaign had no time (three audits at once on two loaded cores cut 10
    of a thread-pool Redlock's campaigns at 60 s), and the audit says so with the budget
    that would run them (exit 3, tests/pure/test_audit_plan.py)."""
    return [why for why in record.inconclusive_reasons if "had no time" not in why]


def passes(code: int, record: AuditFile) -> None:
    """Exit 0 (3 only beside points that had no time), nothing else left untested, and
    within its budget."""
    assert code == (3 if record.inconclusive_reasons else 0), (
        record.verdict, record.inconclusive_reasons)  # fmt: skip
    assert record.verdict in ("ok", "soft", "data") and not untested(record), record
    assert record.wall_s <= BUDGET_S * 1.1, record.wall_s


# A driver on go-redis's manners: the first command of each connection it opens — at its
# first operation, and after an error dropped one — goes after a ``HELLO`` sent through the
# same hook, so it is announced as the operation's (bsm/redislock, and any go-redis v9 lock
# with its default options, does exactly this).
HANDSHAKING_DRIVER = r"""
import json, secrets, sys
import redis

RELEASE = ("if redis.call('get', KEYS[1]) == ARGV[1] then "
           "return redis.call('del', KEYS[1]) end return 0")
r = hello = None
fresh = True

def out(**m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()

def send(m, *args):
    if m.get("announce"):
        out(type="before", id=m["id"], command=args[0])
        sys.stdin.readline()  # go
    return r.execute_command(*args)

def call(m, *args):
    global fresh
    try:
        if fresh:
            send(m, "HELLO", "2")
            fresh = False
        return send(m, *args)
    except redis.RedisError:
        fresh = True
        raise

for line in iter(sys.stdin.readline, ""):
    m = json.loads(line)
    if m["type"] == "describe":
        out(type="describe", capabilities=["pause-points"])
        continue
    if m["type"] == "hello":
        hello, node = m, m["nodes"][0]
        r = redis.Redis(node["host"], node["port"], socket_timeout=m["socket_timeout_ms"] / 1000,
                        retry_on_timeout=False)
        out(type="hello", ok=True, capabilities=["pause-points"])
        continue
    try:
        if m["type"] == "acquire":
            token = f"{hello['client_id']}:{secrets.token_hex(8)}"
            if call(m, "SET", hello["lock_name"], token, "NX", "PX", hello["ttl_ms"]):
                out(type="ok", id=m["id"], token=token, validity_ms=hello["ttl_ms"])
            else:
                out(type="refused", id=m["id"])
        elif m["type"] == "release":
            released = call(m, "EVAL", RELEASE, 1, hello["lock_name"], m["token"])
            out(type="ok" if released else "refused", id=m["id"])
    except redis.RedisError as exc:
        out(type="error", id=m["id"], definite=False, message=str(exc))
"""


def test_a_connection_handshake_is_shown_but_never_a_point_to_reach(tmp_path: Path) -> None:
    """go-redis sends HELLO through its hook in whatever operation opens a connection: "not
    tested: no client ever stopped or crashed before acquire HELLO" called a sound lock
    inconclusive. HELLO is shown, optional, and the audit passes."""
    script = tmp_path / "driver.py"
    script.write_text(HANDSHAKING_DRIVER)
    code, record = audit(tmp_path / "out", f"exec:{sys.executable} {script}")
    passes(code, record)
    assert record.surface["acquire"] == ["HELLO", "SET"], record.surface
    assert record.optional == {"acquire": {"HELLO": "connection set-up"}}


def test_a_probe_the_server_rejects_once_is_never_a_point_to_reach(tmp_path: Path) -> None:
    """A lock whose first extend in each process probes a command the server rejects (``SET
    … IFEQ``), then falls back to a script for good: the probe is sent once per process, and
    a point before it, armed after each process's first extend, waits for ever."""
    code, record = audit(tmp_path, "surface_locks:probing")
    passes(code, record)
    assert record.surface["extend"] == ["SET", "EVAL"], record.surface
    assert "SET" in record.optional.get("extend", {}), record.optional
    assert record.exercised.extends_ok > 0


def test_a_redlock_on_a_thread_pool_is_stopped_at_its_own_commands(tmp_path: Path) -> None:
    """pottery's Redlock sends every command from a pool thread: the surface was "background
    SET, EVALSHA, SCRIPT" and the pause point aimed at the release's ``DEL`` of nothing it
    sends. Its acquire and release are its pool's commands on its keys, and a client stops
    before them."""
    code, record = audit(tmp_path, "surface_locks:pool_redlock")
    assert (code == 3) == bool(record.inconclusive_reasons), (code, record.inconclusive_reasons)
    assert not untested(record), record.inconclusive_reasons
    assert record.surface["acquire"][0] == "SET" and record.surface["release"][0] == "EVALSHA"
    assert record.exercised.pause_points.get("acquire SET", 0) > 0, record.exercised
    assert record.exercised.pause_points.get("release EVALSHA", 0) > 0, record.exercised


def test_a_pubsub_lock_with_no_expiry_ends_on_its_liveness_bug(tmp_path: Path) -> None:
    """Its waiters SUBSCRIBE after a failed SET; a holder that crashes wedges the lock (no
    expiry). The liveness bug was found and explained, yet the audit ended inconclusive ("no
    client ever stopped or crashed before acquire SUBSCRIBE"): its verdict is the bug."""
    code, record = audit(tmp_path, "surface_locks:pubsub_no_expiry")
    assert record.verdict in ("liveness", "wedged"), (record.verdict, record.runs[:3])
    assert code in (0, 1) and not untested(record), record.inconclusive_reasons
    assert record.optional.get("acquire", {}).get("SUBSCRIBE") == "a subscription"
    assert record.wall_s <= BUDGET_S * 1.1, record.wall_s
