"""Faults and seeded schedules of them.

``generate(parse_faults("latency,partition"), seed=1, duration_s=20, ttl_ms=200)`` makes a
schedule; ``ScheduledNemesis(schedule)`` plays it during ``chaos.workload.run_workload``.
"""

from chaos.nemesis.faults import FAULTS, Fault, Target
from chaos.nemesis.runner import ScheduledNemesis
from chaos.nemesis.schedule import FaultEvent, Schedule, generate, parse_faults

__all__ = [
    "FAULTS",
    "Fault",
    "FaultEvent",
    "Schedule",
    "ScheduledNemesis",
    "Target",
    "generate",
    "parse_faults",
]
