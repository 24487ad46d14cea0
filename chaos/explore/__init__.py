"""Hypothesis exploration: step programs against a lock, shrunk to the smallest that breaks it.

``explore(campaign, max_examples=100)`` runs a ``RuleBasedStateMachine`` whose rules are steps
(client operations, waits of TTL multiples, pauses, faults on and off) on one topology,
with the pure checker as its invariant; ``replay(program)`` runs a program again on a fresh
topology (what a run directory's ``test_replay.py`` does).
"""

from chaos.explore.explorer import ExploreResult, explore
from chaos.explore.program import Program, Step
from chaos.explore.replay import assert_lock_holds, replay

__all__ = ["ExploreResult", "Program", "Step", "assert_lock_holds", "explore", "replay"]
