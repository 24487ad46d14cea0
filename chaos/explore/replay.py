"""Replay a step program against a fresh topology: what a run directory's ``test_replay.py``
calls, so the smallest failing program becomes a regression test.

The replay runs the same steps through the same ``Session`` as the exploration did, so it
differs from the example Hypothesis reported only in timing noise, which the program's TTL
multiples leave no say in the verdict.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from chaos import checker, topology
from chaos.checker import Verdict
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


def assert_lock_holds(program: dict[str, Any], *, fail_on: str = "hard", seed: int = 1) -> None:
    """Replay ``program`` (as ``Program.to_json`` wrote it) and fail, with the numbered steps
    and the checker's explanation, if it breaks the lock at ``fail_on`` or worse."""
    parsed = Program.from_json(program)
    verdict, outcomes = replay(parsed, seed=seed)
    if checker.fails(verdict, fail_on):
        lines = [
            f"{parsed.lock} broke ({verdict.verdict}) under this program:",
            *parsed.numbered(outcomes),
            *verdict.explanations,
        ]
        raise AssertionError("\n".join(lines))
