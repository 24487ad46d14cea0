"""Locks under test: the plugin contract (``contract``, documented in
docs/writing-a-lock-adapter.md), the context a factory gets (``context``), and the bundled lock
zoo, one module each (named by ``chaos.lockspec.BUNDLED``, which resolves a ``--lock`` value:
this package knows nothing of drivers nor of what names what).
"""

from chaos.locks.context import build_context
from chaos.locks.contract import (
    ExtendableLockClient,
    Lease,
    LockClient,
    LockContext,
    LockFactory,
    LockInfo,
)

__all__ = [
    "ExtendableLockClient",
    "Lease",
    "LockClient",
    "LockContext",
    "LockFactory",
    "LockInfo",
    "build_context",
]
