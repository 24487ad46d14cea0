// The lockchaos driver for the `redis-semaphore` npm package's Semaphore over ioredis, on the
// Node driver kit (chaos/drivers/kits/node, docs/driver-protocol.md).
//
// One Semaphore object per acquire, as the package means them (one holder each): the key is
// the hello's lock name, the limit the run's capacity, lockTimeout the TTL, the identifier
// the kit's token (readable in the sorted set), and one attempt (acquireAttemptsLimit 1: the
// harness owns the retry loop). The package's own refresh stays on (every 0.8 × lockTimeout):
// each one is reported as a renewal (validity 0 when it found the permit gone); its commands
// belong to no request, and the kit reports them as sent. Its lost-lock callback only logs:
// the package's default throws from a timer.
"use strict";

const kit = require("@lockchaos/driver-kit");
const { Semaphore } = require("redis-semaphore");

const LIBRARY = `redis-semaphore ${kit.version("redis-semaphore")} + ioredis ${kit.version("ioredis")}`;

// The package's refresh, timed and reported as a renewal of `token`. One that found the permit
// gone makes the package give it up (validity 0). Reported even if the permit was released
// meanwhile: it went out while held (the checker applies it to no later lease).
function reportingRefresh(semaphore, token, ttlMs) {
  const refresh = semaphore._refresh.bind(semaphore);
  semaphore._refresh = async () => {
    const sent = kit.now(); // refresh() sends its command before its first await
    const ok = await refresh();
    kit.renewed(token, ok ? ttlMs : 0, sent);
    return ok;
  };
}

const DESCRIPTION = { driver: "node-semaphore", library: LIBRARY, capacity: 3, modes: ["shared"], max_permits: 1, renews: true };

kit.serve(DESCRIPTION, async (hello) => {
  if (hello.capacity === null) throw new Error("a Semaphore needs a number of permits: --capacity N");
  const client = kit.ioredis(hello);
  return {
    async acquire(req) {
      const semaphore = new Semaphore(client, hello.lock_name, hello.capacity, {
        lockTimeout: hello.ttl_ms,
        acquireAttemptsLimit: 1,
        retryInterval: 0,
        identifier: req.token,
        onLockLost: (error) => console.error(Date.now(), "lost:", req.token, error.message),
      });
      reportingRefresh(semaphore, req.token, hello.ttl_ms);
      if (!(await semaphore.tryAcquire())) return kit.refused();
      return kit.granted(semaphore, hello.ttl_ms);
    },
    // Semaphore.release() sends ZREM key identifier and drops its reply: read here, from the
    // command itself. 1 removed our permit; 0: it was no longer there (removed as expired by
    // some client's clock). A semaphore that had lost its lock sends nothing.
    async release(req, semaphore) {
      await semaphore.release();
      const zrem = req.commands.find((sent) => sent.command === "ZREM");
      if (!zrem) return kit.failed(true, "not sent: the package had lost the lock");
      return (await zrem.reply) === 1 ? kit.released() : kit.refused();
    },
  };
});
