"""lockchaos: a fault-injection correctness tester for Redis distributed locks.

Topology + lock + workload + nemesis produce a history (``chaos.history``); the checker
(``chaos.checker``) reads only that history; reports read only the history and the verdict.
"""

__version__ = "0.1.0"
