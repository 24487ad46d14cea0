"""tests/seeds.py: the next seed only while a run found nothing."""

from __future__ import annotations

from seeds import first_found


def test_the_first_seed_that_found_it_ends_the_search() -> None:
    ran: list[int] = []

    def run(seed: int) -> int:
        ran.append(seed)
        return seed * 10

    assert first_found(run, lambda result: result >= 20) == 20
    assert ran == [1, 2]


def test_when_no_seed_found_it_the_last_run_is_returned_for_the_test_to_judge() -> None:
    ran: list[int] = []

    def run(seed: int) -> int:
        ran.append(seed)
        return seed

    assert first_found(run, lambda _: False, seeds=(4, 7)) == 7
    assert ran == [4, 7]
