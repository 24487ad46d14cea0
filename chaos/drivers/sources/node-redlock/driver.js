// The lockchaos driver for the `redlock` npm package over ioredis (docs/driver-protocol.md).
//
// Redlock.acquire on every node of the hello (N standalone masters), with the package's
// defaults except retryCount 0 (the harness owns the retry loop) and a lock value that starts
// with the client id. ioredis never retries nor queues a command (maxRetriesPerRequest 0,
// no offline queue): a retried SET NX whose first reply was lost would lie.
"use strict";

const { randomBytes } = require("crypto");
const Redis = require("ioredis");
const { default: Redlock, ExecutionError, ResourceLockedError } = require("redlock");
const { announcing, redisOptions, serve, settle, version } = require("./protocol");

const LIBRARY = `redlock ${version(__dirname, "redlock")} + ioredis ${version(__dirname, "ioredis")}`;
const CAPABILITIES = ["pause-points"];
const SELF = { driver: "node-redlock", language: "node", library: LIBRARY, capabilities: CAPABILITIES };

let hello = null;
let redlock = null;
const leases = new Map();

const connect = (h) =>
  h.nodes.map((a) => announcing(new Redis(redisOptions(h, { host: a.host, port: a.port }))).on("error", () => {}));

const token = () => `${hello.client_id}:${randomBytes(8).toString("hex")}`;

async function acquire(id) {
  const value = token();
  redlock._random = () => value; // the lock's value: the token, readable in the history
  const start = Date.now();
  try {
    const lock = await redlock.acquire([hello.lock_name], hello.ttl_ms);
    leases.clear();
    leases.set(value, lock);
    return { type: "ok", id, token: value, validity_ms: lock.expiration - start };
  } catch (error) {
    if (error instanceof ExecutionError) return await notDone(id, error);
    throw error;
  }
}

// A quorum not reached (acquire) or not confirmed (release): refused when the definite votes
// prove no quorum could have done it, whatever the others did; otherwise — nodes whose
// command may have landed could make a quorum — indeterminate, even though redlock reports
// a failure (docs/driver-protocol.md). Definite: the node answered that the key was not ours
// (ResourceLockedError), or ioredis sent nothing (no connection, and no offline queue).
const NOT_SENT = "Stream isn't writeable";
const definitely = (e) => e instanceof ResourceLockedError || String(e && e.message).startsWith(NOT_SENT);

async function notDone(id, error) {
  const stats = error.attempts.length ? await error.attempts[0] : null;
  if (!stats) return { type: "refused", id, message: error.message };
  let definite = 0;
  for (const e of stats.votesAgainst.values()) if (definitely(e)) definite += 1;
  const unanswered = stats.membershipSize - stats.votesFor.size - definite;
  if (stats.votesFor.size + unanswered < stats.quorumSize) {
    return { type: "refused", id, message: error.message };
  }
  return { type: "error", id, definite: false, message: `${error.message} (${unanswered} nodes did not answer)` };
}

// ok when a quorum deleted our value; otherwise as notDone.
async function release(id, value) {
  const lock = leases.get(value);
  if (!lock) return { type: "refused", id, message: "no such lease" };
  leases.delete(value);
  try {
    await lock.release();
    return { type: "ok", id };
  } catch (error) {
    if (error instanceof ExecutionError) return await notDone(id, error);
    throw error;
  }
}

serve({
  describe: () => ({ type: "describe", ...SELF }),
  async hello(m) {
    hello = m;
    if (m.nodes.length < 3) {
      return { type: "hello", ok: false, message: `node-redlock needs at least 3 independent masters (got ${m.nodes.length}): use --topology standalone --nodes 5` };
    }
    const clients = connect(m);
    redlock = new Redlock(clients, { retryCount: 0 });
    redlock.on("error", (error) => {
      // Each node's failure is a vote against, not a crash.
      if (process.env.LOCKCHAOS_DRIVER_DEBUG) console.error(Date.now(), "vote against:", error.message);
    });
    // A command sent before a connection is up fails at once (no offline queue): a lost vote.
    await settle(clients, 2000);
    return { type: "hello", ok: true, ...SELF };
  },
  acquire: (m) => acquire(m.id),
  release: (m) => release(m.id, m.token),
});
