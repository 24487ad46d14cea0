// The lockchaos driver protocol, Node.js side (docs/driver-protocol.md), shared by the bundled
// Node drivers (build.sh copies it next to each driver.js): newline-delimited JSON on stdin and
// stdout, one request at a time, and the pause points of an ioredis client.
"use strict";

const readline = require("readline");
const path = require("path");
const fs = require("fs");

const write = (message) => process.stdout.write(JSON.stringify(message) + "\n");

// An installed package's version, read from its package.json (a package's "exports" may not
// list that file).
const version = (dir, name) =>
  JSON.parse(fs.readFileSync(path.join(dir, "node_modules", name, "package.json"), "utf8")).version;

let current = null; // { id, announce, type } of the request in progress
const waiting = []; // resolvers of "before" announcements waiting for "go"

// pause-points: announce every command of an operation, send it once the harness says "go".
// The caller awaits command.promise (returned at once), so the deferred send's own promise
// is dropped: chained on, a rejected command (a timeout, a closed connection) would be a
// second, unhandled rejection, which ends the process on Node 15 and later. The name is
// announced as ioredis has it now; a defineCommand script may still go out as EVAL instead
// of EVALSHA (ioredis decides as it writes), and pause points treat the two as one.
// `background()` says the command belongs to no request (a refresh timer's): sent at once,
// and reported as sent (a network fault's watch takes it: a holder at work sends nothing else).
function announcing(client, background = () => false) {
  const send = client.sendCommand.bind(client);
  client.sendCommand = (command, stream) => {
    // The connection's own set-up (status "connect": AUTH, SELECT, the INFO ready check) is
    // not the lock's, and goes out at once, as does anything outside an announced request.
    if (client.status !== "connect" && background()) {
      const reply = send(command, stream);
      write({ type: "sent", command: String(command.name).toUpperCase() });
      return reply;
    }
    if (!current || !current.announce || client.status === "connect") {
      return send(command, stream);
    }
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

// ioredis's options for one node (or, with `extra`, a Sentinel master): no retries and no
// queue of any command (maxRetriesPerRequest 0, no offline queue, nothing resent after a
// reconnect): a retried SET NX whose first reply was lost would lie.
function redisOptions(h, extra) {
  const timeout = h.socket_timeout_ms || 500;
  return {
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
    ...extra,
  };
}

// Wait (bounded) until every client is connected or has failed to: a command sent before the
// connection is up fails at once (no offline queue).
function settle(clients, timeoutMs) {
  return new Promise((resolve) => {
    const deadline = Date.now() + timeoutMs;
    const tick = () => {
      if (clients.every((c) => c.status === "ready") || Date.now() > deadline) resolve();
      else setTimeout(tick, 5);
    };
    tick();
  });
}

// Serve requests: `handlers.describe()` and `handlers.hello(m)` answer with the message to
// write (hello's may be a refusal, after which the process exits); `handlers[type](m)` answers
// each request. An exception from a request is an indeterminate error.
function serve(handlers) {
  let ready = false;
  async function handle(m) {
    if (m.type === "describe") return write(handlers.describe());
    if (m.type === "hello") {
      const reply = await handlers.hello(m);
      write(reply);
      if (!reply.ok) process.exit(0);
      ready = true;
      return;
    }
    if (!ready) return write({ type: "error", id: m.id, definite: true, message: "no hello yet" });
    const handler = handlers[m.type];
    if (!handler) return write({ type: "error", id: m.id, definite: true, message: `unsupported request ${m.type}` });
    current = { id: m.id, announce: !!m.announce, type: m.type };
    try {
      write(await handler(m));
    } catch (error) {
      write({ type: "error", id: m.id, definite: false, message: String(error && error.message) });
    } finally {
      current = null;
    }
  }

  const queue = [];
  let busy = false;
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
}

const request = () => current;

module.exports = { announcing, redisOptions, request, serve, settle, version, write };
