"""The Rust driver kit (chaos/drivers/kits/rust/) and the bundled driver written on it,
``rust-redlock`` (the ``redlock`` crate 2.0.0), on real Redis.

redis-rs has no command hook, so the kit puts a RESP proxy of its own in front of each node:
these tests hold it to what a hook must do — announce each command of a request and hold it
until ``go`` (a library deadline does not run meanwhile), skip connection set-up, see every
reply, so a release whose library returns nothing (``RedLock::unlock`` returns ``()``) is
answered by the quorum rule over what the nodes said, bound a library that never returns and
release a grant that comes too late, and report a command that leaves after its request was
answered as ``sent``, not as the next request's. And a Rust binary reads its wall clock
through libc, so libfaketime moves it (the ``faked-clock`` capability), and the crate's
``usize`` validity, when an acquire outlasts the TTL, wraps into a claim of ~1.8e19 ms that
the driver reports as it is.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from prerequisites import driver_gap, need

from chaos import locks
from chaos.cli import main
from chaos.drivers import adapter
from chaos.drivers.catalog import BUNDLED_DRIVERS, build_dirs
from chaos.drivers.process import DriverProcess
from chaos.drivers.protocol import (
    Acquire,
    Before,
    Error,
    FromDriver,
    Go,
    HelloReply,
)
from chaos.locks.context import build_context
from chaos.topology import LocalTopology
from chaos.workload import clocks

KIT = Path(__file__).resolve().parents[2] / "chaos" / "drivers" / "kits" / "rust"
TTL_MS = 200
# The kit answers within 0.8 × the harness's bound, max(3 s, 4 × TTL): 2.4 s at this TTL.
KIT_BOUND_S = 0.8 * max(3.0, 4 * TTL_MS / 1000)


def _built_kit() -> Path:
    """The drivers build directory holding the built Rust kit (a skip when there is none)."""
    for root in build_dirs():
        if (root / "kits" / "rust" / ".stamp").exists():
            return root
    need(driver_gap("rust-redlock") or "the Rust kit is not built: lockchaos setup --drivers")
    raise AssertionError("unreachable")


def _cargo_env(root: Path) -> dict[str, str]:
    """cargo with the registry and target directory the drivers were built with: offline,
    and only what changed is compiled."""
    need("" if shutil.which("cargo") else "cargo is not on PATH")
    return {**os.environ, "CARGO_HOME": str(root / "cargo" / "home"),
            "CARGO_TARGET_DIR": str(root / "cargo" / "target")}  # fmt: skip


class Stalling(list[str]):
    """Armed pause points that record each announced command and hold the ``nth`` SET for
    ``hold_s`` before letting it go, as a client stopped there would be."""

    armed = ("any command",)
    announcing = True

    def __init__(self, nth: int, hold_s: float) -> None:
        super().__init__()
        self.nth, self.hold_s = nth, hold_s

    def before_command(self, command: str) -> None:
        self.append(command)
        if command == "SET" and self.count("SET") == self.nth:
            time.sleep(self.hold_s)

    def failed(self, op: str, error: str) -> None:
        """Errors are not what these tests count."""

    def sent_in_background(self, command: str) -> None:
        """Nor are background commands."""


def test_the_kits_own_tests_pass() -> None:
    """The quorum rule, RESP parsing, the floor of a validity (the kit's Rust unit tests)."""
    root = _built_kit()
    done = subprocess.run(
        ["cargo", "test", "--release", "--locked", "--offline", "--manifest-path",
         str(KIT / "Cargo.toml")],
        env=_cargo_env(root), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "test result: ok" in done.stdout


def test_rust_redlock_announces_its_commands_and_claims_the_validity_its_usize_wrapped_to(
    standalone: LocalTopology,
) -> None:
    """Five SETs, one per master, and no connection set-up (each SET has its own connection,
    whose CLIENT SETINFO the proxy forwards unannounced). Held before the 4th SET for longer
    than the TTL, the acquire outlasts it: the crate's ``ttl - drift - elapsed`` wraps, it
    grants a lease already expired on the first masters, and the driver reports the validity
    it computed (plus the request's time), not a clamped one."""
    need(driver_gap("rust-redlock"))
    points = Stalling(nth=4, hold_s=0.3)
    ctx = build_context(standalone.client_view("c1"), lock_name="k", ttl_ms=TTL_MS,
                        pause_points=points)  # fmt: skip
    lock = locks.load("rust-redlock")(ctx)
    try:
        lease = lock.acquire()
        assert lease is not None and lease.validity_ms is not None
        assert lease.validity_ms > 1.8e19  # 2**64 ms, less the few the crate subtracted
        assert points == ["SET"] * len(standalone.nodes)
        # Its keys on the first three masters expired while the fourth SET was held: the
        # compare-and-delete found nothing there, a quorum said no.
        assert lock.release(lease) is False
        points.nth = 0  # no more holds: an ordinary acquire claims less than the TTL
        lease = lock.acquire()
        assert lease is not None and lease.validity_ms is not None
        assert 0 < lease.validity_ms < 2 * TTL_MS  # the crate's own claim, not wrapped
        assert lock.release(lease) is True
    finally:
        lock.close()  # type: ignore[attr-defined]
        ctx.close()


def test_an_unlock_that_returns_nothing_is_answered_from_what_the_nodes_said(
    standalone: LocalTopology,
) -> None:
    """``RedLock::unlock`` returns ``()``: the kit's proxies read each node's reply to the
    compare-and-delete script, and the quorum rule answers. Deleted on a quorum: released;
    the key gone from three of five (someone else's now, or expired): refused; three that do
    not answer (writes paused on the node, so the script waits past the socket timeout):
    indeterminate."""
    need(driver_gap("rust-redlock"))
    ctx = build_context(standalone.client_view("c1"), lock_name="k", ttl_ms=5000)
    lock = locks.load("rust-redlock")(ctx)
    minority, majority = standalone.nodes[3:], standalone.nodes[:3]
    try:
        lease = lock.acquire()
        assert lease is not None and lock.release(lease) is True
        lease = lock.acquire()
        assert lease is not None
        for node in majority:
            with node.client() as conn:
                conn.delete("k")
        assert lock.release(lease) is False  # two deleted it, three said it was not theirs
        lease = lock.acquire()
        assert lease is not None
        for node in majority:
            with node.client() as conn:
                conn.execute_command("CLIENT", "PAUSE", 3000, "WRITE")
        with pytest.raises(adapter.DriverError):
            lock.release(lease)
    finally:
        for node in majority:
            with node.client() as conn:
                conn.execute_command("CLIENT", "UNPAUSE")
        lock.close()  # type: ignore[attr-defined]
        ctx.close()
    for node in minority:
        with node.client() as conn:
            assert conn.exists("k") == 0  # the two that answered did delete it


class Conformance:
    """The kit's conformance driver, said hello to on the single node (through its proxy
    link) at TTL_MS, with what it wrote: requests' messages in turn (``next``), its unasked
    ``sent`` commands as they come, its ``log`` lines (the harness keeps them as its tail)."""

    def __init__(self, root: Path, topology: LocalTopology, env: dict[str, str]) -> None:
        self.ctx = build_context(topology.client_view("c1"), lock_name="k", ttl_ms=TTL_MS)
        self.driver = DriverProcess(
            [str(root / "kits" / "rust" / "lockchaos-conformance-driver")],
            label="rust-conformance", env=env,
        )
        self.sent: list[str] = []
        self.driver.on_sent = lambda message: self.sent.append(message.command)
        self.driver.send(adapter.hello(self.ctx))
        assert isinstance(self.next(5.0, HelloReply), HelloReply)

    def close(self) -> None:
        self.driver.close()
        self.ctx.close()

    def next(self, timeout_s: float, *kinds: type[FromDriver]) -> FromDriver:
        """The next message of one of ``kinds`` within ``timeout_s``, answering each
        ``before`` with its ``go`` on the way."""
        deadline = time.monotonic() + timeout_s
        while (left := deadline - time.monotonic()) > 0:
            message = self.driver.receive(left)
            if isinstance(message, Before):
                self.driver.send(Go(id=message.id))
            if isinstance(message, kinds):
                return message
        raise AssertionError(f"no {[k.__name__ for k in kinds]} within {timeout_s} s")

    def logged(self, prefix: str, within_s: float) -> str:
        """The rest of the first log line starting with ``prefix``, once it came."""
        lines = _within(within_s, lambda: [line for line in self.driver.stderr_tail
                                           if line.startswith(prefix)])  # fmt: skip
        assert lines, f"no log line {prefix!r} within {within_s} s"
        return lines[0][len(prefix):]


def _within(timeout_s: float, found: Callable[[], list[str]]) -> list[str]:
    """What ``found`` returns once it is not empty, or its last (empty) answer."""
    deadline = time.monotonic() + timeout_s
    while not (seen := found()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return seen


@pytest.fixture
def conformance(single: LocalTopology, request: pytest.FixtureRequest) -> Iterator[Conformance]:
    """The conformance driver with ``LOCKCHAOS_CONFORMANCE`` = the test's parameter."""
    driver = Conformance(_built_kit(), single, {"LOCKCHAOS_CONFORMANCE": request.param})
    try:
        yield driver
    finally:
        driver.close()


def _late_release(driver: Conformance, rid: int, within_s: float) -> str:
    """How the kit's release of acquire ``rid``'s late grant went (its log line)."""
    return driver.logged(f"the late grant of acquire #{rid}, released: ", within_s)


@pytest.mark.parametrize("conformance", ["retry-forever"], indirect=True)
def test_a_library_that_retries_forever_is_answered_in_time_and_its_late_grant_released(
    conformance: Conformance, single: LocalTopology
) -> None:
    """Its acquire announces a SET every 20 ms while the key is someone else's; the kit
    counts only the library's own time (not the harness's between ``before`` and ``go``) and
    answers indeterminate within its bound. When the key frees, the library's grant comes
    too late for anyone: the kit releases it at once, with commands reported as sent."""
    driver = conformance
    with single.nodes[0].client() as conn:
        conn.set("k", "someone else", px=10_000)
    start = time.monotonic()
    driver.driver.send(Acquire(id=1, announce=True))
    answer = driver.next(5.0, Error)
    assert isinstance(answer, Error) and answer.definite is False and answer.id == 1
    assert KIT_BOUND_S - 0.1 < time.monotonic() - start < KIT_BOUND_S + 0.5
    assert _within(1.0, lambda: driver.sent)[:1] == ["SET"]  # no request's any more
    with single.nodes[0].client() as conn:
        conn.delete("k")
    assert '"type":"ok"' in _late_release(driver, 1, within_s=2.0)
    with single.nodes[0].client() as conn:
        assert conn.exists("k") == 0


@pytest.mark.parametrize("conformance", ["late-hook"], indirect=True)
def test_a_command_sent_after_its_request_was_answered_is_sent_not_announced(
    conformance: Conformance,
) -> None:
    """The library sends its SET after the kit's bound: the kit answered the acquire
    indeterminate, so the SET is no request's — a ``sent`` line, never a ``before`` (not even
    of the next request, whose own library call is running when it leaves) — and the grant
    it brings is released."""
    driver = conformance
    driver.driver.send(Acquire(id=1, announce=True))
    answer = driver.next(5.0, Error, Before)
    assert isinstance(answer, Error) and answer.definite is False
    driver.driver.send(Acquire(id=2, announce=True))  # running while #1's SET leaves
    answer = driver.next(5.0, Error, Before)  # #2's: its library call overran too
    assert isinstance(answer, Error) and answer.definite is False
    # #1's SET and the EVAL releasing the grant it brought, both before #2 was answered
    assert driver.sent == ["SET", "EVAL"]
    assert '"type":"ok"' in _late_release(driver, 1, within_s=0.1)
    assert '"type":"ok"' in _late_release(driver, 2, within_s=5.0)
    assert driver.sent == ["SET", "EVAL"] * 2


def test_a_rust_binarys_wall_clock_follows_libfaketime(
    single: LocalTopology, tmp_path: Path
) -> None:
    """Why the kit announces ``faked-clock``: std's ``SystemTime`` reads the clock through
    libc's ``clock_gettime``, which libfaketime replaces (a pure-Go binary's does not). Under
    a client's clock file a day ahead, as ``client-clock`` writes it, the conformance driver's
    wall clock is a day ahead — and it still answers, its timed waits on the true monotonic
    clock."""
    clocks.set_offset(tmp_path, "c1", 86_400_000)
    driver = Conformance(_built_kit(), single, clocks.faked_env(tmp_path, "c1"))
    try:
        wall_ms = int(driver.logged("wall clock: ", 0.1).split()[0])
        assert abs(wall_ms / 1000 - (time.time() + 86_400)) < 60, wall_ms
        driver.driver.send(Acquire(id=1))
        assert driver.next(2.0, FromDriver)
    finally:
        driver.close()


def test_the_skeleton_passes_client_pause_and_partition_unedited(tmp_path: Path) -> None:
    """What ``lockchaos driver new --lang rust`` writes (the kit named by path), built by its
    own build.sh, runs under the faults a correct lock survives: exit 0."""
    root = _built_kit()
    project = tmp_path / "my-lock"
    shutil.copytree(KIT / "skeleton", project)
    manifest = project / "Cargo.toml"
    manifest.write_text(manifest.read_text().replace('path = ".."',
                                                     f'path = "{root / "kits" / "rust"}"'))
    env = _cargo_env(root)
    built = subprocess.run([str(project / "build.sh")], env=env, capture_output=True,
                           text=True, timeout=600)  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    binary = Path(env["CARGO_TARGET_DIR"]) / "release" / "my-lock-driver"
    code = main(["run", "--lock", f"exec:{binary}", "--faults", "client-pause,partition",
                 "--duration", "8", "--out", str(tmp_path / "reports")])  # fmt: skip
    assert code == 0


def test_rust_redlock_without_faults_passes(tmp_path: Path) -> None:
    need(driver_gap("rust-redlock"))
    assert BUNDLED_DRIVERS["rust-redlock"].info.topology == "standalone"
    code = main(["run", "--lock", "rust-redlock", "--duration", "3",
                 "--out", str(tmp_path / "reports")])  # fmt: skip
    assert code == 0
