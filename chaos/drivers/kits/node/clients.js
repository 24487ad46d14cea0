// Redis clients for a driver, configured as the rules require, with the hook that announces
// each command of a request (docs/driver-protocol.md, pause points): ioredis and node-redis v4.
"use strict";

const path = require("path");
const { createRequire } = require("module");
const { log, sent, tagged } = require("./protocol");

// The driver's own packages: the client library is the driver's dependency, not the kit's.
const driverDir = () => (require.main ? path.dirname(require.main.filename) : process.cwd());
const driverRequire = () => createRequire(path.join(driverDir(), "driver.js"));
const fromDriver = (name) => driverRequire()(name);

const made = []; // every client made here: the kit waits for them before it answers hello
let hooks = 0; // clients whose commands pass the kit's hook

/** The request a command about to go out belongs to, recorded on it with its reply; null
 * when it belongs to none (reported as sent). */
function claim(command, reply) {
  const request = tagged();
  if (request) request.commands.push({ command, reply });
  else sent(command);
  return request;
}

/** An ioredis client of `node` (default: the hello's first node, or with Sentinel the master
 * the hello's Sentinels report, every address mapped through `route`), with the options the
 * rules require — no command retried (maxRetriesPerRequest 0), none queued while disconnected
 * (enableOfflineQueue false: it fails at once, nothing sent), none resent after a reconnect
 * (autoResendUnfulfilledCommands false: a SET NX resent after its reply was lost comes back
 * "taken" although the lock is ours), the hello's socket timeout for connecting and for each
 * command — and the kit's hook. `extra` overrides any option. */
function ioredis(hello, node, extra = {}) {
  const Redis = fromDriver("ioredis");
  const timeout = hello.socket_timeout_ms;
  const where = node || !hello.sentinels.length
    ? { host: (node || hello.nodes[0]).host, port: (node || hello.nodes[0]).port }
    : { sentinels: hello.sentinels, name: hello.master_name, natMap: hello.route };
  const client = new Redis({
    password: hello.password || undefined,
    connectTimeout: timeout,
    commandTimeout: timeout,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    // The ready check (INFO, on connect) stays on: without it ioredis can end up "ready" on a
    // socket the proxy already closed, and never reconnect.
    enableReadyCheck: true,
    retryStrategy: () => 10, // reconnect soon after a node restarts
    ...where,
    ...extra,
  });
  client.on("error", () => {}); // a node's failure is its command's error, not a crash
  hookIoredis(client);
  made.push({ ready: () => client.status === "ready" });
  return client;
}

/** The kit's hook on an ioredis client made elsewhere (configure it as ioredis() does).
 * ioredis's sendCommand returns the command's promise, which the caller awaits: an announced
 * command is sent once the harness says go. The connection's own set-up (status "connect":
 * AUTH, SELECT, the INFO ready check) goes out at once, unannounced. */
function hookIoredis(client) {
  hooks += 1;
  const send = client.sendCommand.bind(client);
  client.sendCommand = (command, stream) => {
    if (client.status === "connect") return send(command, stream);
    const name = String(command.name).toUpperCase();
    const request = claim(name, command.promise);
    if (!request || !request.announce) return send(command, stream);
    // Not chained on send()'s result: the caller already holds command.promise, and a second
    // rejection of it would be unhandled, which ends the process on Node 15 and later.
    request.hold(name).then(() => {
      try {
        send(command, stream);
      } catch (error) {
        command.reject(error);
      }
    }, (error) => command.reject(error));
    return command.promise;
  };
  return client;
}

/** A node-redis v4 client of `node` (default: the hello's first node; node-redis v4 has no
 * Sentinel client), connecting at once, with the options the rules require — nothing queued
 * while disconnected (disableOfflineQueue: it fails at once, nothing sent), no CLIENT SETINFO
 * (less set-up), the hello's socket timeout for connecting — and the kit's hook. node-redis v4
 * has no command timeout: a command a silent node never answers is answered by the kit's
 * bound (indeterminate). `extra` overrides any option. */
function nodeRedis(hello, node, extra = {}) {
  if (!node && hello.sentinels.length) {
    throw new Error("node-redis v4 has no Sentinel client: run with --topology standalone");
  }
  const { createClient } = fromDriver("redis");
  const { host, port } = node || hello.nodes[0];
  const client = createClient({
    socket: { host, port, connectTimeout: hello.socket_timeout_ms, reconnectStrategy: () => 10 },
    password: hello.password || undefined,
    disableOfflineQueue: true,
    disableClientInfo: true,
    ...extra,
  });
  client.on("error", () => {}); // a node's failure is its command's error, not a crash
  hookNodeRedis();
  client.connect().catch((error) => log(`node-redis: ${error.message}`));
  made.push({ ready: () => client.isReady });
  return client;
}

let nodeRedisHooked = false;

/** The kit's hook on node-redis v4 (@redis/client 1.x), for every client of the driver's
 * `redis`. node-redis has no command hook, and its client keeps its queue and socket in private
 * fields; the smallest honest equivalent patches its two internal classes. The commands queue
 * (addCommand) is where a command is issued, in its caller's async context: the kit records it
 * on its request there. The socket (writeCommand) is where it goes out: an announced command
 * is written once the harness says go, and every later write on that socket waits behind it
 * (replies are matched to commands in order). A deferred write whose connection was replaced
 * meanwhile is dropped — node-redis already failed its command when that connection closed.
 * The connection's set-up (written before the socket is ready, queued "asap") is not
 * announced. */
function hookNodeRedis() {
  hooks += 1;
  if (nodeRedisHooked) return;
  nodeRedisHooked = true;
  const inRedis = createRequire(driverRequire().resolve("redis")); // the @redis/client it uses
  const Queue = inRedis("@redis/client/dist/lib/client/commands-queue").default;
  const Socket = inRedis("@redis/client/dist/lib/client/socket").default;
  const add = Queue.prototype.addCommand;
  Queue.prototype.addCommand = function addCommand(args, options) {
    const reply = add.call(this, args, options);
    const request = options && options.asap ? null : tagged();
    if (request) request.commands.push({ command: String(args[0]).toUpperCase(), reply });
    return reply;
  };
  const write = Socket.prototype.writeCommand;
  const sockets = new WeakMap(); // each socket's deferred writes
  Socket.prototype.writeCommand = function writeCommand(encoded) {
    if (!this.isReady) return write.call(this, encoded);
    let state = sockets.get(this);
    if (!state) {
      state = { tail: Promise.resolve(), pending: 0, connection: 0 };
      this.on("connect", () => { state.connection += 1; });
      sockets.set(this, state);
    }
    const name = commandName(encoded);
    const request = tagged();
    if (!request) sent(name);
    const announce = request !== null && request.announce;
    if (!announce && state.pending === 0) return write.call(this, encoded);
    const { connection } = state;
    state.pending += 1;
    state.tail = state.tail
      // A request answered before its go: the command still goes out, late, since node-redis
      // already waits for its reply; it was answered indeterminate, so that is no lie.
      .then(() => (announce ? request.hold(name).catch(() => {}) : undefined))
      .then(() => {
        if (state.connection === connection) write.call(this, encoded);
      })
      .catch((error) => log(`node-redis: a deferred write failed: ${error.message}`))
      .finally(() => { state.pending -= 1; });
    return undefined;
  };
}

/** The command's name from its RESP encoding (`*N\r\n$len\r\nNAME\r\n…`, or a Buffer next). */
function commandName(encoded) {
  const name = String(encoded[0]).split("\r\n")[2];
  return (name || String(encoded[1] || "")).toUpperCase();
}

/** Wait (at most `timeoutMs`) until every client made here is connected: a command sent
 * before its connection is up fails at once (no offline queue), a lost vote. */
function settle(timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve) => {
    const tick = () => {
      if (made.every((client) => client.ready()) || Date.now() > deadline) resolve();
      else setTimeout(tick, 5);
    };
    tick();
  });
}

/** How many clients have the kit's hook: none, and the driver has no pause points. */
const hooked = () => hooks;

module.exports = { fromDriver, hooked, hookIoredis, hookNodeRedis, ioredis, nodeRedis, settle };
