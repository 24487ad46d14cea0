"""Real processes, no mocks: the topologies come up, route through Toxiproxy, take faults and
go away completely."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import redis

from chaos import topology
from chaos.cli import main
from chaos.errors import UsageError
from chaos.topology import LocalTopology, SentinelTuning, ToxiproxyAPI, ports
from chaos.topology.node import wait_until
from chaos.topology.ports import free_ports
from chaos.topology.processes import alive


def _conn(address: tuple[str, int], timeout: float = 0.5) -> redis.Redis:
    return redis.Redis(*address, socket_timeout=timeout, socket_connect_timeout=timeout)


def test_standalone_routes_every_client_through_its_own_proxies(
    standalone: LocalTopology,
) -> None:
    view1, view2 = standalone.client_view("c1"), standalone.client_view("c2")
    assert len(view1.nodes) == len(standalone.nodes) == 5
    assert set(view1.nodes).isdisjoint(view2.nodes)
    direct_ports = {node.port for node in standalone.nodes}
    for i, address in enumerate(view1.nodes):
        assert address[1] not in direct_ports
        _conn(address).set("k", f"via-c1-{i}")
        assert standalone.nodes[i].client().get("k") == f"via-c1-{i}".encode()
    assert _conn(view1.resource).ping()


def test_cutting_one_clients_link_to_one_node_leaves_everyone_else_alone(
    standalone: LocalTopology,
) -> None:
    view1, view2 = standalone.client_view("c1"), standalone.client_view("c2")
    cut = standalone.client_links("c1")[2]
    standalone.toxiproxy.disable(cut.name)
    with pytest.raises(redis.ConnectionError):
        _conn(view1.nodes[2]).ping()
    for i in (0, 1, 3, 4):
        assert _conn(view1.nodes[i]).ping()
    for address in view2.nodes:
        assert _conn(address).ping()
    assert standalone.nodes[2].ping()
    standalone.toxiproxy.enable(cut.name)
    assert _conn(view1.nodes[2]).ping()


def test_sentinel_topology_is_ready_and_clients_find_the_master_through_their_proxies(
    sentinel: LocalTopology,
) -> None:
    assert [n.info("replication")["role"] for n in sentinel.nodes] == [
        "master",
        "slave",
        "slave",
    ]
    assert sentinel.master_index() == 0
    view = sentinel.client_view("c1")
    reported = redis.sentinel.Sentinel(list(view.sentinels)).discover_master(view.master_name)
    assert view.route[f"{reported[0]}:{reported[1]}"] == view.nodes[0]
    _conn(view.nodes[0]).set("through-proxy", "1")
    wait_until(lambda: sentinel.nodes[1].client().get("through-proxy") == b"1", "replication")
    description = sentinel.describe()
    assert [n["role"] for n in description["nodes"]] == ["master", "replica", "replica"]
    assert len(description["sentinels"]) == 3


def test_cutting_replication_stops_writes_reaching_replicas_and_healing_resyncs() -> None:
    # A long down-after keeps Sentinel from failing over while replication is cut.
    with topology.start("sentinel", tuning=SentinelTuning(down_after_ms=30_000)) as topo:
        master, replica = topo.nodes[0], topo.nodes[1]
        master.client().set("before", "1")
        wait_until(lambda: replica.client().get("before") == b"1", "initial replication")
        topo.toxiproxy.disable(topo.internal[0].name)
        master.client().set("during", "1")
        # WAIT for a replica to acknowledge the write (300 ms at most): none can, replication
        # is cut — a replica that is connected would have had it in well under 300 ms
        assert master.client().wait(1, 300) == 0
        assert replica.client().get("during") is None
        assert replica.info("replication")["master_link_status"] == "down"
        topo.toxiproxy.enable(topo.internal[0].name)
        wait_until(lambda: replica.client().get("during") == b"1", "resync after healing")


def test_clock_jumps_forward_expire_keys_and_backward_extend_them(single: LocalTopology) -> None:
    node = single.nodes[0]
    conn = node.client()
    conn.set("forward", "1", ex=10)
    conn.set("backward", "1", ex=10)
    node.set_clock_offset(+20)
    assert conn.get("forward") is None  # expired at once
    node.set_clock_offset(0)
    conn.set("backward", "1", ex=10)
    node.set_clock_offset(-20)
    left_ms: int = conn.pttl("backward")  # type: ignore[assignment]  # sync client
    assert left_ms > 25_000  # 10 s left plus the 20 s the clock went back
    assert conn.get("backward") == b"1"


def test_pause_resume_kill_restart(single: LocalTopology) -> None:
    node = single.nodes[0]
    node.client().set("k", "v")
    node.pause()
    try:
        with pytest.raises(redis.TimeoutError):
            node.client(socket_timeout=0.3).ping()
    finally:
        node.resume()
    assert node.client().get("k") == b"v"
    old_pid = node.pid
    node.restart()
    assert node.pid != old_pid
    assert node.client().get("k") is None
    assert node.client().dbsize() == 0


def test_a_node_restarted_from_a_thread_outlives_the_thread(single: LocalTopology) -> None:
    """The nemesis restarts nodes from its own thread, which ends after the schedule's last
    fault. A child dies with the thread that forked it (``PDEATHSIG``): a redlock campaign's
    crash-restart left three of five nodes dead from then on, and no client ever won a quorum
    again (the audit's redlock × crash-restart cell, 1 of 3 seeds)."""
    node = single.nodes[0]
    restarter = threading.Thread(target=node.restart)
    restarter.start()
    restarter.join(timeout=30)
    time.sleep(0.3)  # PDEATHSIG acts at once: a node it killed is gone by now
    assert node.running
    assert node.ping()


def test_restart_with_aof_always_keeps_acknowledged_writes() -> None:
    with topology.start("standalone", nodes=1, persistence="aof-always") as topo:
        node = topo.nodes[0]
        node.client().set("durable", "1")
        node.restart(empty=False)
        assert node.client().get("durable") == b"1"


def test_a_port_chosen_is_not_chosen_again_before_its_server_binds_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Two topologies starting at once (two pytest workers) once both found one port free:
    the second Redis to bind it exited. A chosen port is claimed, so the next choice skips it
    even though nothing listens on it yet."""
    monkeypatch.setattr(ports, "CLAIMS", tmp_path)
    first, second = ports.free_ports(2)  # free, and claimed under tmp_path
    (tmp_path / str(first)).unlink()
    (tmp_path / str(second)).unlink()
    draws = iter([first, first, second])
    monkeypatch.setattr(ports._pick, "randrange", lambda low, high: next(draws))
    assert ports.free_ports(1) == [first]
    assert ports.free_ports(1) == [second]  # `first` is free, but claimed a moment ago


def test_toxiproxy_unreachable_is_a_usage_error() -> None:
    (port,) = free_ports(1)
    with pytest.raises(UsageError, match="unreachable"):
        ToxiproxyAPI(port).wait_ready(timeout_s=0.3)


def test_missing_binaries_name_make_setup(tmp_path: Path) -> None:
    code = subprocess.run(
        [sys.executable, "-m", "chaos.cli", "up", "--hold", "0.1"],
        env={**os.environ, "LOCKCHAOS_CACHE": str(tmp_path), "PATH": str(tmp_path / "no-bin")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert code.returncode == 2
    assert code.stderr.strip().splitlines() == [
        "lockchaos: redis-server not found: run `lockchaos setup` (or `make setup` in this "
        "checkout), or set LOCKCHAOS_REDIS_SERVER"
    ]


@pytest.mark.parametrize("args", [["--nodes", "0"], ["--topology", "mesh"], ["--hold", "-1"]])
def test_bad_input_is_one_line_and_exit_2(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["up", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("lockchaos: ")


def test_up_prints_addresses_as_json_and_tears_down() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "chaos.cli", "up", "--nodes", "2", "--hold", "0.2", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    description = json.loads(out)
    assert [n["name"] for n in description["nodes"]] == ["n0", "n1"]
    assert set(description["clients"]) == {"c1", "c2"}
    assert not Path(description["run_dir"]).exists()
    with pytest.raises(redis.ConnectionError):
        host, port = description["nodes"][0]["direct"].split(":")
        _conn((host, int(port))).ping()


_RUNNER = textwrap.dedent(
    """
    import json, sys, time
    from chaos import topology
    topo = topology.start(sys.argv[1])
    pids = [p.pid for p in topo.supervisor._children]
    print(json.dumps({"run_dir": str(topo.run_dir), "pids": pids}), flush=True)
    time.sleep(60)
    """
)


@pytest.mark.parametrize("kind", topology.SHAPES)
def test_no_child_survives_sigkill_of_the_runner(kind: str) -> None:
    runner = subprocess.Popen(
        [sys.executable, "-c", _RUNNER, kind], stdout=subprocess.PIPE, text=True
    )
    assert runner.stdout is not None
    started = json.loads(runner.stdout.readline())
    assert started["pids"] and all(alive(pid) for pid in started["pids"])
    runner.send_signal(signal.SIGKILL)
    runner.wait(timeout=10)
    wait_until(
        lambda: not any(alive(pid) for pid in started["pids"]),
        "children to die",
        timeout_s=10,
    )
    wait_until(lambda: not Path(started["run_dir"]).exists(), "run dir removal", timeout_s=10)


def test_sigterm_of_up_tears_everything_down() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "chaos.cli", "up", "--json", "--hold", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    description = json.loads(proc.stdout.readline())
    run_dir = Path(description["run_dir"])
    pids = [int(line.split()[0]) for line in (run_dir / "pids").read_text().splitlines()]
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 128 + signal.SIGTERM
    assert not run_dir.exists()
    assert not any(alive(pid) for pid in pids)


def _as_a_shell_starts_it() -> None:
    """SIGINT at its default and unblocked: a child inherits an ignored SIGINT, and a
    blocked one, from whoever ignores or blocks it (a test runner's worker), and Python then
    never raises KeyboardInterrupt — `up --hold 0` held on past the wait in a fresh clone's
    CI run."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def test_ctrl_c_of_up_tears_everything_down(tmp_path: Path) -> None:
    stderr = tmp_path / "stderr"
    with stderr.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-X", "faulthandler", "-m", "chaos.cli", "up", "--json",
             "--hold", "0"],
            stdout=subprocess.PIPE, stderr=err, text=True, preexec_fn=_as_a_shell_starts_it,
        )
    assert proc.stdout is not None
    description = json.loads(proc.stdout.readline())
    run_dir = Path(description["run_dir"])
    pids = [int(line.split()[0]) for line in (run_dir / "pids").read_text().splitlines()]
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:  # where it hangs: faulthandler prints every thread
        proc.send_signal(signal.SIGABRT)
        proc.wait(timeout=10)
        pytest.fail(f"up did not end 20 s after Ctrl-C; its threads:\n{stderr.read_text()}")
    assert proc.returncode == 0, stderr.read_text()
    assert not run_dir.exists()
    assert not any(alive(pid) for pid in pids)


def test_exception_inside_the_block_tears_down() -> None:
    with pytest.raises(RuntimeError, match="boom"), topology.start("standalone", nodes=1) as topo:
        run_dir, pid = topo.run_dir, topo.nodes[0].pid
        raise RuntimeError("boom")
    assert not run_dir.exists()
    assert not alive(pid)
