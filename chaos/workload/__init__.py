"""Worker processes (one OS process per client) and the shared resource they protect.

``run_workload(topology, config, path)`` runs one recorded workload (``config``: a campaign's
``workload()``).
"""

from chaos.workload.harness import Nemesis, WorkloadEnv, WorkloadResult, run_workload
from chaos.workload.inject import PausePoint
from chaos.workload.pool import WorkerPool
from chaos.workload.worker import WorkloadConfig

__all__ = [
    "Nemesis",
    "PausePoint",
    "WorkerPool",
    "WorkloadConfig",
    "WorkloadEnv",
    "WorkloadResult",
    "run_workload",
]
