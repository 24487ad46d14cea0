"""A run that found nothing says nothing: the next seed runs.

A test that must see a fault do harm (a double grant, a dead watchdog, an audit failing a
broken lock) runs a few seconds of one seed. A seed does not replay the same timing, and on a
machine loaded by other work (two pytest workers on two cores, a fresh clone's CI) one seed's
faults can all miss: a fresh clone's checks saw a clock jump, a failover and an extend that
each lost too little to show, once in several runs. Such a run tells nothing of the lock, so
the next seed runs. A run that contradicts a claim (a hard violation where a test says "no
hard") is not retried here: no seed can take that back (tests/cells.py does the same for the
truth table's cells).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from chaos.cli import main

SEEDS = (1, 2, 3)

T = TypeVar("T")


def first_found(
    run: Callable[[int], T], found: Callable[[T], bool], seeds: tuple[int, ...] = SEEDS
) -> T:
    """``run(seed)`` for each of ``seeds`` until ``found`` holds of its result; that result,
    or the last seed's when none did (for the test's own assertion to say what it lacked)."""
    for seed in seeds:
        result = run(seed)
        if found(result):
            return result
    return result


def first_failed_run(argv: list[str], out: Path) -> dict[str, Any]:
    """``lockchaos <argv> --stop-on-first`` for each seed until one exits 1 (a violation):
    the verdict.json of that run (of the last seed's, when none did), each seed's run under
    ``out/seed-N``."""

    def run(seed: int) -> tuple[int, Path]:
        where = out / f"seed-{seed}"
        return main([*argv, "--seed", str(seed), "--stop-on-first", "--out", str(where)]), where

    _, where = first_found(run, lambda ran: ran[0] == 1)
    (verdict,) = where.rglob("verdict.json")
    found: dict[str, Any] = json.loads(verdict.read_text())
    return found
