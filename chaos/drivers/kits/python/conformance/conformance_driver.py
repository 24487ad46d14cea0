#!/usr/bin/env python3
"""The Python kit's conformance driver: the skeleton's lock (kits/python/skeleton/driver.py),
misbehaving on demand as ``LOCKCHAOS_CONFORMANCE`` says (chaos/drivers/kits/README.md):

* ``retry-forever``: its acquire retries ``SET NX`` every 10 ms until it wins, with no bound
  of its own (the kit's bound must answer it in time, and release the grant that comes late);
* ``late-command``: 300 ms after each acquire returned, the library sends ``GET`` on its own,
  from a thread of that acquire (a callback firing after the answer went out);
* ``slow-start``: the lock takes 2 s to build (a cold start, within the hello bound).
"""

import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), os.path.join(os.path.dirname(HERE), "skeleton")]

import lockchaos_driver as kit  # noqa: E402
from driver import Lock  # noqa: E402  (the skeleton's)

BEHAVIOUR = os.environ.get("LOCKCHAOS_CONFORMANCE", "")
RETRY_S, LATE_S, SLOW_START_S = 0.01, 0.3, 2.0


class Misbehaving(Lock):
    def __init__(self, hello: kit.Hello) -> None:
        if BEHAVIOUR == "slow-start":
            time.sleep(SLOW_START_S)
        super().__init__(hello)

    def acquire(self, req: kit.Request) -> kit.Outcome:
        outcome = super().acquire(req)
        while BEHAVIOUR == "retry-forever" and not isinstance(outcome, kit.Granted):
            time.sleep(RETRY_S)
            outcome = super().acquire(req)
        if BEHAVIOUR == "late-command":
            late = threading.Timer(LATE_S, kit.carry(lambda: self.redis.get(self.key)))
            late.daemon = True
            late.start()
        return outcome


if __name__ == "__main__":
    kit.serve(kit.Driver(name=f"python-conformance-{BEHAVIOUR or 'plain'}",
                         library="redis-py"), Misbehaving)
