"""The Rust driver kit (chaos/drivers/kits/rust/) and the bundled driver written on it,
``rust-redlock`` (the ``redlock`` crate 2.0.0), on real Redis — what the kit conformance
tests (tests/drivers/test_kit_conformance.py) and ``driver new``'s (test_driver_new.py) do
not already hold every kit to.

redis-rs has no command hook, so the kit puts a RESP proxy of its own in front of each node:
it announces each command of a request and holds it until ``go`` (the library's own clock
runs meanwhile, as in a pause), skips connection set-up, and sees every reply, so a release
whose library returns nothing (``RedLock::unlock`` returns ``()``) is answered by the quorum
rule over what the nodes said. A Rust binary reads its wall clock through libc, so
libfaketime moves it (the ``faked-clock`` capability). And the crate's ``usize`` validity,
when an acquire outlasts the TTL, wraps into a claim of ~1.8e19 ms that the driver reports as
it is.
"""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from prerequisites import driver_gap, need

from chaos.cli import main
from chaos.drivers import adapter
from chaos.drivers.catalog import BUNDLED_DRIVERS
from chaos.drivers.languages import LANGUAGES
from chaos.drivers.process import DriverProcess
from chaos.drivers.protocol import Acquire, HelloReply, Ok
from chaos.locks.context import build_context
from chaos.lockspec import resolve
from chaos.topology import LocalTopology
from chaos.workload import clocks

RUST = LANGUAGES["rust"]
TTL_MS = 200
KIT_BOUND_S = 0.8 * max(3.0, 4 * TTL_MS / 1000)  # 0.8 × the harness's bound: the kit's


def _built_kit() -> Path:
    """Where the Rust kit is built (its toolchain absent: a skip; present, not built: fail)."""
    need(f"no {', '.join(RUST.missing_tools())} on PATH" if RUST.missing_tools() else "")
    built = RUST.built()
    assert built is not None, "cargo is here but the Rust kit is built nowhere: make setup"
    return built


def _cargo_env(kit: Path) -> dict[str, str]:
    """cargo with the registry and target directory the kit was built with (its build
    directory's ``cargo/``): offline, and only what changed is compiled."""
    cargo = kit.parent.parent / "cargo"
    return {**os.environ, "CARGO_HOME": str(cargo / "home"),
            "CARGO_TARGET_DIR": str(cargo / "target")}  # fmt: skip


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
    done = subprocess.run(
        ["cargo", "test", "--release", "--locked", "--offline", "--manifest-path",
         str(RUST.source / "Cargo.toml")],
        env=_cargo_env(_built_kit()), capture_output=True, text=True, timeout=600,
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
    # A 1 s TTL: at 200 ms a loaded machine's ordinary five-master acquire outlasted it too, and
    # the second grant below wrapped as well (a fresh clone's CI, 1.8e19 ms).
    ttl_ms = 1000
    points = Stalling(nth=4, hold_s=1.2)
    ctx = build_context(standalone.client_view("c1"), lock_name="k", ttl_ms=ttl_ms,
                        pause_points=points)  # fmt: skip
    lock = resolve("rust-redlock").factory(ctx)
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
        assert 0 < lease.validity_ms < 2 * ttl_ms  # the crate's own claim, not wrapped
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
    lock = resolve("rust-redlock").factory(ctx)
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


def test_a_rust_binarys_wall_clock_follows_libfaketime(
    single: LocalTopology, tmp_path: Path
) -> None:
    """Why the kit announces ``faked-clock``: std's ``SystemTime`` reads the clock through
    libc's ``clock_gettime``, which libfaketime replaces (a pure-Go binary's does not). Under
    a client's clock file a day ahead, as ``client-clock`` writes it, the kit's conformance
    driver reads a wall clock a day ahead when it opens its lock (its log line) — and still
    serves, its timed waits on the true monotonic clock."""
    kit = _built_kit()
    clocks.set_offset(tmp_path, "c1", 86_400_000)
    ctx = build_context(single.client_view("c1"), lock_name="k", ttl_ms=TTL_MS)
    driver = DriverProcess([str(RUST.conformance())], label="rust-conformance",
                           env={**clocks.faked_env(tmp_path, "c1"), "LOCKCHAOS_KIT": str(kit)})
    try:
        driver.send(adapter.hello(ctx))
        assert isinstance(driver.receive(adapter.HELLO_TIMEOUT_S), HelloReply)
        [logged] = [line for line in driver.stderr_tail if line.startswith("wall clock: ")]
        wall_ms = int(logged.split()[2])
        assert abs(wall_ms / 1000 - (time.time() + 86_400)) < 60, logged
        driver.send(Acquire(id=1))
        assert isinstance(driver.receive(KIT_BOUND_S), Ok)
    finally:
        driver.close()
        ctx.close()


def test_rust_redlock_without_faults_passes(tmp_path: Path) -> None:
    need(driver_gap("rust-redlock"))
    assert BUNDLED_DRIVERS["rust-redlock"].info.topology == "standalone"
    code = main(["run", "--lock", "rust-redlock", "--duration", "3",
                 "--out", str(tmp_path / "reports")])  # fmt: skip
    assert code == 0
