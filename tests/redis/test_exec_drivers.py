"""Locks in other languages through the driver protocol (chaos/drivers/), with drivers
written in Python (``exec:``), so only Redis is needed: an ``exec:`` driver written in a test
runs like any lock, the docs' worked example runs with both capabilities, and the harness side
of the protocol turns every kind of reply — and every way a driver can misbehave — into what
the lock contract says. (The bundled Jedis, Redisson, redsync and node-redlock drivers:
tests/drivers/test_drivers.py.)
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
import time
from pathlib import Path
from typing import cast

import pytest

from chaos import history as h
from chaos.campaign import Campaign, Layout, load_campaign
from chaos.cli import main
from chaos.drivers import adapter
from chaos.drivers.process import DriverBroken
from chaos.drivers.protocol import encode
from chaos.errors import UsageError
from chaos.experiments.execute import run_campaign
from chaos.locks.context import build_context
from chaos.locks.contract import (
    INVALIDATED,
    REVOKED,
    Kept,
    Lease,
    LeaseInvalidated,
    LockContext,
)
from chaos.lockspec import can_extend, check_client, resolve
from chaos.nemesis import FAULTS
from chaos.topology import LocalTopology

EXEC_DRIVER = """
import json, secrets, sys
import redis

RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end"
r = hello = None

def reply(**message):
    sys.stdout.write(json.dumps(message) + "\\n")
    sys.stdout.flush()

for line in sys.stdin:
    m = json.loads(line)
    if m["type"] == "hello":
        hello, node = m, m["nodes"][0]
        r = redis.Redis(node["host"], node["port"], socket_timeout=m["socket_timeout_ms"] / 1000)
        reply(type="hello", ok=True, language="python", library="redis-py", capabilities=[])
        continue
    try:
        if m["type"] == "acquire":
            token = f"{hello['client_id']}:{secrets.token_hex(8)}"
            if r.set(hello["lock_name"], token, nx=True, px=hello["ttl_ms"]):
                reply(type="ok", id=m["id"], token=token, validity_ms=hello["ttl_ms"])
            else:
                reply(type="refused", id=m["id"])
        elif m["type"] == "release":
            released = r.eval(RELEASE, 1, hello["lock_name"], m["token"])
            reply(type="ok" if released else "refused", id=m["id"])
    except redis.RedisError as exc:  # it may or may not have happened
        reply(type="error", id=m["id"], definite=False, message=str(exc))
"""


def test_an_exec_driver_written_in_a_test_runs_like_any_lock(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "driver.py"
    script.write_text(EXEC_DRIVER)
    assert len(EXEC_DRIVER.strip().splitlines()) <= 32
    lock = f"exec:{sys.executable} {script}"
    # 6 s: slow-work fires twice (in 4 s it fired once, and in one fresh-clone CI run nobody
    # overlapped that one slow holder: no soft violation to see)
    code = main(
        ["run", "--lock", lock, "--faults", "slow-work,partition", "--duration", "6",
         "--out", str(tmp_path / "out"), "--json"]
    )  # fmt: skip
    printed = json.loads(capsys.readouterr().out)
    assert code == 0, printed  # compare-and-delete: soft violations, never hard
    assert printed["hard_violations"] == 0 and printed["soft_violations"] > 0, printed
    events = h.read_history(Path(printed["run_dir"]) / "history.jsonl")
    acquired = [e for e in events if e.f == h.ACQUIRE and e.type == h.OK]
    assert len(acquired) > 20
    assert {e.process for e in acquired} >= {"c1", "c2", "c3"}
    # The partition made some operations indeterminate: the driver's definite:false errors.
    assert any(e.type == h.INFO and e.f in (h.ACQUIRE, h.RELEASE) for e in events)


# The same driver, for a lock that needs three independent masters: it says so in describe,
# and refuses a hello with fewer (as a Redlock library does).
NEEDS_THREE = EXEC_DRIVER.replace(
    """    if m["type"] == "hello":
""",
    """    if m["type"] == "describe":
        reply(type="describe", capabilities=[], topology="standalone", min_nodes=3)
        continue
    if m["type"] == "hello" and len(m["nodes"]) < 3:
        reply(type="hello", ok=False, message=f"needs 3 masters (got {len(m['nodes'])})")
        continue
    if m["type"] == "hello":
""",
)


def test_a_driver_that_declares_its_masters_runs_on_them_with_the_default_topology(
    tmp_path: Path,
) -> None:
    """Before ``describe`` could say it, such a driver refused the one node ``auto`` gave it
    (and ``audit`` exited 2); now ``auto`` starts 5 masters, as for the bundled Redlocks."""
    assert NEEDS_THREE != EXEC_DRIVER
    script = tmp_path / "needs_three.py"
    script.write_text(NEEDS_THREE)
    # Two clients for 6 s: each driver is a Python importing redis-py, slow to start on a
    # loaded machine.
    campaign = Campaign.from_options(f"exec:{sys.executable} {script}", duration_s=6.0,
                                     clients=2)
    outcome = run_campaign(campaign, tmp_path)
    ran = load_campaign(outcome.run_dir)
    assert ran is not None and ran.layout == Layout("standalone", 5, "none")
    assert outcome.completed_ops > 10 and outcome.verdict.hard_violations == 0


# -- the harness side of the protocol, against drivers that misbehave ------------------------

# docs/driver-protocol.md's worked example: plain Python, RESP over a socket, both capabilities.
EXAMPLE = Path(__file__).resolve().parents[2] / "examples/drivers/python/driver.py"


def _driver(tmp_path: Path, body: str) -> str:
    """``exec:`` for a small Python driver whose request loop is ``body``."""
    script = tmp_path / "d.py"
    script.write_text(
        "import json, sys, time\n"
        "def out(**m):\n"
        "    sys.stdout.write(json.dumps(m) + '\\n'); sys.stdout.flush()\n" + textwrap.dedent(body)
    )
    return f"{sys.executable} {script}"


HELLO_THEN = """
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] == "hello":
        out(type="hello", ok=True, capabilities={caps})
        continue
{handler}
"""


def _ctx(single: LocalTopology) -> LockContext:
    return build_context(single.client_view("c1"), lock_name="k", ttl_ms=200)


def _start(
    tmp_path: Path, single: LocalTopology, handler: str, caps: str = "[]"
) -> adapter.DriverLock:
    command = _driver(
        tmp_path, HELLO_THEN.format(caps=caps, handler=textwrap.indent(handler, "    "))
    )
    return resolve(f"exec:{command}").factory(_ctx(single))  # type: ignore[return-value]


def test_replies_become_leases_refusals_and_indeterminate_outcomes(
    tmp_path: Path, single: LocalTopology
) -> None:
    lock = _start(
        tmp_path,
        single,
        """\
if m["type"] == "acquire" and m["id"] == 1:
    out(type="ok", id=m["id"], token="c1:a", validity_ms=150.5, fence=7)
elif m["type"] == "acquire":
    out(type="refused", id=m["id"])
elif m["type"] == "release" and m["token"] == "c1:a":
    out(type="error", id=m["id"], definite=True, message="not there")
elif m["type"] == "release":
    out(type="error", id=m["id"], definite=False, message="timed out")
elif m["type"] == "extend":
    out(type="ok", id=m["id"], validity_ms=200)
""",
        caps='["extend"]',
    )
    try:
        assert lock.acquire() == Lease(token="c1:a", validity_ms=150.5, fence=7)
        assert lock.acquire() is None
        assert lock.release(Lease(token="c1:a")) is False  # a definite error: certainly not
        with pytest.raises(adapter.DriverError, match="timed out"):  # indeterminate: raises
            lock.release(Lease(token="c1:b"))
        assert can_extend(lock)
        assert lock.extend(Lease(token="c1:a")) == Lease(token="c1:a", validity_ms=200)  # type: ignore[attr-defined]
    finally:
        lock.close()


def test_revoked_invalidated_and_kept_become_what_the_contract_says(
    tmp_path: Path, single: LocalTopology
) -> None:
    """An extend's ``revoked`` and ``invalidated`` (and, not definite, ``LeaseInvalidated``
    raised), a release's ``kept`` with its validity; a reply to a request it does not answer
    breaks the driver in one line."""
    lock = _start(
        tmp_path,
        single,
        """\
if m["type"] == "extend" and m["token"] == "c1:r":
    out(type="revoked", id=m["id"], message="unlocked after a failed extend")
elif m["type"] == "extend" and m["token"] == "c1:i":
    out(type="invalidated", id=m["id"])
elif m["type"] == "extend":
    out(type="invalidated", id=m["id"], definite=False, message="timed out")
elif m["type"] == "release" and m["token"] == "c1:k":
    out(type="kept", id=m["id"], validity_ms=900)
else:
    out(type="revoked", id=m["id"])
""",
        caps='["extend"]',
    )
    try:
        assert lock.extend(Lease(token="c1:r")) is REVOKED  # type: ignore[attr-defined]
        assert lock.extend(Lease(token="c1:i")) is INVALIDATED  # type: ignore[attr-defined]
        with pytest.raises(LeaseInvalidated, match="timed out"):
            lock.extend(Lease(token="c1:u"))  # type: ignore[attr-defined]
        assert lock.release(Lease(token="c1:k")) == Kept(900)
        with pytest.raises(DriverBroken, match=re.escape("which answers extend only")):
            lock.release(Lease(token="c1:x"))
    finally:
        lock.close()


def test_a_renewal_is_dated_when_it_was_sent_and_a_foreign_clock_breaks_the_driver(
    tmp_path: Path, single: LocalTopology
) -> None:
    """``sent_ns`` is the renewal's time as the history has it: dating it from when its line
    was read, less ``age_ms``, counted the line's trip as lease (a Redisson watchdog's lease
    then outlived the key by 1.1 ms, and the client that took the key at its expiry was a
    hard overlap). A ``sent_ns`` from some other clock breaks the driver, in one line."""
    written = tmp_path / "sent"
    handler = f"""\
if m["type"] == "acquire":
    out(type="ok", id=m["id"], token="c1:a", validity_ms=200)
    at = time.monotonic_ns() - 5_000_000
    open({str(written)!r}, "w").write(str(at))
    out(type="renewed", token="c1:a", sent_ns=at)
else:
    out(type="renewed", token="c1:a", sent_ns=int(time.time() * 1e9))
    out(type="ok", id=m["id"])
"""
    loop = HELLO_THEN.format(caps="[]", handler=textwrap.indent(handler, "    "))
    command = _driver(tmp_path, loop)
    renewed: list[int] = []
    ctx = build_context(single.client_view("c1"), lock_name="k", ttl_ms=200,
                        report_renewal=lambda lease, validity, at, error=None: renewed.append(at))
    lock = cast(adapter.DriverLock, resolve(f"exec:{command}").factory(ctx))
    try:
        lease = lock.acquire()
        assert lease is not None
        deadline = time.monotonic() + 5
        while not renewed and time.monotonic() < deadline:
            time.sleep(0.01)
        assert renewed == [int(written.read_text())]
        with pytest.raises(DriverBroken, match=re.escape("read sent_ns from CLOCK_MONOTONIC")):
            lock.release(lease)
    finally:
        lock.close()


def test_a_driver_without_extend_has_no_extend(tmp_path: Path, single: LocalTopology) -> None:
    lock = _start(tmp_path, single, 'out(type="refused", id=m["id"])')
    try:
        assert not can_extend(lock)
        check_client(lock)  # still a valid client
    finally:
        lock.close()


def test_garbage_death_and_hangs_each_get_one_clear_line(
    tmp_path: Path, single: LocalTopology
) -> None:
    garbage = _start(tmp_path, single, 'print("this is not json", flush=True)')
    try:
        with pytest.raises(DriverBroken, match="not a JSON object: 'this is not json'"):
            garbage.acquire()
        with pytest.raises(DriverBroken):  # and stays broken, without a hot loop
            garbage.acquire()
    finally:
        garbage.close()
    no_id = _start(tmp_path, single, 'out(type="ok", token="c1:a")')
    try:
        with pytest.raises(
            DriverBroken, match=re.escape("not the protocol (Object missing required field `id`)")
        ):
            no_id.acquire()
    finally:
        no_id.close()
    dies = _start(tmp_path, single, 'sys.stderr.write("RuntimeError: boom\\n"); sys.exit(3)')
    try:
        with pytest.raises(
            DriverBroken,
            match=re.escape("exited with status 3 (stderr: RuntimeError: boom)"),
        ):
            dies.acquire()
    finally:
        dies.close()
    hangs = _start(tmp_path, single, "time.sleep(60)")
    hangs.op_timeout_s = 0.5
    started = time.monotonic()
    try:
        with pytest.raises(
            DriverBroken, match=re.escape("did not answer acquire #1 within 0.5 s")
        ):
            hangs.acquire()
        assert time.monotonic() - started < 3
    finally:
        hangs.close()


def test_a_driver_that_fails_its_hello_is_one_usage_line(
    tmp_path: Path, single: LocalTopology
) -> None:
    refuses = _driver(
        tmp_path, 'sys.stdin.readline()\nout(type="hello", ok=False, message="needs 3 masters")\n'
    )
    with pytest.raises(UsageError, match="refused to start: needs 3 masters"):
        resolve(f"exec:{refuses}").factory(_ctx(single))
    with pytest.raises(UsageError, match="is not on PATH"):
        resolve("exec:no-such-driver-anywhere --flag")
    with pytest.raises(UsageError, match="give the driver's command"):
        resolve("exec:")


def test_the_hello_names_every_node_and_sentinel_through_the_clients_proxies(
    sentinel: LocalTopology,
) -> None:
    view = sentinel.client_view("c2")
    hello = json.loads(encode(adapter.hello(build_context(view, lock_name="k", ttl_ms=300))))
    assert hello["client_id"] == "c2" and hello["ttl_ms"] == 300 and hello["lock_name"] == "k"
    assert [(n["host"], n["port"]) for n in hello["nodes"]] == [tuple(a) for a in view.nodes]
    assert [(s["host"], s["port"]) for s in hello["sentinels"]] == [
        tuple(a) for a in view.sentinels
    ]
    assert hello["master_name"] == view.master_name
    assert {k: (v["host"], v["port"]) for k, v in hello["route"].items()} == {
        k: tuple(v) for k, v in view.route.items()
    }
    schema = json.loads(Path("docs/driver-protocol.schema.json").read_text())["$defs"]["hello"]
    assert set(schema["required"]) <= set(hello) <= set(schema["properties"])


class RecordingPausePoints:
    """Pause points as a driver sees them through its ``LockContext``, recording each command
    announced to them (``armed`` non-empty: announce; empty: do not)."""

    def __init__(self, armed: tuple[str, ...]) -> None:
        self.armed = armed
        self.announcing = bool(armed)
        self.commands: list[str] = []

    def before_command(self, command: str) -> None:
        self.commands.append(command)

    def failed(self, op: str, error: str) -> None:
        """Errors are not what this test counts."""

    def sent_in_background(self, command: str) -> None:
        """Nor are background commands."""


@pytest.mark.parametrize("armed", [("a point",), ()], ids=["armed", "unarmed"])
def test_a_driver_announces_its_commands_to_the_pause_points_of_its_context(
    single: LocalTopology, armed: tuple[str, ...]
) -> None:
    """The harness's injector reaches a driver through ``ctx.pause_points`` (the worker hands
    it to ``build_context``), never through an import of the workload."""
    points = RecordingPausePoints(armed)
    ctx = build_context(single.client_view("c1"), lock_name="k", ttl_ms=500, pause_points=points)
    lock = resolve(f"exec:{sys.executable} {EXAMPLE}").factory(ctx)
    try:
        lease = lock.acquire()
        assert lease and lock.release(lease)
    finally:
        lock.close()  # type: ignore[attr-defined]
        ctx.close()
    assert points.commands == (["SET", "EVAL"] if armed else [])


def test_client_pause_at_is_refused_up_front_for_a_driver_without_pause_points(
    tmp_path: Path,
) -> None:
    plain = _driver(
        tmp_path,
        'm = json.loads(sys.stdin.readline())\nout(type="describe", capabilities=[])\n',
    )
    pause_at = [FAULTS["client-pause-at"]]
    with pytest.raises(
        UsageError,
        match=r"^lock 'exec:.*': client-pause-at needs a driver with the 'pause-points' "
        r"capability \(it announces each command before sending it\), which this one does not "
        r"announce \(docs/driver-protocol.md\)$",
    ):
        resolve(f"exec:{plain}").check_faults(pause_at)
    resolve(f"exec:{plain}").check_faults([FAULTS["client-pause"], FAULTS["slow-work"]])  # fine
    resolve("jedis-get-then-del").check_faults(pause_at)  # has the capability
    resolve("lua").check_faults(pause_at)  # Python locks take every fault


def test_the_docs_worked_example_driver_runs_with_both_capabilities(tmp_path: Path) -> None:
    """examples/drivers/python/driver.py (docs/driver-protocol.md): plain Python, RESP over a
    socket, extend and pause-points: paused before its release's EVAL, never hard."""
    lock = f"exec:{sys.executable} {EXAMPLE}"
    resolve(lock).check_faults([FAULTS["client-pause-at"]])  # it announces pause-points
    campaign = Campaign.from_options(
        lock,
        "client-pause-at:command=EVAL,partition",
        duration_s=5.0,
        work_ms=150,
        extend_during_work=True,
    )
    outcome = run_campaign(campaign, tmp_path)
    events = h.read_history(outcome.run_dir / "history.jsonl")
    fired = [e for e in events if e.f == h.PAUSE_POINT]
    assert fired and all(e.value["command"] == "EVAL" for e in fired)
    assert any(e.f == h.EXTEND and e.type == h.OK for e in events)
    assert outcome.verdict.hard_violations == 0, outcome.verdict.explanations[:2]
    assert outcome.completed_ops > 20
