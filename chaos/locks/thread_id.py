"""thread-id — ``SET key thread_id NX PX``, compare-and-delete: the token is the thread's id.

Seed: 003_ad4e3d3f63ce056d.txt, 常规setnx方式实现
("value为每个线程的唯一标识（可取uuid、线程id等）", ``SET lock_key thread_id NX PX 30000``);
000 and 004's PHP ``uniqid()`` make the same bet that an identifier is unique across
processes.

Known flaw: a thread id is unique only within one process, so two client processes can store
the same "unique" token, and one's compare-and-delete release deletes the other's lock.

The token is ``threading.get_ident()``, Python's thread identifier (Java's
``Thread.getId()`` is 1 for every JVM's main thread): client processes forked from the same
harness thread all get the same one. The compare-and-delete script is the correct one; what
fails is the premise that the value identifies its owner.
"""

from __future__ import annotations

import threading

from chaos.locks.contract import LockContext
from chaos.locks.parts import CompareAndDeleteRelease, SetNxPxLock, lock_info


class ThreadIdLock(CompareAndDeleteRelease, SetNxPxLock):
    def new_token(self) -> str:
        return str(threading.get_ident())


def make(ctx: LockContext) -> ThreadIdLock:
    return ThreadIdLock(ctx)


INFO = lock_info(__doc__, name="thread-id", module=__name__)
