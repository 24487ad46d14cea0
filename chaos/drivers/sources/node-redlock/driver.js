// The lockchaos driver for the `redlock` npm package over ioredis (docs/driver-protocol.md).
//
// Redlock.acquire on every node of the hello (N standalone masters), with the package's
// defaults except retryCount 0 (the harness owns the retry loop) and a lock value that starts
// with the client id. ioredis never retries nor queues a command (maxRetriesPerRequest 0,
// no offline queue): a retried SET NX whose first reply was lost would lie.
"use strict";

const readline = require("readline");
const { randomBytes } = require("crypto");
const Redis = require("ioredis");
const { default: Redlock, ExecutionError, ResourceLockedError } = require("redlock");

const path = require("path");
const fs = require("fs");
const version = (name) => {
  // Read the installed package.json directly: redlock's "exports" do not list it.
  const file = path.join(__dirname, "node_modules", name, "package.json");
  return JSON.parse(fs.readFileSync(file, "utf8")).version;
};
const LIBRARY = `redlock ${version("redlock")} + ioredis ${version("ioredis")}`;
const CAPABILITIES = ["pause-points"];

const write = (message) => process.stdout.write(JSON.stringify(message) + "\n");

let hello = null;
let redlock = null;
let clients = [];
const leases = new Map();
let current = null; // { id, announce } of the request in progress
const waiting = []; // resolvers of "before" announcements waiting for "go"

// pause-points: announce every command of an operation, send it once the harness says "go".
// The caller awaits command.promise (returned at once), so the deferred send's own promise
// is dropped: chained on, a rejected command (a timeout, a closed connection) would be a
// second, unhandled rejection, which ends the process on Node 15 and later. The name is
// announced as ioredis has it now; a defineCommand script may still go out as EVAL instead
// of EVALSHA (ioredis decides as it writes), and pause points treat the two as one.
function announcing(client) {
  const send = client.sendCommand.bind(client);
  client.sendCommand = (command, stream) => {
    // The connection's own set-up (status "connect": AUTH, SELECT, the INFO ready check) is
    // not the lock's, and goes out at once, as does anything outside an announced request.
    if (!current || !current.announce || client.status === "connect") return send(command, stream);
    const id = current.id;
    waiting.push(() => {
      try {
        send(command, stream);
      } catch (error) {
        command.reject(error);
      }
    });
    write({ type: "before", id, command: String(command.name).toUpperCase() });
    return command.promise;
  };
  return client;
}

function connect(h) {
  const timeout = h.socket_timeout_ms || 500;
  return h.nodes.map((a) =>
    announcing(
      new Redis({
        host: a.host,
        port: a.port,
        password: h.password || undefined,
        connectTimeout: timeout,
        commandTimeout: timeout,
        maxRetriesPerRequest: 0,
        enableOfflineQueue: false,
        autoResendUnfulfilledCommands: false,
        // The default ready check (INFO on connect) stays on: without it ioredis can end up
        // "ready" on a socket the proxy already closed, and never reconnect.
        enableReadyCheck: true,
        retryStrategy: () => 10, // reconnect soon after a node restarts
        lazyConnect: false,
      }).on("error", () => {}),
    ),
  );
}

// Wait (bounded) until every node is connected or has failed to: a command sent before the
// connection is up fails at once (no offline queue), which would be a lost vote.
function settle(timeoutMs) {
  return new Promise((resolve) => {
    const deadline = Date.now() + timeoutMs;
    const tick = () => {
      if (clients.every((c) => c.status === "ready") || Date.now() > deadline) resolve();
      else setTimeout(tick, 5);
    };
    tick();
  });
}

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

const queue = [];
let busy = false;

async function handle(m) {
  if (m.type === "describe") {
    write({ type: "describe", driver: "node-redlock", language: "node", library: LIBRARY, capabilities: CAPABILITIES });
    return;
  }
  if (m.type === "hello") {
    hello = m;
    if (m.nodes.length < 3) {
      write({ type: "hello", ok: false, message: `node-redlock needs at least 3 independent masters (got ${m.nodes.length}): use --topology standalone --nodes 5` });
      process.exit(0);
    }
    clients = connect(m);
    redlock = new Redlock(clients, { retryCount: 0 });
    redlock.on("error", (error) => {
      // Each node's failure is a vote against, not a crash.
      if (process.env.LOCKCHAOS_DRIVER_DEBUG) console.error(Date.now(), "vote against:", error.message);
    });
    await settle(2000);
    write({ type: "hello", ok: true, driver: "node-redlock", language: "node", library: LIBRARY, capabilities: CAPABILITIES });
    return;
  }
  if (!redlock) {
    write({ type: "error", id: m.id, definite: true, message: "no hello yet" });
    return;
  }
  current = { id: m.id, announce: !!m.announce };
  try {
    if (m.type === "acquire") write(await acquire(m.id));
    else if (m.type === "release") write(await release(m.id, m.token));
    else write({ type: "error", id: m.id, definite: true, message: `unsupported request ${m.type}` });
  } catch (error) {
    write({ type: "error", id: m.id, definite: false, message: String(error && error.message) });
  } finally {
    current = null;
  }
}

async function drain() {
  if (busy) return;
  busy = true;
  while (queue.length) await handle(queue.shift());
  busy = false;
}

const lines = readline.createInterface({ input: process.stdin });
lines.on("line", (line) => {
  if (!line.trim()) return;
  const m = JSON.parse(line);
  if (m.type === "go") {
    const resolve = waiting.shift();
    if (resolve) resolve();
    return;
  }
  queue.push(m);
  drain();
});
lines.on("close", () => process.exit(0));
