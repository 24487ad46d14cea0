"""sherlock-no-expire — sherlock 0.4.1's RedisLock(expire=None): a lock meant to never expire.

Seed: beyond the seeds: a third-party Python lock library, PyPI ``sherlock`` 0.4.1
(``sherlock/lock.py``), as documented: "If explicitly set to ``None``, lock will not expire".

Known flaw: every acquire is granted, with no fault at all: the acquire script guards its
EXPIRE with ARGV[2] ~= -1, but a Lua ARGV is a string and "-1" ~= -1 is always true, so it
sends EXPIRE key -1, which deletes the key SETNX just set (lock.py:416, 484-485; the guard
came with PR py-sherlock/sherlock#37, whose test asserts ttl < 0, which a missing key's -2
passes).

Read at 0.4.1 (issue 35's corpus): ``_acquire`` turns ``expire=None`` into ``-1``
(``lock.py:484-485``); ``acquire()`` returns True and no key remains, so the next client's
``SETNX`` wins too. The lease claims what the library promises, no expiry (a day, longer than
any run): two holders overlap as valid leases (hard). ``release()`` then finds nothing to
delete and raises ``LockException``: ``False``. No ``extend``: ``renew()`` with ``expire=None``
raises redis-py's ``DataError`` before sending anything (``lock.py:510``). Otherwise the
``sherlock`` adapter (``chaos.locks.sherlock_redislock``).
"""

from __future__ import annotations

from chaos.locks.contract import LockContext
from chaos.locks.parts import lock_info
from chaos.locks.sherlock_redislock import LIBRARY, SherlockLock


def make(ctx: LockContext) -> SherlockLock:
    return SherlockLock(ctx, None)


INFO = lock_info(__doc__, name="sherlock-no-expire", module=__name__, **LIBRARY)
