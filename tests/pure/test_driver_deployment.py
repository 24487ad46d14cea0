"""A driver tells the harness its deployment: what its lock needs of the topology (``describe``'s
``topology`` and ``min_nodes``, which ``--topology auto`` uses as it does a bundled lock's
entry) and what it can do for a fault (``faked-clock``: without it, ``client-clock`` would run
on the true clock, so it is refused up front). Pure: the drivers here are short Python
programs written by the test, asked ``describe``; nothing starts Redis."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from chaos.campaign import Campaign, Layout, choose_layout
from chaos.cli import main
from chaos.drivers import catalog
from chaos.drivers.protocol import Described, decode
from chaos.errors import UsageError
from chaos.experiments.audit import AuditPlan
from chaos.locks.contract import FAKED_CLOCK
from chaos.lockspec import resolve
from chaos.nemesis import FAULTS

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "docs/driver-protocol.schema.json").read_text()
)["$defs"]


def _driver(tmp_path: Path, name: str, described: dict[str, object] | None) -> str:
    """``exec:`` for a driver that answers ``describe`` with ``described`` (None: a driver
    that does not know ``describe`` and waits for more input, as one written for hello only)."""
    script = tmp_path / f"{name}.py"
    answer = "pass" if described is None else (
        f"print(json.dumps({{'type': 'describe', **{described!r}}}), flush=True)"
    )
    script.write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    if json.loads(line)['type'] == 'describe':\n"
        f"        {answer}\n"
    )
    return f"exec:{sys.executable} {script}"


def test_a_redlock_driver_that_declares_independent_masters_gets_them_from_auto(
    tmp_path: Path,
) -> None:
    redlock = _driver(tmp_path, "redlock", {"capabilities": ["extend", "pause-points"],
                                            "topology": "standalone", "min_nodes": 3})
    assert choose_layout(Campaign(redlock)) == Layout("standalone", 5, "none")
    assert choose_layout(Campaign(redlock, nodes=3)).nodes == 3
    info = resolve(redlock).info
    assert info is not None and info.extend and info.needs == "standalone, ≥3 nodes"
    with pytest.raises(UsageError, match=r"needs at least 3 nodes \(got 2\)$"):
        choose_layout(Campaign(redlock, nodes=2))
    with pytest.raises(UsageError, match="needs independent masters: use --topology standalone"):
        choose_layout(Campaign(redlock, topology="sentinel"))
    # The audit's campaigns take the same layout: it no longer exits 2 on one node.
    AuditPlan(Campaign(redlock)).validate()
    many = _driver(tmp_path, "many", {"capabilities": [], "topology": "standalone",
                                      "min_nodes": 7})
    assert choose_layout(Campaign(many)).nodes == 7


def test_a_driver_that_declares_nothing_runs_on_one_node_without_waiting(
    tmp_path: Path,
) -> None:
    """Neither field (the protocol before them), or no ``describe`` at all: one node, as
    before; a driver that ignores ``describe`` sees its input end and costs no wait."""
    plain = _driver(tmp_path, "plain", {"capabilities": []})
    assert choose_layout(Campaign(plain)) == Layout("standalone", 1, "none")
    started = time.monotonic()
    silent = _driver(tmp_path, "silent", None)
    assert resolve(silent).info is None
    assert choose_layout(Campaign(silent)).nodes == 1
    assert time.monotonic() - started < 10  # not the 30 s a hello may take


def test_the_schema_and_the_harness_agree_on_describe() -> None:
    properties = SCHEMA["describe"]["properties"]
    assert set(Described.__struct_fields__) <= set(properties)
    assert properties["topology"]["enum"] == ["any", "standalone"]
    assert properties["min_nodes"]["minimum"] == 1
    assert FAKED_CLOCK in SCHEMA["capability"]["enum"]
    with pytest.raises(Exception, match="not the protocol"):
        decode('{"type": "describe", "capabilities": [], "min_nodes": 0}')
    described = decode('{"type": "describe", "capabilities": [], "min_nodes": 2}')
    assert isinstance(described, Described) and described.topology == "any"


def test_client_clock_is_refused_up_front_to_a_driver_whose_clock_libfaketime_cannot_move(
    tmp_path: Path,
) -> None:
    """redsync is pure Go (the clock through the vDSO, not libc): client-clock would change
    nothing and pass. The JVM and Node drivers, a driver that announces ``faked-clock`` and
    every Python lock take it."""
    clock = [FAULTS["client-clock"]]
    assert FAULTS["client-clock"].client_needs == {FAKED_CLOCK}
    with pytest.raises(
        UsageError,
        match=r"^lock 'redsync': client-clock needs a driver with the 'faked-clock' capability "
        r"\(libfaketime moves its wall clock\), which this one does not announce "
        r"\(docs/driver-protocol.md\)$",
    ):
        resolve("redsync").check_faults(clock)
    for name, bundled in catalog.BUNDLED_DRIVERS.items():
        assert (FAKED_CLOCK in bundled.capabilities) == (bundled.language != "go"), name
        if bundled.language != "go":
            resolve(name).check_faults(clock)
    resolve("getset-timestamp").check_faults(clock)
    go = _driver(tmp_path, "go", {"capabilities": ["pause-points"], "language": "go"})
    with pytest.raises(UsageError, match="'faked-clock' capability"):
        resolve(go).check_faults(clock)
    libc = _driver(tmp_path, "libc", {"capabilities": ["faked-clock"], "language": "python"})
    resolve(libc).check_faults(clock)


def test_run_refuses_client_clock_on_such_a_driver_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    go = _driver(tmp_path, "go", {"capabilities": ["pause-points"], "language": "go"})
    out = tmp_path / "out"
    assert main(["run", "--lock", go, "--faults", "client-clock", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "client-clock needs a driver with the 'faked-clock'" in err
    assert not out.exists()


# -- a Python lock declares its deployment like a driver (issue 34 points 1 and 7) ------------

PYTHON_REDLOCK = '''
from chaos.locks.contract import grants
from chaos.locks.lua import make as lua


@grants(topology="standalone", min_nodes=3)
def redlock(ctx):
    return lua(ctx)


@grants(ttl_granularity_ms=1000)
def whole_seconds(ctx):
    return lua(ctx)


@grants(topology="cluster")
def nonsense(ctx):
    return lua(ctx)


@grants(min_nodes=0)
def none_at_all(ctx):
    return lua(ctx)
'''


def test_a_python_redlock_that_declares_its_masters_gets_them_from_auto(tmp_path: Path) -> None:
    """Before ``grants(topology=, min_nodes=)``, a Python Redlock could not say it needs N
    masters: ``--topology auto`` gave it one node."""
    module = tmp_path / "mine.py"
    module.write_text(PYTHON_REDLOCK)
    redlock = f"{module}:redlock"
    assert choose_layout(Campaign(redlock)) == Layout("standalone", 5, "none")
    with pytest.raises(UsageError, match=r"needs at least 3 nodes \(got 2\)$"):
        choose_layout(Campaign(redlock, nodes=2))
    with pytest.raises(UsageError, match="declares topology='cluster': 'any', or 'standalone'"):
        resolve(f"{module}:nonsense")
    with pytest.raises(UsageError, match=r"declares min_nodes=0: a whole number >= 1$"):
        resolve(f"{module}:none_at_all")


def test_a_ttl_the_lock_cannot_express_is_refused_up_front(tmp_path: Path) -> None:
    """A lock that takes whole seconds would round a 200 ms TTL to 0 (an error) or to 1 s (a
    lease five times longer than the checker holds it to): the run is refused in one line; a
    driver says it in ``describe`` (``ttl_granularity_ms``), a Python lock in ``grants``."""
    module = tmp_path / "mine.py"
    module.write_text(PYTHON_REDLOCK)
    seconds = f"{module}:whole_seconds"
    driver = _driver(tmp_path, "seconds", {"capabilities": [], "ttl_granularity_ms": 1000})
    for lock in (seconds, driver):
        with pytest.raises(UsageError, match=r"expresses its TTL in multiples of 1000 ms "
                                             r"\(whole seconds\): --ttl-ms 200 cannot be kept; "
                                             r"use --ttl-ms 1000$"):
            Campaign(lock).validate()
        with pytest.raises(UsageError, match=r"use --ttl-ms 1000 or 2000$"):
            Campaign(lock, ttl_ms=1500).validate()
        Campaign(lock, ttl_ms=2000).validate()
    info = resolve(seconds).info
    assert info is not None and info.needs == "any topology, TTL a multiple of 1000 ms"


def test_a_driver_that_declares_it_renews_is_held_to_it(tmp_path: Path) -> None:
    """``describe``'s ``renews`` (docs/writing-a-lock-adapter.md said a driver could declare
    it; the harness read nothing): the campaign holds the lock to renewing."""
    watchdog = _driver(tmp_path, "watchdog", {"capabilities": [], "renews": True})
    assert Campaign(watchdog).lock_renews
    assert not Campaign(_driver(tmp_path, "plain", {"capabilities": []})).lock_renews
