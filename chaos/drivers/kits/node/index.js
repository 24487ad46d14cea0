// @lockchaos/driver-kit: a lockchaos driver in Node.js is one call (docs/driver-protocol.md),
//
//   kit.serve({ driver, library, ... }, async (hello) => ({ acquire, release, extend? }))
//
// and the lock's methods. The kit does the rest: the newline-delimited JSON on stdin and
// stdout (only protocol lines reach stdout), the handshake (describe, hello), one request at
// a time, a token per acquire and the map from it to the library's lease, every request
// answered within the harness's bound (a library that overruns it is answered indeterminate,
// and a grant it hands over too late is released at once), the quorum rule (Tally), renewals
// dated by CLOCK_MONOTONIC (renewed), and hooks for ioredis and node-redis v4 that announce
// each command of a request — tagged by the request's own async context, so a command sent
// after its request was answered (a refresh timer) is reported as sent, never taken for the
// next request's.
"use strict";

const fs = require("fs");
const path = require("path");
const readline = require("readline");
const { randomBytes } = require("crypto");
const protocol = require("./protocol");
const clients = require("./clients");

const { ONLY, Outcome, Request, failed, line, log, now, requests } = protocol;

const HELLO_BUDGET_MS = 20000; // the harness waits 30 s for the hello's answer
const SETTLE_MS = 2000; // connections the hello waits for
const SLICE_MS = 50; // a bounded wait looks at its budget this often
const STALL_NS = 250_000_000n; // a slice longer than this: the process was stopped
const MAX_LEASES = 1024; // remembered at once: older tokens are forgotten
const OPS = ["acquire", "release", "extend"];
const DEBUG = !!process.env.LOCKCHAOS_DRIVER_DEBUG; // every answer logged on stderr too

// A library's stray rejection (a timer's failed refresh) is logged, not fatal: Node 15 and
// later end the process on an unhandled rejection.
process.on("unhandledRejection", (error) => {
  console.error(Date.now(), "unhandled rejection:", String(error && error.message));
});

/** An installed package's version, read from the driver's node_modules (a package's "exports"
 * may not list its package.json). */
function version(name) {
  const dir = require.main ? path.dirname(require.main.filename) : process.cwd();
  return JSON.parse(fs.readFileSync(path.join(dir, "node_modules", name, "package.json"), "utf8")).version;
}

/** Serve the driver until its input ends, then exit. `description`: { driver, library,
 * capabilities (e.g. ["extend"]: the kit adds pause-points and faked-clock), unhooked (its
 * library's commands do not pass the kit's hooks), topology, min_nodes (a hello with fewer is
 * refused), capacity, modes, fair, max_permits, ttl_granularity_ms, renews }
 * (docs/driver-protocol.md, describe). `open(hello)` builds the lock
 * ({ acquire(req), release(req, lease), extend?(req, lease) }, each resolving to an Outcome)
 * with the kit's clients; what it throws is the hello's refusal, one line. */
function serve(description, open) {
  const server = new Server(description, open);
  const input = readline.createInterface({ input: process.stdin });
  input.on("line", (text) => server.read(text));
  input.on("close", () => process.exit(0)); // the client stopped
}

class Server {
  constructor(description, open) {
    this.description = description;
    this.open = open;
    this.state = "new"; // "starting" once hello came, "ready" once answered
    this.current = null; // the request being served
    this.lastId = 0;
    this.leases = new Map(); // token → { value, invalidated }
  }

  read(text) {
    if (!text.trim()) return;
    let m;
    try {
      m = JSON.parse(text);
    } catch (error) {
      return this.refuse(undefined, `a line that is not JSON (${error.message}): ${text.slice(0, 80)}`);
    }
    if (m === null || typeof m !== "object" || Array.isArray(m)) {
      return this.refuse(undefined, `a line that is not a JSON object: ${text.slice(0, 80)}`);
    }
    if (m.type === "go") return this.goAhead(m.id);
    if (m.type === "describe") return line(this.describe());
    if (m.type === "hello") return this.start(m);
    if (OPS.includes(m.type)) return this.request(m);
    return this.refuse(m.id, `an unknown request type ${JSON.stringify(m.type)}`);
  }

  /** A line the kit cannot serve: a log line, and a definite error when it has an id. */
  refuse(id, why) {
    log(why);
    if (Number.isInteger(id)) line(failed(true, why).reply(id));
  }

  capabilities(hooked) {
    const caps = [...(this.description.capabilities || []), "faked-clock"]; // Node reads the clock through libc
    if (hooked) caps.push("pause-points");
    return [...new Set(caps)];
  }

  describe() {
    const { driver, library, unhooked, capabilities, ...needs } = this.description;
    return { type: "describe", driver, language: "node", library, capabilities: this.capabilities(!unhooked), ...needs };
  }

  async start(m) {
    if (this.state !== "new") return log("a second hello: ignored");
    this.state = "starting";
    const hello = { sentinels: [], route: {}, ...m };
    if (hello.capacity === undefined) hello.capacity = 1; // null: unbounded
    let lock;
    try {
      this.enough(hello);
      lock = await Promise.race([
        this.open(hello),
        new Promise((_, reject) => setTimeout(
          () => reject(new Error(`the lock was not ready within ${HELLO_BUDGET_MS / 1000} s (connect lazily)`)),
          HELLO_BUDGET_MS).unref()),
      ]);
      if (!lock || typeof lock.acquire !== "function" || typeof lock.release !== "function") {
        throw new Error("open(hello) gave no lock with acquire and release");
      }
      const extend = (this.description.capabilities || []).includes("extend");
      if (extend && typeof lock.extend !== "function") throw new Error("described with extend, but the lock has no extend");
    } catch (error) {
      line({ type: "hello", ok: false, message: String((error && error.message) || error).split("\n")[0] });
      process.exit(0);
    }
    await clients.settle(SETTLE_MS);
    let hooked = !this.description.unhooked;
    if (hooked && clients.hooked() === 0) {
      log("no client of the lock has the kit's hook (kit.ioredis, kit.nodeRedis): no pause-points");
      hooked = false;
    }
    this.lock = lock;
    this.hello = hello;
    // A bound below the harness's, max(3 s, 4 × TTL): answered before it gives up.
    this.budgetNs = BigInt(Math.round(Math.max(3000, 4 * hello.ttl_ms) * 0.8 * 1e6));
    const { driver, library } = this.description;
    line({ type: "hello", ok: true, driver, language: "node", library, capabilities: this.capabilities(hooked) });
    this.state = "ready";
  }

  /** Throws the hello's refusal when it has fewer nodes than the min_nodes described. */
  enough(hello) {
    const { driver, topology, min_nodes: least = 1 } = this.description;
    const got = hello.nodes.length;
    if (got >= least) return;
    throw new Error(topology === "standalone"
      ? `${driver} needs at least ${least} independent masters (got ${got}): use --topology standalone --nodes ${Math.max(5, least)}`
      : `${driver} needs at least ${least} nodes (got ${got}): use --nodes ${least}`);
  }

  /** Check one request's place in the sequence, then serve it. */
  request(m) {
    if (!Number.isInteger(m.id)) return log(`a ${m.type} without an integer id: ignored`);
    let why = null;
    if (this.state !== "ready") why = "no hello yet";
    else if (this.current) why = `${m.type} #${m.id} while #${this.current.id} is not answered`;
    else if (m.id <= this.lastId) why = `${m.type} #${m.id} after #${this.lastId}: ids grow`;
    else if (m.type !== "acquire" && typeof m.token !== "string") why = `${m.type} without a token`;
    else if (m.type === "extend" && typeof this.lock.extend !== "function") why = "extend: this lock cannot extend";
    if (why) return this.refuse(m.id, why);
    const request = new Request(m);
    this.current = request;
    this.lastId = m.id;
    this.handle(request);
  }

  goAhead(id) {
    const request = this.current;
    if (!request || request.id !== id || !request.goAhead()) log("a go that no announcement waits for: ignored");
  }

  async handle(request) {
    const early = this.prepare(request);
    if (early) return this.answer(request, early);
    const outcome = requests.run(request, () => this.call(request));
    const answer = await this.bounded(request, outcome);
    if (answer) return this.answer(request, answer);
    this.answer(request, failed(false, `the lock's ${request.op} did not return within `
      + `${(Number(this.budgetNs) / 1e9).toFixed(1)} s (the kit's bound, below the harness's): it may have happened`));
    this.late(request, await outcome);
  }

  /** What only the kit knows (the lease of the token, the modes and permits described); an
   * answer when the lock is not to be asked. */
  prepare(request) {
    if (request.op === "acquire") {
      const { modes = ["exclusive"], max_permits: maxPermits } = this.description;
      if (request.mode !== undefined && !modes.includes(request.mode)) {
        return failed(true, `no mode ${JSON.stringify(request.mode)}: it grants ${modes.join(", ")}`);
      }
      if (maxPermits && request.permits > maxPermits) {
        return failed(true, `at most ${maxPermits} permits per acquire, not ${request.permits}`);
      }
      request.token = `${this.hello.client_id}:${randomBytes(8).toString("hex")}`;
      return null;
    }
    const lease = this.leases.get(request.token);
    if (!lease) {
      const why = `${request.op} #${request.id}: no lease ${request.token} (never granted, or released)`;
      log(why);
      return failed(true, why);
    }
    if (lease.invalidated) return failed(true, `not sent: the library invalidated the lease's lock object (${lease.invalidated})`);
    request.lease = lease.value;
    return null;
  }

  /** The lock's method, as an Outcome: a throw or anything else is an indeterminate error. */
  async call(request) {
    try {
      const outcome = await this.lock[request.op](request, request.lease);
      if (!(outcome instanceof Outcome)) {
        return failed(false, `the lock's ${request.op} resolved to ${JSON.stringify(outcome)}, not an outcome`);
      }
      const only = ONLY[outcome.type];
      if (only && only !== request.op) {
        return failed(false, `the lock answered ${request.op} #${request.id} with ${outcome.type}, which only an ${only} may have`);
      }
      return outcome;
    } catch (error) {
      return failed(false, String((error && error.message) || error));
    }
  }

  /** The lock's outcome, or null once the budget is spent — counted as the harness counts its
   * own bound: only time the process ran (a slice far longer than asked was a SIGSTOP), and not
   * while a command of the request waits for the harness's go (each go starts it afresh). */
  bounded(request, outcome) {
    return new Promise((resolve) => {
      let spent = 0n;
      let last = now();
      let progress = request.progress;
      const timer = setInterval(() => {
        const at = now();
        const gap = at - last;
        last = at;
        if (request.waiting.length || request.progress !== progress) {
          spent = 0n;
          progress = request.progress;
        } else if (gap < STALL_NS) {
          spent += gap;
        }
        if (spent >= this.budgetNs) {
          clearInterval(timer);
          resolve(null);
        }
      }, SLICE_MS);
      outcome.then((answer) => {
        clearInterval(timer);
        resolve(answer);
      });
    });
  }

  /** A grant that came after the kit answered its acquire: nobody asked for it any more (the
   * history says this client does not hold it), so it is released at once, in the background
   * (its commands belong to no request: reported as sent). */
  late(request, outcome) {
    if (request.op !== "acquire" || outcome.type !== "ok") return;
    log(`acquire #${request.id} granted after the kit answered it: releasing it`);
    const gone = new Request({ id: request.id, type: "release", token: request.token });
    gone.lease = outcome.lease;
    gone.end();
    requests.run(gone, () => this.call(gone));
  }

  /** Write the answer and keep the lease map up to date. The request stops being current
   * first, so the harness's next request is never taken for one out of turn. */
  answer(request, outcome) {
    request.end();
    this.current = null;
    const { op, token } = request;
    if (op === "acquire" && outcome.type === "ok") {
      this.leases.set(token, { value: outcome.lease });
      if (this.leases.size > MAX_LEASES) this.leases.delete(this.leases.keys().next().value);
    } else if (op === "extend" && outcome.type === "ok" && outcome.lease !== undefined) {
      this.leases.get(token).value = outcome.lease;
    } else if (op !== "acquire" && outcome.type === "invalidated") {
      this.leases.get(token).invalidated = `${op} #${request.id}: ${outcome.message}`;
    } else if (op === "release" && !(outcome.type === "error" && outcome.definite)) {
      this.leases.delete(token); // a release that certainly did not happen can be asked again
    }
    const reply = outcome.reply(request.id, token);
    if (DEBUG) console.error(new Date().toISOString(), `${op} #${request.id}:`, reply.type, reply.message || "");
    line(reply);
  }
}

module.exports = {
  serve,
  version,
  // outcomes
  granted: protocol.granted,
  released: protocol.released,
  refused: protocol.refused,
  failed: protocol.failed,
  failure: protocol.failure,
  revoked: protocol.revoked,
  invalidated: protocol.invalidated,
  kept: protocol.kept,
  // quorum
  Tally: protocol.Tally,
  VOTE: protocol.VOTE,
  voteOf: protocol.voteOf,
  // unasked lines
  renewed: protocol.renewed,
  sent: protocol.sent,
  log: protocol.log,
  now: protocol.now,
  // clients
  ioredis: clients.ioredis,
  nodeRedis: clients.nodeRedis,
  hookIoredis: clients.hookIoredis,
  hookNodeRedis: clients.hookNodeRedis,
};
