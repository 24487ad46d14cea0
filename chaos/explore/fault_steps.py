"""What a program may do besides client operations, and how its steps are drawn.

Client faults are part of the steps and always explored: a wait with a client paused (a
GC-like SIGSTOP), an operation that stops at a pause-injection point (until the client's next
step), waiting while holding (slow work).
``--faults`` adds faults from the nemesis catalog as on/off steps, as each fault's class
declares (``Fault.stepping``): how its target is drawn (one client's links to some nodes,
some nodes, or the current master) and its parameters, TTL multiples from a short list, so a
shrunk program reads "offset +1.5×TTL"; the draws (Hypothesis's, through the generator of
fault timing: ``chaos.nemesis.generator``) shrink towards the first (mildest) choice.
"""

from __future__ import annotations

from typing import Any

from chaos.errors import UsageError
from chaos.explore.program import Step
from chaos.nemesis.fault import FAULTS, FaultSpec, Stepping
from chaos.nemesis.generator import Choices, switched_on

SLEEP_TTLS = (1.5, 0.4)  # no sum of these lands within 0.2×TTL of a whole TTL
# Where an operation may stop (None: nowhere), with how likely each is.
STOP_POINTS: dict[str, tuple[dict[str, Any] | None, ...]] = {
    "acquire": (None, None, None, {"command": "*", "nth": 2}),  # between SETNX and EXPIRE
    "release": (None, {"command": "DEL"}),  # get-then-del's window (del-release's only one)
}
# Those of a lock that is not a mutex: its acquire counts, then takes permits, as many round
# trips apart as it likes (Redis in Action's semaphore: TIME, prune, count, add), so it may stop
# before its 2nd, 3rd or 4th command, half the time.
SHARED_STOP_POINTS: dict[str, tuple[dict[str, Any] | None, ...]] = {
    "acquire": (None, None, None, *({"command": "*", "nth": n} for n in (2, 3, 4))),
}
BUILT_IN = {
    "client-pause": "waits with a client paused",
    "client-pause-at": "operations that stop at a pause point",
    "slow-work": "waits while holding",
}
CLIENT_CRASH = "client-crash"  # a `crash` step: SIGKILL a client, a fresh one takes its place



def explorable() -> dict[str, Stepping]:
    """Every catalog fault the explorer can switch on and off, with how (its ``stepping``):
    read at call time, so a fault registered later (a user's, a test's) is explorable too."""
    return {name: fault.stepping for name, fault in FAULTS.items() if fault.stepping}


def check_explorable(faults: list[FaultSpec]) -> None:
    """``UsageError`` for a fault the explorer cannot switch on and off as a step."""
    for name, _ in faults:
        if name in BUILT_IN:
            raise UsageError(
                f"{name} is always explored (by {BUILT_IN[name]}): drop it from --faults"
            )
        if name not in explorable() and name != CLIENT_CRASH:
            choices = ", ".join([*explorable(), CLIENT_CRASH])
            raise UsageError(f"explore cannot step {name}; --faults takes: {choices}")


def fault_on_step(choices: Choices, spec: FaultSpec, *, ref: str, ttl_ms: int,
                  clients: list[str], nodes: int) -> Step:
    """A ``fault-on`` step for ``spec`` (a fault, whose overrides fix some of its parameters):
    its target as its class's ``stepping`` says (one client's links to the first few nodes,
    the first few nodes, or the master it finds when it fires) and its parameters, chosen by
    the generator of fault timing (``chaos.nemesis.generator.switched_on``)."""
    kind = explorable()[spec[0]]
    client = choices.pick(clients) if kind.aims_at == "client" else None
    targets = () if kind.aims_at == "master" else tuple(range(choices.pick(range(1, nodes + 1))))
    return Step("fault-on", client=client, fault=spec[0], ref=ref, nodes=targets,
                params=switched_on(spec, choices, ttl_ms))
