#!/usr/bin/env python3
"""@NAME@: a lock driver for lockchaos, on the Python driver kit (lockchaos_driver.py, next
to this file). Run it with the ``exec:`` value ``lockchaos driver new`` printed:

    lockchaos run --lock "exec:…" --faults client-pause,partition

The lock: ``SET key token NX PX ttl``, a Lua compare-and-delete release, a Lua
compare-and-``PEXPIRE`` extend, on redis-py through the kit's clients (this client's proxies,
every command announced for pause points, no retries). Replace the three methods with your
library's calls; docs/driver-protocol.md says what each answer means.
"""

import lockchaos_driver as kit
import redis

OWNED = "if redis.call('get', KEYS[1]) == ARGV[1] then return "
RELEASE = OWNED + "redis.call('del', KEYS[1]) end return 0"
EXTEND = OWNED + "redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"


class Lock:
    def __init__(self, hello: kit.Hello) -> None:
        self.redis = kit.primary(hello)  # the Sentinel master, else node 0
        self.key, self.ttl_ms = hello.lock_name, hello.ttl_ms

    def acquire(self, req: kit.Request) -> kit.Outcome:
        if self.redis.set(self.key, req.token, nx=True, px=self.ttl_ms):
            return kit.Granted(validity_ms=self.ttl_ms)  # from the request: SET went out then
        return kit.Refused()

    def release(self, req: kit.Request, lease: kit.Lease) -> kit.Outcome:
        released = self.redis.eval(RELEASE, 1, self.key, lease.token)
        return kit.Granted() if released else kit.Refused()

    def extend(self, req: kit.Request, lease: kit.Lease) -> kit.Outcome:
        if self.redis.eval(EXTEND, 1, self.key, lease.token, self.ttl_ms):
            return kit.Granted(validity_ms=self.ttl_ms)
        return kit.Refused()


if __name__ == "__main__":
    kit.serve(kit.Driver(name="@NAME@", library=f"redis-py {redis.__version__}"), Lock)
