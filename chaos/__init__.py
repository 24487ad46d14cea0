"""lockchaos: a fault-injection correctness tester for Redis distributed locks.

Topology + lock + workload + nemesis produce a history (``chaos.history``); the checker
(``chaos.checker``) reads only that history; reports read only the history and the verdict.

The public API is this module's names; everything else under ``chaos`` is internal and may
change. A lock plugin imports its types from here (or ``chaos.locks.contract``)::

    import chaos
    verdict = chaos.check_file("reports/…/history.jsonl")
    outcome = chaos.run_campaign(chaos.Campaign(lock="lua", faults=[("slow-work", {})]), out)

Names are loaded on first use, so importing ``chaos`` (as every client process does) costs
nothing until a name is asked for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_PUBLIC = {
    # the checker: history → verdict
    "check": "chaos.checker",
    "check_file": "chaos.checker",
    "Verdict": "chaos.checker",
    "Violation": "chaos.checker",
    # the lock plugin contract
    "Lease": "chaos.locks.contract",
    "LockClient": "chaos.locks.contract",
    "LockContext": "chaos.locks.contract",
    "LockInfo": "chaos.locks.contract",
    # faults: a new one is a class and ``register``
    "Fault": "chaos.nemesis.fault",
    "Target": "chaos.nemesis.fault",
    "register_fault": "chaos.nemesis.fault",
    # running: one lock × faults × seed → a run directory with a verdict
    "Campaign": "chaos.campaign",
    "Outcome": "chaos.experiments.execute",
    "run_campaign": "chaos.experiments.execute",
}
_RENAMED = {"register_fault": "register"}

__all__ = [
    "Campaign",
    "Fault",
    "Lease",
    "LockClient",
    "LockContext",
    "LockInfo",
    "Outcome",
    "Target",
    "Verdict",
    "Violation",
    "check",
    "check_file",
    "register_fault",
    "run_campaign",
]

if TYPE_CHECKING:
    from chaos.campaign import Campaign
    from chaos.checker import Verdict, Violation, check, check_file
    from chaos.experiments.execute import Outcome, run_campaign
    from chaos.locks.contract import Lease, LockClient, LockContext, LockInfo
    from chaos.nemesis.fault import Fault, Target
    from chaos.nemesis.fault import register as register_fault


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'chaos' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), _RENAMED.get(name, name))
    globals()[name] = value
    return value
