// The lockchaos driver for the `redis-lock` npm package over node-redis v4, on the Node driver
// kit (chaos/drivers/kits/node, docs/driver-protocol.md).
//
// `require("redis-lock")(client)(name, TTL)` resolves to `done` once its `SET lock.<name>
// <its clock + TTL + 1> PX TTL NX` wins; `done()` is a check of that value against its clock,
// then a plain `DEL lock.<name>`. The package has no one-attempt mode: every refused or failed
// SET is tried again 50 ms later, for ever, and cannot be cancelled. One attempt per acquire
// (the harness owns the retry loop): each acquire hands the package a client whose first `set`
// is the kit's and whose later ones (its retries) are never sent. A grant that comes after the
// kit's bound answered the acquire is released by the kit at once. The package chooses the
// value (its expiry time), so the kit's token names the lease in the history only.
"use strict";

const kit = require("@lockchaos/driver-kit");
const redisLock = require("redis-lock");

const LIBRARY = `redis-lock ${kit.version("redis-lock")} + redis ${kit.version("redis")}`;

kit.serve({ driver: "node-redis-lock", library: LIBRARY }, async (hello) => {
  const client = kit.nodeRedis(hello);
  return {
    async acquire(req) {
      let attempt = null;
      const once = { v4: true, del: (...args) => client.del(...args),
        // A retry's SET: never sent, never answered (a promise of its own, so the package's
        // suspended retry is garbage once this acquire is).
        set: (...args) => (attempt ? new Promise(() => {}) : (attempt = client.set(...args))) };
      const done = redisLock(once)(hello.lock_name, hello.ttl_ms); // sends its SET at once
      try {
        if ((await attempt) === null) return kit.refused("taken");
      } catch (error) {
        return kit.failure(error);
      }
      // PX TTL, set after the request was sent: valid for the TTL from then, at least.
      return kit.granted(await done, hello.ttl_ms);
    },
    async release(req, done) {
      try {
        const deleted = await done();
        if (deleted === undefined) return kit.failed(true, "not sent: the library's clock said the lease had expired");
        return deleted === 1 ? kit.released() : kit.refused("no key to delete");
      } catch (error) {
        return kit.failure(error);
      }
    },
  };
});
