"""Faults and seeded schedules of them.

``generate(parse_faults("latency,partition"), seed=1, duration_s=20, ttl_ms=200)`` makes a
schedule (``generator``: the one generator of fault timing); ``ScheduledNemesis(schedule)``
plays it during ``chaos.workload.run_workload``.
The fault framework is ``fault`` (``Fault``, ``register``, ``FAULTS``); the bundled faults are
in their families (``client_faults``, ``link_faults``, ``server_faults``, ``clock_faults``),
registered by ``catalog``, which this package loads first: whoever imports any part of
``chaos.nemesis`` finds the catalog full.
"""

from chaos.nemesis import catalog as catalog
from chaos.nemesis.fault import FAULTS, Fault, FaultSpec, Target, register
from chaos.nemesis.generator import generate
from chaos.nemesis.runner import ScheduledNemesis
from chaos.nemesis.schedule import FaultEvent, Schedule, parse_faults

__all__ = [
    "FAULTS",
    "Fault",
    "FaultEvent",
    "FaultSpec",
    "Schedule",
    "ScheduledNemesis",
    "Target",
    "generate",
    "parse_faults",
    "register",
]
