"""A lock beyond the mutex, declared once: its catalog entry's capacity and modes reach the
workload, ``--capacity`` is refused in one line where it means nothing, and the driver
protocol carries mode and permits only for a lock that is not a mutex."""

from __future__ import annotations

import json

import pytest
import redis

from chaos import locks
from chaos.campaign import Campaign
from chaos.drivers.adapter import hello
from chaos.drivers.protocol import Acquire, Described, decode, encode
from chaos.errors import UsageError
from chaos.history import EXCLUSIVE, SHARED
from chaos.locks.contract import LockContext


def test_the_catalog_declares_the_reference_locks_and_every_mutex_stays_one() -> None:
    infos = {info.name: info for info in locks.catalog()}
    assert (infos["lua-semaphore"].capacity, infos["lua-semaphore"].modes) == (3, (SHARED,))
    assert (infos["rwlock"].capacity, infos["rwlock"].modes) == (None, (EXCLUSIVE, SHARED))
    assert not infos["lua-semaphore"].mutex and not infos["rwlock"].mutex
    assert infos["lua"].mutex and infos["redlock"].mutex and infos["redisson"].mutex


def test_the_workload_gets_the_locks_shape_and_the_runs_capacity() -> None:
    assert Campaign("lua").workload().mutex
    semaphore = Campaign("lua-semaphore").workload()
    assert (semaphore.capacity, semaphore.modes, semaphore.fair) == (3, (SHARED,), False)
    assert Campaign("lua-semaphore", capacity=5).workload().capacity == 5
    rw = Campaign("rwlock").workload()
    assert (rw.capacity, rw.modes) == (None, (EXCLUSIVE, SHARED))


@pytest.mark.parametrize(("lock", "says"), [
    ("lua", "lock 'lua' is a mutex: --capacity must be 1 (got 3)"),
    ("rwlock", "lock 'rwlock' grants shared holds without a limit: --capacity does not apply"),
    ("lua-semaphore", "--capacity must be between 1 and 1000 (got 0)"),
])
def test_a_capacity_that_means_nothing_is_refused_in_one_line(lock: str, says: str) -> None:
    capacity = 0 if lock == "lua-semaphore" else 3
    with pytest.raises(UsageError) as refused:
        Campaign(lock, capacity=capacity).validate()
    assert str(refused.value).startswith(says) and "\n" not in str(refused.value)


def test_a_mutexs_acquire_line_is_unchanged_and_a_semaphores_carries_its_ask() -> None:
    assert json.loads(encode(Acquire(id=1, mode=None, permits=None))) == {
        "type": "acquire", "id": 1}
    assert json.loads(encode(Acquire(id=2, mode=SHARED, permits=2))) == {
        "type": "acquire", "id": 2, "mode": "shared", "permits": 2}


def test_describe_may_declare_what_the_lock_grants() -> None:
    plain = decode(json.dumps({"type": "describe", "capabilities": []}))
    assert isinstance(plain, Described)
    assert (plain.capacity, plain.modes, plain.fair) == (1, ["exclusive"], False)
    rw = decode(json.dumps({"type": "describe", "capabilities": [], "capacity": None,
                            "modes": ["exclusive", "shared"], "fair": True}))
    assert isinstance(rw, Described)
    assert (rw.capacity, rw.modes, rw.fair) == (None, ["exclusive", "shared"], True)


def test_hello_carries_the_runs_permits_only_when_they_are_not_one() -> None:
    def sent(capacity: int | None) -> dict[str, object]:
        ctx = LockContext("c1", "k", 200, nodes=[redis.Redis(port=1)], capacity=capacity)
        said: dict[str, object] = json.loads(encode(hello(ctx)))
        return said

    assert "capacity" not in sent(1)  # a mutex's hello, as it always was
    assert sent(3)["capacity"] == 3 and sent(None)["capacity"] is None
