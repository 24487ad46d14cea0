// The lockchaos driver for the `redis-semaphore` npm package's Semaphore over ioredis
// (docs/driver-protocol.md).
//
// One Semaphore object per acquire, as the package means them (one holder each): the key is
// the hello's lock name, the limit the run's capacity, lockTimeout the TTL, the identifier
// the token (readable in the sorted set), and one attempt (acquireAttemptsLimit 1: the harness
// owns the retry loop). The package's own refresh stays on (every 0.8 × lockTimeout): each one
// is reported as a renewal (validity 0 when it found the permit gone). Its lost-lock callback
// and a refresh that fails only log: the package's defaults throw from a timer, an unhandled
// rejection that ends the process on Node 15 and later, and an application that uses it must
// catch them too.
"use strict";

const { randomBytes } = require("crypto");
const Redis = require("ioredis");
const { Semaphore } = require("redis-semaphore");
const { announcing, redisOptions, request, serve, settle, version } = require("./protocol");

const LIBRARY = `redis-semaphore ${version(__dirname, "redis-semaphore")} + ioredis ${version(__dirname, "ioredis")}`;
const CAPABILITIES = ["pause-points"];
const SELF = { driver: "node-semaphore", language: "node", library: LIBRARY, capabilities: CAPABILITIES };
const log = (...what) => console.error(Date.now(), ...what);

process.on("unhandledRejection", (error) => log("unhandled rejection:", String(error && error.message)));

let hello = null;
let client = null;
let refreshing = false; // a refresh timer's command is being sent: no request's, never announced
const leases = new Map(); // token → its Semaphore

function connect(h) {
  if (h.sentinels && h.sentinels.length) {
    // The master as the Sentinels report it, mapped through this client's proxies (route).
    return new Redis(redisOptions(h, { sentinels: h.sentinels, name: h.master_name, natMap: h.route }));
  }
  return new Redis(redisOptions(h, { host: h.nodes[0].host, port: h.nodes[0].port }));
}

// The package's refresh, timed and reported as a renewal of `token` (validity 0: it gave up).
function reportingRefresh(semaphore, token) {
  const refresh = semaphore._refresh.bind(semaphore);
  semaphore._refresh = async () => {
    const sent = process.hrtime.bigint(); // CLOCK_MONOTONIC: the history's clock
    refreshing = true;
    let reply;
    try {
      reply = refresh(); // sends its command before its first await
    } finally {
      refreshing = false;
    }
    const ok = await reply;
    // A refresh that found the permit gone makes the package give it up (onLockLost, no more
    // refreshes): validity 0, the refresh timer alive. Reported even if the permit was
    // released meanwhile: it went out while held (the checker applies it to no later lease).
    const validity_ms = ok ? hello.ttl_ms : 0;
    process.stdout.write(JSON.stringify({ type: "renewed", token, validity_ms, sent_ns: Number(sent) }) + "\n");
    return ok;
  };
}

async function acquire(m) {
  const token = `${hello.client_id}:${randomBytes(8).toString("hex")}`;
  if (m.permits !== undefined && m.permits !== 1) {
    return { type: "error", id: m.id, definite: true, message: `one permit per acquire, not ${m.permits}` };
  }
  const semaphore = new Semaphore(client, hello.lock_name, hello.capacity, {
    lockTimeout: hello.ttl_ms,
    acquireAttemptsLimit: 1,
    retryInterval: 0,
    identifier: token,
    onLockLost: (error) => log("lost:", token, error.message),
  });
  reportingRefresh(semaphore, token);
  if (!(await semaphore.tryAcquire())) return { type: "refused", id: m.id };
  leases.clear();
  leases.set(token, semaphore);
  return { type: "ok", id: m.id, token, validity_ms: hello.ttl_ms };
}

// Semaphore.release() sends ZREM key identifier and drops its reply; the reply is read here,
// from the command itself: 1 removed our permit, 0 means it was no longer there (removed as
// expired by some client's clock). A semaphore that had lost its lock sends nothing.
async function release(m) {
  const semaphore = leases.get(m.token);
  if (!semaphore) return { type: "refused", id: m.id, message: "no such lease" };
  leases.delete(m.token);
  request().zrem = null;
  await semaphore.release();
  const removed = request().zrem;
  if (!removed) {
    return { type: "error", id: m.id, definite: true, message: "not sent: the package had lost the lock" };
  }
  return (await removed) === 1 ? { type: "ok", id: m.id } : { type: "refused", id: m.id };
}

// Keeps the ZREM of a release (see release) for its reply.
function watchingReleases(redis) {
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = (command, stream) => {
    const now = request();
    if (now && now.type === "release" && String(command.name).toLowerCase() === "zrem") now.zrem = command.promise;
    return send(command, stream);
  };
  return redis;
}

serve({
  describe: () => ({ type: "describe", ...SELF, capacity: 3, modes: ["shared"], max_permits: 1 }),
  async hello(m) {
    hello = m;
    if (!m.capacity) {
      // A mutex's hello has no capacity: the run's --capacity 1, a semaphore of one permit.
      hello.capacity = m.capacity === null ? null : 1;
    }
    if (hello.capacity === null) {
      return { type: "hello", ok: false, message: "a Semaphore needs a number of permits: --capacity N" };
    }
    client = announcing(watchingReleases(connect(m)), () => refreshing).on("error", () => {});
    await settle([client], 2000);
    return { type: "hello", ok: true, ...SELF };
  },
  acquire,
  release,
});
