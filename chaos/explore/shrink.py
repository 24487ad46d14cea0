"""Shrinking a failing program, step by step, on its concrete steps.

The state machine draws each step's client as "the most telling one" in the model's order
(the oldest asker for a release…), which is what makes random programs tell stories often
enough; but it also means that deleting one drawn step can send a later step to another
client, so shrinking the machine's own choices stalls on programs like "c2 asks, is refused,
and later releases nothing". Here the program is fixed — each step names its client — and
Hypothesis's ``find`` searches what to keep of it: for every step, drop it, keep it without
its stall (no pause point, no pause during a wait), or keep it as it is. Hypothesis shrinks
towards dropping, so what it returns is the fewest, plainest steps that still break the lock
— each candidate run on the live topology, like any example.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

from hypothesis import Phase, Verbosity, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from chaos import checker
from chaos.explore.machine import Failure
from chaos.explore.program import Program, Step
from chaos.explore.session import Session

DROP, PLAIN, AS_IS = "drop", "plain", "as is"
CHOICES = (DROP, PLAIN, AS_IS, AS_IS, AS_IS)  # shrinks towards DROP; mostly keeps
MAX_TRIES = 60  # candidates tried before shrinking starts (the whole program surely fails)
BUDGET_S = 60.0  # then the smallest found so far stands (a failover step takes seconds)


def plain(step: Step) -> Step:
    """``step`` without its stall: no pause point on an operation, no pause during a wait."""
    if step.stops:
        return replace(step, ref=None, params={})
    if step.kind == "sleep" and step.client:
        return replace(step, client=None, ref=None)
    return step


def candidate(program: Program, choices: list[str]) -> Program:
    """``program`` with each step dropped, made plain or kept as ``choices`` say, and its
    faults renumbered f1, f2… in order (a heal of a dropped fault heals nothing)."""
    kept = [
        plain(step) if how == PLAIN else step
        for step, how in zip(program.steps, choices, strict=True)
        if how != DROP
    ]
    refs: dict[str, str] = {}
    steps = []
    for step in kept:
        if step.ref is not None and step.kind != "fault-off":
            refs[step.ref] = f"f{len(refs) + 1}"
        steps.append(replace(step, ref=refs.get(step.ref or "")))
    return program.with_steps(steps)


def shrink(session: Session, failure: Failure, fail_on: str, history_path: Path,
           until: float | None = None) -> Failure:
    """The smallest variant of ``failure``'s program that still breaks the lock at
    ``fail_on`` (``failure`` itself if none does, as may happen with timing-dependent ones).
    Shrinking stops trying new candidates after ``BUDGET_S``, or at ``until``
    (``time.monotonic()``: the audit's explore phase), whichever comes first: the smallest
    so far stands. (Past its explore phase's end, an audit of the redlock crate shrank for
    30 s more: 89 s of a 60 s budget.)
    """
    program = failure.program
    deadline = time.monotonic() + BUDGET_S
    if until is not None:
        deadline = min(deadline, until)
    tried: dict[str, bool] = {}  # many masks make the same program (plain = as is, mostly)

    def breaks(choices: list[str]) -> bool:
        shape = candidate(program, choices)
        key = json.dumps(shape.to_json(), sort_keys=True)
        if key not in tried:
            if time.monotonic() > deadline:
                return False  # out of time: what was found so far stands
            played = session.play(shape, history_path, fail_on)
            tried[key] = checker.fails(played.verdict, fail_on)
        return tried[key]

    size = len(program.steps)
    masks = st.lists(st.sampled_from(CHOICES), min_size=size, max_size=size)
    try:
        best = find(
            masks,
            breaks,
            settings=settings(
                max_examples=MAX_TRIES,
                database=None,
                derandomize=True,
                phases=(Phase.generate, Phase.shrink),
                verbosity=Verbosity.quiet,
            ),
        )
    except NoSuchExample:
        return failure
    played = session.play(candidate(program, best), history_path, fail_on)
    if not checker.fails(played.verdict, fail_on):
        return failure
    return Failure(played.program, played.outcomes, played.verdict, history_path.read_bytes())
