"""Replay a step program against a fresh topology: what a run directory's ``test_replay.py``
calls, so the smallest failing program becomes a regression test.

The replay runs the same steps through the same ``Session`` as the exploration did, so it
differs from the example Hypothesis reported only in timing noise, which the program's TTL
multiples leave no say in the verdict.

A replay that passes must have tested what the program tests: each step's fault that did
something in the failing run (a pause point reached, a pause that stopped a holder…) must do
something again. A lock whose release changed from GET-then-DEL to GET-then-UNLINK is just as
broken, but never reaches the program's pause point before DEL: that replay is inconclusive,
and fails saying so, as ``lockchaos run`` would (exit 3).
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from chaos import checker, topology
from chaos.checker import Verdict
from chaos.checker.coverage import effective_ids
from chaos.checker.exercised import no_effect
from chaos.checker.reader import HistoryReader
from chaos.explore.program import Program
from chaos.explore.session import Session


def replay(
    program: Program, *, seed: int = 1, history_path: Path | None = None
) -> tuple[Verdict, list[str]]:
    """Run ``program`` on a fresh topology; the verdict on its history and each step's outcome."""
    with topology.open_provider(
        "local", program.topology, nodes=program.nodes, persistence=program.persistence
    ) as topo, tempfile.TemporaryDirectory(prefix="lockchaos-replay-") as tmp:
        played = Session(topo, program, seed).play(
            program, history_path or Path(tmp) / "history.jsonl"
        )
    return played.verdict, played.outcomes


def effective_refs(history_path: Path) -> list[str]:
    """The faults (by step ``ref``) that did something to the lock in a program's history,
    in the order they fired."""
    timeline = checker.read_timeline(HistoryReader(history_path))
    effective = effective_ids(timeline)
    return [fault.id for fault in timeline.faults if fault.id in effective]


def missed(program: Program, history_path: Path, refs: Iterable[str] | None = None
           ) -> list[str]:
    """Per step whose fault (of ``refs``; None: every step's) did nothing to the lock in
    ``history_path``, the step and why, in the checker's words."""
    timeline = checker.read_timeline(HistoryReader(history_path))
    effective = effective_ids(timeline)
    wanted = None if refs is None else set(refs)
    steps = {step.ref: (number, step) for number, step in enumerate(program.steps, 1)}
    lines = []
    for fault in timeline.faults:
        if fault.id in effective or (wanted is not None and fault.id not in wanted):
            continue
        number, step = steps.get(fault.id, (0, None))
        said = f"{number}. {step.describe(program.ttl_ms)}" if step else fault.id
        lines.append(f"{said}: {no_effect(fault, 1, timeline)}")
    return lines


def assert_lock_holds(
    program: dict[str, Any], *, fail_on: str = "hard", seed: int = 1,
    effective: Iterable[str] | None = None, root: str | Path | None = None,
) -> None:
    """Replay ``program`` (as ``Program.to_json`` wrote it) from the directory ``root`` (where
    its lock was found: None, here) and fail, with the numbered steps and the checker's
    explanation, if it breaks the lock at ``fail_on`` or worse — or, as inconclusive, if a
    step's fault among ``effective`` (the refs that did something when the program was found;
    None: every step's) did nothing: that replay did not test the lock."""
    __tracebackhide__ = True
    parsed = Program.from_json(program)
    place = contextlib.chdir(root) if root is not None else contextlib.nullcontext()
    with place, tempfile.TemporaryDirectory(prefix="lockchaos-replay-") as tmp:
        history = Path(tmp) / "history.jsonl"
        verdict, outcomes = replay(parsed, seed=seed, history_path=history)
        untested = missed(parsed, history, effective)
    if checker.fails(verdict, fail_on):
        raise AssertionError("\n".join([
            f"{parsed.lock} broke ({verdict.verdict}) under this program:",
            *parsed.numbered(outcomes),
            *verdict.explanations,
        ]))
    if untested:
        raise AssertionError("\n".join([
            f"inconclusive: this replay did not test {parsed.lock} as the program does — a "
            f"step's fault did nothing to the lock, so its passing says nothing:",
            *untested, "the program as it ran:", *parsed.numbered(outcomes),
        ]))
