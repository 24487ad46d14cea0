"""A lock beyond the mutex, declared once: its catalog entry's capacity and modes reach the
workload, ``--capacity`` is refused in one line where it means nothing, a user's
``module:attr`` factory declares what it grants as a bundled lock does (a bad declaration:
one line), and the driver protocol carries mode and permits only for a lock that is not a
mutex."""

from __future__ import annotations

import json

import pytest
import redis

from chaos import lockspec
from chaos.campaign import Campaign
from chaos.drivers.adapter import hello
from chaos.drivers.protocol import Acquire, Described, decode, encode
from chaos.errors import UsageError
from chaos.history import EXCLUSIVE, SHARED
from chaos.locks.contract import LockContext, LockInfo, grants
from chaos.lockspec import resolve

# Factories declared as a user's would be, loaded as `--lock THIS_FILE:name`.
HERE = __file__


@grants(capacity=4, modes=(SHARED,), max_permits=2)
def user_semaphore(ctx: LockContext) -> object:
    raise NotImplementedError  # never made: only its declaration is read


def undeclared(ctx: LockContext) -> object:
    raise NotImplementedError


def _declared(**fields: object) -> object:
    def factory(ctx: LockContext) -> object:
        raise NotImplementedError
    factory.info = fields.pop("info", None) or LockInfo(  # type: ignore[attr-defined]
        name="", target="", summary="", seed="", flaw="", **fields)  # type: ignore[arg-type]
    return factory


not_an_info = _declared(info={"capacity": 3})
no_modes = _declared(modes=())
unknown_mode = _declared(modes=("shared", "upgradable"))
zero_capacity = _declared(capacity=0, modes=(SHARED,))
bool_permits = _declared(max_permits=True, modes=(SHARED,))
exclusive_pool = _declared(capacity=3)
fair_maybe = _declared(modes=(SHARED,), capacity=2, fair="yes")


def test_the_catalog_declares_the_reference_locks_and_every_mutex_stays_one() -> None:
    infos = {info.name: info for info in lockspec.catalog()}
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


def test_a_users_factory_declares_what_it_grants_as_a_bundled_lock_does() -> None:
    spec = f"{HERE}:user_semaphore"
    info = resolve(spec).info
    assert info is not None and (info.name, info.capacity, info.modes, info.max_permits) == (
        spec, 4, (SHARED,), 2)
    workload = Campaign(spec).workload()
    assert (workload.capacity, workload.modes, workload.max_permits) == (4, (SHARED,), 2)
    assert Campaign(spec, capacity=6).workload().capacity == 6  # --capacity, as for a bundled
    assert resolve(f"{HERE}:undeclared").info is None  # a mutex, as before
    assert Campaign(f"{HERE}:undeclared").workload().mutex


@pytest.mark.parametrize(("attr", "says"), [
    ("not_an_info", "its factory's info is a dict, not a LockInfo"),
    ("no_modes", "declares modes []"),
    ("unknown_mode", "declares modes ['shared', 'upgradable']"),
    ("zero_capacity", "declares capacity=0"),
    ("bool_permits", "declares max_permits=True"),
    ("exclusive_pool", "declares capacity=3 without shared holds"),
    ("fair_maybe", "declares fair='yes'"),
])
def test_a_bad_declaration_is_one_line(attr: str, says: str) -> None:
    with pytest.raises(UsageError) as refused:
        Campaign(f"{HERE}:{attr}").validate()
    assert says in str(refused.value) and "\n" not in str(refused.value)
