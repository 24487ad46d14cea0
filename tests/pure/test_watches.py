"""A network fault's watch (``chaos.workload.inject.Watch``): which commands it reports, once,
and never one sent after the harness ended it (its slot no longer holds its serial). The
live path (a real client behind Toxiproxy) is tests/redis/test_network_evidence.py."""

from __future__ import annotations

from chaos.workload.inject import WATCH_SLOTS, Injector, Watch

N0, N1 = "127.0.0.1:7000", "127.0.0.1:7001"


def _watching(*watches: Watch) -> tuple[Injector, list[str]]:
    injector = Injector()
    seen: list[str] = []
    injector.on_crossed = lambda w, command, address: seen.append(
        f"{w.fault}: " + w.describe("c2", command, address))
    for watch in watches:
        injector.slots[watch.slot] = watch.serial
        injector.watch(watch)
    return injector, seen


def test_the_first_command_to_a_watched_address_is_reported_once() -> None:
    injector, seen = _watching(Watch("f1", "partition", {N1: "n1"}, False, 0, 1))
    assert injector.watching and injector.announcing
    injector.crossed("EVAL", N0)  # a link the fault left alone
    injector.crossed("EVAL", None)  # a driver's: no address, and the fault is not everywhere
    assert seen == []
    injector.crossed("", N1)
    injector.crossed("EVAL", N1)
    assert seen == ["f1: c2 could not connect to n1 while partition was on"]
    assert not injector.watching and not injector.announcing


def test_a_driver_command_counts_only_for_a_fault_on_every_link() -> None:
    injector, seen = _watching(Watch("f2", "latency", {N0: "n0"}, True, 3, 7))
    injector.before_command("EVALSHA")
    assert seen == ["f2: c2 sent EVALSHA to n0 while latency was on"]


def test_a_watch_the_harness_ended_reports_nothing() -> None:
    """The heal zeroes the slot before the links heal: a command the client sends before its
    ``unwatch`` message arrives crossed a healed link."""
    healed = Watch("f3", "reset", {N0: "n0"}, True, WATCH_SLOTS - 1, 9)
    live = Watch("f4", "latency", {N0: "n0"}, True, 0, 10)
    injector, seen = _watching(healed, live)
    injector.slots[healed.slot] = 0
    injector.crossed("SET", N0)
    assert seen == ["f4: c2 sent SET to n0 while latency was on"]
    assert not injector.watching


def test_unwatch_disarms_and_nothing_is_watched_by_default() -> None:
    injector, seen = _watching(Watch("f5", "reply-lost", {N0: "n0"}, True, 1, 11))
    injector.unwatch(11)
    injector.crossed("SET", N0)
    assert seen == [] and not injector.watching
    assert not Injector().watching
