"""A network fault's watch (``chaos.workload.inject.Watch``): which commands it reports, once,
and never one that left before the fault was on or after the harness ended it (its slot did
not hold its serial both before and after the command left), and a command whose reply was
awaited while a fault that holds replies went on. The live path (a real client
behind Toxiproxy) is tests/redis/test_network_evidence.py."""

from __future__ import annotations

from chaos.workload.inject import (
    AWAITED,
    FAILED,
    REFUSED,
    SENT,
    WATCH_SLOTS,
    Crossing,
    Injector,
    PausePoint,
    Watch,
    admitted,
)

N0, N1 = "127.0.0.1:7000", "127.0.0.1:7001"


def _watching(*watches: Watch) -> tuple[Injector, list[str]]:
    injector = Injector()
    seen: list[str] = []
    injector.on_crossed = lambda w, met: seen.append(f"{w.fault}: " + w.describe("c2", met))
    for watch in watches:  # live on every node it names, as the harness makes it
        injector.slots[watch.slot] = watch.serial
        injector.slots[WATCH_SLOTS + watch.slot] = watch.bit(None)
        injector.watch(watch)
    return injector, seen


def test_the_first_command_to_a_watched_address_is_reported_once() -> None:
    injector, seen = _watching(Watch("f1", "partition", {N1: 1}, False, 0, 1))
    assert injector.watching and injector.announcing
    live = injector.live()
    assert live == {1: 0b10}  # serial 1, live on n1
    injector.crossed("EVAL", N0, live)  # a link the fault left alone
    injector.crossed("EVAL", None, live)  # a driver's: no address, not a fault everywhere
    assert seen == []
    injector.crossed("", N1, live)
    injector.crossed("EVAL", N1, live)
    assert seen == ["f1: c2 could not connect to n1 while partition was on"]
    assert not injector.watching and not injector.announcing


def test_a_driver_command_counts_only_for_a_fault_on_every_link() -> None:
    injector, seen = _watching(Watch("f2", "latency", {N0: 0}, True, 3, 7))
    injector.before_command("EVALSHA")
    assert seen == ["f2: c2 sent EVALSHA to n0 while latency was on"]


def test_a_driver_operation_that_failed_counts_only_for_a_live_fault_on_every_link() -> None:
    """Redisson fails a command on a closed channel without writing it, so a partition of its
    only link leaves no command to announce: the operation's error is what met the fault. It
    counts once, only while the fault is on every link, and never for a watch on one node of
    several (the error could have come from another)."""
    cut = Watch("f10", "partition", {N0: 0}, True, 7, 16)
    one_of_two = Watch("f11", "partition", {N0: 0, N1: 1}, False, 6, 17)
    injector, seen = _watching(cut, one_of_two)
    injector.slots[cut.slot] = -cut.serial  # taken, not live yet
    injector.failed("acquire", "RedisException: Unexpected exception while processing command")
    assert seen == []
    injector.slots[cut.slot] = cut.serial
    injector.failed("release", "WriteRedisConnectionException: Unable to write command into "
                    "connection! Check CPU usage of the JVM. Try to increase nettyThreads.")
    injector.failed("acquire", "RedisException: Unexpected exception while processing command")
    assert seen == ["f10: c2's release failed while partition was on (WriteRedisConnection"
                    "Exception: Unable to write command into connection! Check…)"]
    assert injector.watching  # the one-node watch waits for a command that names its node


def test_a_drivers_background_command_is_its_surface_and_meets_a_fault_on_every_link() -> None:
    """A holder at work sends only its watchdog's renewals: a driver reports each one after it
    went out (``sent``). It is the lock's background surface, met by a live watch on every
    link, and never fires a point (it has gone)."""
    cut = Watch("f12", "reset", {N0: 0}, True, 7, 18)
    injector, seen = _watching(cut)
    surface: list[tuple[str, str]] = []
    injector.on_new_command = lambda op, command, with_: surface.append((op, command))
    injector.arm(PausePoint("EVAL", action="crash"))  # would SIGKILL this test if it fired
    injector.slots[cut.slot] = -cut.serial  # taken, not live yet
    injector.sent_in_background("EVAL")
    assert seen == [] and surface == [("background", "EVAL")]
    injector.slots[cut.slot] = cut.serial
    injector.sent_in_background("EVAL")
    assert seen == ["f12: c2 sent EVAL to n0 while reset was on"]
    assert surface == [("background", "EVAL")] and injector.armed


def test_a_drivers_request_awaiting_its_replies_meets_a_fault_that_went_on_every_link() -> None:
    """node-redlock's release was announced before the last of its five links had its
    reply-lost toxic, waited out the fault, and failed at its heal: it awaited its replies
    while the fault was on every link. Answered before (``end``), it reports nothing."""
    lost = Watch("f13", "reply-lost", {N0: 0, N1: 1}, True, 3, 19, holds_replies=True)
    injector, seen = _watching(lost)
    injector.slots[WATCH_SLOTS + lost.slot] = 0b1  # n0's link faulted, n1's not yet
    injector.begin("release")
    injector.before_command("EVALSHA")
    injector.check_awaited()
    assert seen == []
    injector.slots[WATCH_SLOTS + lost.slot] = 0b11
    injector.check_awaited()
    assert seen == ["f13: c2 awaited the reply to EVALSHA while reply-lost was on"]
    answered = Watch("f14", "reply-lost", {N0: 0}, True, 4, 20, holds_replies=True)
    injector, seen = _watching(answered)
    injector.slots[answered.slot] = -answered.serial  # taken, not live yet
    injector.begin("release")
    injector.before_command("EVALSHA")
    injector.end()
    injector.slots[answered.slot] = answered.serial
    injector.check_awaited()
    assert seen == []


def test_a_watch_the_harness_ended_reports_nothing() -> None:
    """The heal zeroes the slot before the links heal: a command the client sends before its
    ``unwatch`` message arrives crossed a healed link."""
    healed = Watch("f3", "reset", {N0: 0}, True, WATCH_SLOTS - 1, 9)
    injector, seen = _watching(healed, Watch("f4", "latency", {N0: 0}, True, 0, 10))
    live = injector.live()
    injector.slots[healed.slot] = 0  # healed while the SET was on its way
    injector.crossed("SET", N0, live)
    assert seen == ["f4: c2 sent SET to n0 while latency was on"]
    assert not injector.watching


def test_a_command_that_left_before_the_fault_was_on_its_link_reports_nothing() -> None:
    """The watch reaches the client before the links are faulted (``-serial``: taken, not
    live), and goes live one node at a time as each link is faulted: a command that left
    before its own link was does not count, even if it is done once it is, and the watch
    stays armed for the next one."""
    watch = Watch("f6", "latency", {N0: 0, N1: 1}, True, 2, 12)
    injector, seen = _watching(watch)
    injector.slots[watch.slot], injector.slots[WATCH_SLOTS + watch.slot] = -watch.serial, 0
    before = injector.live()
    assert before == {}
    injector.slots[watch.slot], injector.slots[WATCH_SLOTS + watch.slot] = watch.serial, 0b1
    injector.crossed("SET", N0, before)
    injector.before_command("SET")  # a driver's: counts once every link is faulted
    injector.crossed("SET", N1, injector.live())  # n1's link is not faulted yet
    assert seen == [] and injector.watching
    injector.crossed("SET", N0, injector.live())
    assert seen == ["f6: c2 sent SET to n0 while latency was on"]


def test_unwatch_disarms_and_nothing_is_watched_by_default() -> None:
    injector, seen = _watching(Watch("f5", "reply-lost", {N0: 0}, True, 1, 11))
    live = injector.live()
    injector.unwatch(11)
    injector.crossed("SET", N0, live)
    assert seen == [] and not injector.watching
    assert not Injector().watching


def test_a_reply_awaited_while_a_fault_that_holds_replies_went_on_is_reported() -> None:
    """The acquire's SET left a millisecond before the reply-lost's watch went live, and its
    reply never came back: the fault met it. It is reported once, by the control thread's
    check; a command answered before, or sent while the watch was already live (the send path
    reports those), or a fault that leaves replies alone (upstream latency) reports nothing."""
    lost = Watch("f7", "reply-lost", {N0: 0, N1: 1}, True, 4, 13, holds_replies=True)
    upstream = Watch("f8", "latency", {N0: 0, N1: 1}, True, 5, 14)
    injector, seen = _watching(lost, upstream)
    for watch in (lost, upstream):  # taken, not live: the toxics are not on yet
        injector.slots[watch.slot], injector.slots[WATCH_SLOTS + watch.slot] = -watch.serial, 0
    injector.awaiting(1, "SET", N0, injector.live())
    injector.awaiting(2, "GET", N1, injector.live())
    injector.answered(2)  # its reply came back before the fault was on
    injector.check_awaited()
    assert seen == []  # not live yet
    for watch in (lost, upstream):
        injector.slots[watch.slot], injector.slots[WATCH_SLOTS + watch.slot] = watch.serial, 0b11
    injector.check_awaited()
    injector.check_awaited()
    assert seen == ["f7: c2 awaited the reply to SET from n0 while reply-lost was on"]
    injector.answered(1)
    assert injector.watching  # the upstream latency's watch waits for a command sent now


def test_a_reply_awaited_by_a_command_sent_while_live_is_left_to_the_send_path() -> None:
    watch = Watch("f9", "reply-lost", {N0: 0}, True, 6, 15, holds_replies=True)
    injector, seen = _watching(watch)
    injector.awaiting(1, "DEL", N0, injector.live())
    injector.check_awaited()
    assert seen == []


# Each kind of crossing (``Crossing.how``), as the command path makes it on a live watch of n0.
CROSSINGS = {
    SENT: lambda injector: injector.crossed("EVAL", N0, injector.live()),
    REFUSED: lambda injector: injector.crossed("", N0, injector.live()),
    # sent before the fault was on (nothing live), its reply still awaited once it is
    AWAITED: lambda injector: (injector.awaiting(1, "EVAL", N0, {}), injector.check_awaited()),
    FAILED: lambda injector: injector.failed("release", "RedisException: closed"),
}


def test_a_watch_reports_exactly_the_crossings_it_admits() -> None:
    """Which crossing a firing meets first is timing (a command sent as a link was cut, or
    one sent just before whose reply the cut held: an effect read "awaited the reply" where
    a test expected "sent", 1 CI run in 971 tests, 8 of 11 runs beside two busy loops): a
    live run's test asserts an effect's ``how`` is one its watch ``admits``. Here each kind
    of crossing is offered to each kind of watch: it is reported exactly when admitted."""
    for holds_replies in (False, True):
        for everywhere in (False, True):
            for how, cross in CROSSINGS.items():
                watch = Watch("f1", "partition", {N0: 0}, everywhere, 0, 1, holds_replies)
                assert watch.admits == admitted(holds_replies, everywhere)
                injector, hows = _reporting_how(watch)
                cross(injector)
                assert hows == ([how] if how in watch.admits else []), (watch, how)


def _reporting_how(watch: Watch) -> tuple[Injector, list[str]]:
    """``_watching``, each crossing reported as its ``how``."""
    injector, _ = _watching(watch)
    hows: list[str] = []

    def crossed(_: Watch, met: Crossing) -> None:
        hows.append(met.how)

    injector.on_crossed = crossed
    return injector, hows
