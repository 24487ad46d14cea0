"""The bundled faults, registered in the order ``lockchaos list`` shows them: the client's
own, its links', the servers', then the clocks' (``clock-jump`` among the server faults it was
written with, ``client-clock`` last) — the order they were added in, kept so that every list of
them (``lockchaos list``, ``doctor``, an audit's faults ``assumed_away``) reads as before.

A seeded schedule does not depend on this order: its faults take turns in the order
``--faults`` gives them (shuffled by the seed), whatever their place here.
"""

from __future__ import annotations

from chaos.nemesis.client_faults import ClientCrash, ClientPause, ClientPauseAt, SlowWork
from chaos.nemesis.clock_faults import ClientClock, ClockJump
from chaos.nemesis.fault import register
from chaos.nemesis.link_faults import Latency, Partition, ReplyLost, Reset
from chaos.nemesis.server_faults import (
    CrashRestart,
    CrashRestartAof,
    CrashRestartDelayed,
    Evict,
    Failover,
    ScriptFlush,
    ServerPause,
)

BUNDLED = (
    ClientPause,
    ClientPauseAt,
    ClientCrash,
    SlowWork,
    Latency,
    Partition,
    Reset,
    ReplyLost,
    ServerPause,
    CrashRestart,
    CrashRestartDelayed,
    CrashRestartAof,
    ClockJump,
    Evict,
    ScriptFlush,
    Failover,
    ClientClock,
)

for _fault in BUNDLED:
    register(_fault)
