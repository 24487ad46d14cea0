"""The operation a command belongs to is its thread's (``chaos.workload.inject.Injector``):
a watchdog renewing from its own thread while its holder acquires again is background."""

from __future__ import annotations

import threading

from chaos.workload.inject import (
    BACKGROUND,
    LEARNING_OPS,
    LEARNING_UNTIL_OK_OPS,
    Injector,
    PausePoint,
)


def renewing(injector: Injector, command: str) -> None:
    """``command`` sent from another thread, as a watchdog renews, and done with."""
    renewal = threading.Thread(target=injector.before_write, args=((command,),))
    renewal.start()
    renewal.join()


def test_a_command_from_another_thread_during_an_operation_is_background() -> None:
    """Under load, a nested acquire in the audit's warm-up spun long enough for the holder's
    watchdog to renew: its EVAL was recorded as the acquire's, and the audit aimed a pause at
    an acquire EVAL that never comes (2 audits of 35 exited 3)."""
    injector = Injector()
    seen: list[tuple[str, str]] = []
    fired: list[PausePoint] = []
    injector.on_new_command = lambda op, command, with_: seen.append((op, command))
    injector.on_fire = fired.append
    injector.arm(PausePoint("EVAL", action="sleep", op="acquire"))
    injector.begin("acquire")
    renewing(injector, "EVAL")
    injector.before_write(("SET",))
    injector.end()
    assert seen == [(BACKGROUND, "EVAL"), ("acquire", "SET")]
    assert fired == []  # the acquire's point is not the renewal's
    injector.begin("acquire")
    injector.before_write(("EVAL",))  # the acquire's own EVAL is its first command
    assert [point.command for point in fired] == ["EVAL"]


def test_a_command_first_sent_in_a_pipeline_names_the_first_command_new_there() -> None:
    """Redis in Action's fair semaphore sends its acquire as two transactions: a point before
    any command of one fires before that whole write, so each command new in it names the
    first one new there (``with``), and the audit aims once per write."""
    injector = Injector()
    seen: list[tuple[str, str, str | None]] = []
    injector.on_new_command = lambda op, command, with_: seen.append((op, command, with_))
    injector.begin("acquire")
    injector.before_write(("MULTI", "ZREMRANGEBYSCORE", "INCRBY", "EXEC"))
    injector.before_write(("MULTI", "ZADD", "ZADD", "ZRANK", "EXEC"))
    injector.before_write(("ZREM",))
    assert seen == [("acquire", "MULTI", None), ("acquire", "ZREMRANGEBYSCORE", "MULTI"),
                    ("acquire", "INCRBY", "MULTI"), ("acquire", "EXEC", "MULTI"),
                    ("acquire", "ZADD", None), ("acquire", "ZRANK", "ZADD"),
                    ("acquire", "ZREM", None)]


def test_an_operation_that_succeeded_names_its_commands_once() -> None:
    """What the worker records once an operation succeeded: the commands it sent that no
    operation of its kind that succeeded had sent before (a watchdog's are no operation's)."""
    injector = Injector()
    injector.begin("extend")
    injector.before_write(("ZADD",))
    injector.before_write(("MULTI", "ZREM", "EXEC"))  # it found its entry gone: it failed
    injector.end()
    injector.begin("extend")
    renewing(injector, "PEXPIRE")
    injector.before_write(("ZADD",))
    injector.end()
    assert injector.succeeded("extend") == ["ZADD"]
    injector.begin("extend")
    injector.before_write(("ZADD",))
    injector.end()
    assert injector.succeeded("extend") == []


def test_a_driver_is_asked_to_announce_its_first_operations_of_each_kind() -> None:
    """A driver announces its commands only when asked: in a process's first operations of
    each kind always (the audit's warm-up learned no surface of a driver, and aimed at a DEL
    its release never sends), after those only while a point or a watch waits."""
    injector = Injector()
    assert not injector.announcing  # no operation under way
    for _ in range(LEARNING_OPS):
        injector.begin("acquire")
        assert injector.announcing
        injector.end()
    injector.succeeded("acquire")
    injector.begin("acquire")
    assert not injector.announcing
    injector.arm(PausePoint("DEL", op="release"))
    assert injector.announcing
    injector.disarm_all()
    injector.end()
    injector.begin("release")
    assert injector.announcing  # its first release


def test_a_driver_announces_until_an_operation_of_the_kind_succeeded() -> None:
    """Past its first operations, a process's operations of a kind none of which succeeded
    are still announced, up to ``LEARNING_UNTIL_OK_OPS``: which commands are sent only when
    one fails is told by the first that succeeds (five contending redsync clients each failed
    their first five acquires on a loaded machine; the release redsync sends on a missed
    quorum then passed as part of every acquire)."""
    injector = Injector()
    for begun in range(1, LEARNING_UNTIL_OK_OPS + 2):
        injector.begin("acquire")
        assert injector.announcing == (begun <= LEARNING_UNTIL_OK_OPS), begun
        injector.end()
    injector = Injector()
    for _ in range(LEARNING_OPS + 1):
        injector.begin("acquire")
        injector.before_write(("SET",))
        injector.end()
    assert injector.succeeded("acquire") == ["SET"]
    injector.begin("acquire")
    assert not injector.announcing  # one succeeded: the first ones taught the rest
    injector.end()
    injector.begin("release")
    assert injector.announcing  # another kind learns on its own


def test_a_thread_the_operation_started_is_its_own_on_the_lock_s_keys() -> None:
    """pottery's Redlock sends every command from a pool thread it starts for the call: its
    SETs and EVALSHAs on the lock's keys are the operation's (a point before them fires
    there), its SCRIPT LOAD, on no key, is background; a thread already running when the
    operation began (a watchdog the last acquire started) stays background, as does one that
    ever sent outside an operation."""
    injector = Injector()
    injector.lock_name = "lock-k"
    seen: list[tuple[str, str]] = []
    fired: list[PausePoint] = []
    injector.on_new_command = lambda op, command, with_: seen.append((op, command))
    injector.on_fire = fired.append
    watchdog = threading.Event()

    def renew() -> None:
        watchdog.wait(5)
        injector.before_write(("EVAL",), lambda: injector.touches([("EVAL", "s", 1, "lock-k")]))

    running = threading.Thread(target=renew)
    running.start()  # before the operation below began
    injector.arm(PausePoint("SET", action="sleep", op="acquire"))
    injector.begin("acquire")
    ops: list[str | None] = []

    def send(*args: object) -> str | None:
        return injector.before_write((str(args[0]).split()[0],),
                                     lambda: injector.touches([args]))

    def pool_thread() -> None:
        ops.append(send("SET", "redlock:lock-k", "t", "NX"))
        ops.append(send("SCRIPT LOAD", "return 1"))

    helper = threading.Thread(target=pool_thread)
    helper.start()
    helper.join()
    watchdog.set()
    running.join()
    injector.end()
    assert ops == ["acquire", None]
    assert seen == [("acquire", "SET"), (BACKGROUND, "SCRIPT"), (BACKGROUND, "EVAL")]
    assert [point.command for point in fired] == ["SET"]


def test_a_command_every_later_operation_left_out_is_told_as_sent_once() -> None:
    """A JVM lock's first extend probes a command the server rejects (a SET … IFEQ) and falls
    back to a script for good: after its next extend that succeeded, the probe is told as
    left out, the script as sent again, each once."""
    injector = Injector()
    told = []
    for sent in [("SET", "EVAL"), ("EVAL",), ("EVAL",)]:
        injector.begin("extend")
        for command in sent:
            injector.before_write((command,))
        injector.end()
        injector.succeeded("extend")
        told.append(injector.recurring("extend"))
    assert told == [[], [("SET", False), ("EVAL", True)], []]
