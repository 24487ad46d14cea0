"""What a program may do besides client operations, and how its steps are drawn.

Client faults are part of the steps and always explored: a wait with a client paused (a
GC-like SIGSTOP), an operation that stops at a pause-injection point (until the client's next
step), waiting while holding (slow work).
``--faults`` adds faults from the nemesis catalog as on/off steps; each names how its target
is drawn: one client's links to some nodes, some nodes, or the current master. Parameters
are TTL multiples from a short list, so a shrunk program reads "offset +1.5×TTL", and the
draws shrink towards the first (the mildest) choice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from chaos.errors import UsageError
from chaos.explore.program import Step

SLEEP_TTLS = (1.5, 0.4)  # no sum of these lands within 0.2×TTL of a whole TTL
# Where an operation may stop (None: nowhere), with how likely each is.
STOP_POINTS: dict[str, tuple[dict[str, Any] | None, ...]] = {
    "acquire": (None, None, None, {"command": "*", "nth": 2}),  # between SETNX and EXPIRE
    "release": (None, {"command": "DEL"}),  # get-then-del's window (del-release's only one)
}
BUILT_IN = {
    "client-pause": "waits with a client paused",
    "client-pause-at": "operations that stop at a pause point",
    "slow-work": "waits while holding",
}
CLIENT_CRASH = "client-crash"  # a `crash` step: SIGKILL a client, a fresh one takes its place

Params = Callable[[int], st.SearchStrategy[dict[str, Any]]]


def _none(ttl_ms: int) -> st.SearchStrategy[dict[str, Any]]:
    return st.just({})


def _ttl_multiples(ttl_ms: int, factors: tuple[float, ...]) -> st.SearchStrategy[int]:
    return st.sampled_from([round(f * ttl_ms) for f in factors])


def _latency(ttl_ms: int) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "latency_ms": _ttl_multiples(ttl_ms, (0.6, 1.2)),
            "jitter_ms": st.just(0),
            "stream": st.sampled_from(("downstream", "upstream")),
        }
    )


def _clock_jump(ttl_ms: int) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"offset_ms": _ttl_multiples(ttl_ms, (1.5, 3.0, -1.5))})


@dataclass(frozen=True)
class FaultStep:
    """How a fault becomes a step: ``aims_at`` ``client`` (one client's links to some nodes),
    ``nodes`` or ``master`` (picked by the fault itself when it fires); ``instant`` faults
    heal themselves at once (a crash followed by a restart) and have no off step."""

    aims_at: str
    instant: bool = False
    params: Params = field(default=_none)


EXPLORABLE: dict[str, FaultStep] = {
    "latency": FaultStep("client", params=_latency),
    "partition": FaultStep("client"),
    "reset": FaultStep("client", params=lambda ttl_ms: st.just({"toxicity": 1.0})),
    "server-pause": FaultStep("nodes"),
    "crash-restart": FaultStep("nodes", instant=True),
    "crash-restart-delayed": FaultStep("nodes"),
    "crash-restart-aof": FaultStep("nodes", instant=True),
    "clock-jump": FaultStep("nodes", params=_clock_jump),
    "failover": FaultStep("master", params=lambda ttl_ms: st.just({"promote_timeout_ms": 8000})),
}


def check_explorable(faults: list[tuple[str, dict[str, Any]]]) -> None:
    """``UsageError`` for a fault the explorer cannot switch on and off as a step."""
    for name, _ in faults:
        if name in BUILT_IN:
            raise UsageError(
                f"{name} is always explored (by {BUILT_IN[name]}): drop it from --faults"
            )
        if name not in EXPLORABLE and name != CLIENT_CRASH:
            choices = ", ".join([*EXPLORABLE, CLIENT_CRASH])
            raise UsageError(f"explore cannot step {name}; --faults takes: {choices}")


def fault_on_steps(
    name: str, overrides: dict[str, Any], *, ref: str, ttl_ms: int, clients: list[str], nodes: int
) -> st.SearchStrategy[Step]:
    """A ``fault-on`` step for fault ``name`` (``overrides`` fix some of its parameters)."""
    kind = EXPLORABLE[name]
    params = kind.params(ttl_ms).map(lambda drawn: {**drawn, **overrides})
    first_nodes = st.integers(1, nodes).map(lambda k: tuple(range(k)))
    client = st.sampled_from(clients) if kind.aims_at == "client" else st.none()
    targets = first_nodes if kind.aims_at != "master" else st.just(())
    return st.builds(
        Step,
        kind=st.just("fault-on"),
        fault=st.just(name),
        ref=st.just(ref),
        client=client,
        nodes=targets,
        params=params,
    )
