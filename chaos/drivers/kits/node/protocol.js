// The wire and the shapes of @lockchaos/driver-kit (docs/driver-protocol.md): lines, outcomes,
// the quorum rule, requests and their announcements.
"use strict";

const { AsyncLocalStorage } = require("async_hooks");

// Only protocol lines go to the real standard output: whatever a library prints
// (console.log included) goes to standard error, which the harness keeps in the run.
const protocolWrite = process.stdout.write.bind(process.stdout);
process.stdout.write = process.stderr.write.bind(process.stderr);

/** One protocol line (pipes are written synchronously on Linux: a line is whole). */
const line = (message) => protocolWrite(`${JSON.stringify(message)}\n`);

/** A line for the driver's log (shown when the driver breaks). */
const log = (message) => line({ type: "log", message: String(message) });

/** A command the library sent on its own, outside any request, as it goes out. The kit's
 * hooks report ioredis's and node-redis's by themselves. */
const sent = (command) => line({ type: "sent", command: String(command).toUpperCase() });

/** This machine's CLOCK_MONOTONIC in ns: the history's clock. */
const now = () => process.hrtime.bigint();

/** A background renewal (a watchdog's) of the lease `token` succeeded: valid for `validityMs`
 * from `sentNs` (`now()` when the renewal command was sent). Report only renewals seen to
 * succeed; one after which the library gave the lease up (it found the key gone) with 0. */
function renewed(token, validityMs, sentNs) {
  const head = JSON.stringify({ type: "renewed", token, validity_ms: Number(validityMs) });
  protocolWrite(`${head.slice(0, -1)},"sent_ns":${BigInt(sentNs)}}\n`); // exact: a BigInt
}

/** What a lock's method answers: make it with granted, released, refused, failed, revoked,
 * invalidated or kept. */
class Outcome {
  constructor(type, fields) {
    this.type = type;
    Object.assign(this, fields);
  }

  reply(id, token) {
    const { type, validityMs, fence, definite, message } = this;
    const reply = { type, id };
    if (type === "ok" && token) reply.token = token;
    if (validityMs !== undefined) reply.validity_ms = validityMs;
    if (fence !== undefined && fence !== null) reply.fence = fence;
    if (type === "error" || type === "invalidated") reply.definite = definite;
    if (message) reply.message = String(message);
    return reply;
  }
}

/** The acquire or extend succeeded: `lease` (the library's lock object) is what release and
 * extend get back; an extend's undefined keeps the one it had, another replaces it. Valid for
 * `validityMs` from when the request was sent (Request.until, Request.leftAtReturn). */
const granted = (lease, validityMs, fence) => new Outcome("ok", { lease, validityMs, fence });
/** The release deleted the lease. */
const released = () => new Outcome("ok", {});
/** Certainly not: not granted, not ours any more, not extended. */
const refused = (message) => new Outcome("refused", { message });
/** An error. definite: it certainly did not happen (nothing was sent); otherwise it may have
 * (a timeout after sending): never turn a timeout into refused. */
const failed = (definite, message) => new Outcome("error", { definite: !!definite, message });
/** Not extended, and the library deleted or gave up the lease. */
const revoked = (message) => new Outcome("revoked", { message });
/** An extend after which the library's lock object is invalid (the extend consumed or
 * replaced it): nothing more can be sent for the lease, and its key stays until it expires.
 * definite: the extend certainly did not happen; otherwise it may have. */
const invalidated = (definite, message) => new Outcome("invalidated", { definite: !!definite, message });
/** A release that keeps the key on purpose (a minimum hold): until `validityMs` from when the
 * request was sent, or (undefined) until the lease's deadline then in effect. */
const kept = (validityMs) => new Outcome("kept", { validityMs });
/** Which request each answer may end (any may end with ok, refused or an error). */
const ONLY = { revoked: "extend", invalidated: "extend", kept: "release" };

/** One node's vote on one command of a multi-node lock. */
const VOTE = Object.freeze({ GRANTED: "granted", REFUSED: "refused", UNKNOWN: "unknown", NOT_SENT: "notSent" });

/** The nodes' votes on one acquire, release or extend (docs/driver-protocol.md, "decides by
 * quorum"). A library that cannot tell refused from error for a node counts it unknown. */
class Tally {
  constructor() {
    this.granted = 0;
    this.refused = 0;
    this.unknown = 0;
    this.notSent = 0;
  }

  add(vote) {
    if (!Object.values(VOTE).includes(vote)) throw new TypeError(`not a vote: ${vote}`);
    this[vote] += 1;
    return this;
  }

  get nodes() {
    return this.granted + this.refused + this.unknown + this.notSent;
  }

  get quorum() {
    return Math.floor(this.nodes / 2) + 1;
  }

  /** ok when the granted nodes reach the quorum, else as failed(). */
  decide(ok, message) {
    return this.granted >= this.quorum ? ok : this.failed(message);
  }

  /** An operation the library reports failed: indeterminate while granted + unknown could
   * still reach the quorum (a quorum lost to timeouts is not refused); refused when a quorum
   * said no, or did it and the library still said no (Redlock: the time spent ate the
   * validity, and it unlocked); else a definite error (too few nodes were even reached). */
  failed(message) {
    const { granted: g, refused: r, unknown: u, notSent: n, quorum: q } = this;
    if (g < q && g + u >= q) return failed(false, `${message} (${u} of ${this.nodes} nodes did not answer, enough to decide it)`);
    if (g >= q || r >= q) return refused(message);
    return failed(true, `${message} (no quorum: ${n} of ${this.nodes} nodes not reached, ${r} refused)`);
  }
}

// The errors ioredis and node-redis reject a command with before sending anything.
const NOT_SENT = [
  /^Stream isn't writeable/, // ioredis, no offline queue
  /^The client is closed/, // node-redis ClientClosedError
  /^The client is offline/, // node-redis ClientOfflineError (disableOfflineQueue)
];

/** A client's error as a vote: not sent when the client refused it before sending; unknown
 * for anything after (a timeout, a closed connection, an error reply: it may have run). */
function voteOf(error) {
  if (!error) return VOTE.GRANTED;
  return NOT_SENT.some((re) => re.test(String(error.message))) ? VOTE.NOT_SENT : VOTE.UNKNOWN;
}

/** A client's error on one command as the answer: definite when nothing was sent, else it may
 * have happened. (A library that sends to several nodes decides by Tally instead.) */
const failure = (error) => failed(voteOf(error) === VOTE.NOT_SENT, error && error.message);

const requests = new AsyncLocalStorage(); // each request's async context: its commands' tag

/** One acquire, release or extend. */
class Request {
  constructor(m) {
    this.id = m.id;
    this.op = m.type; // "acquire", "release" or "extend"
    this.token = m.token; // acquire: the new lease's token; release, extend: the lease's
    this.lease = undefined; // release, extend: what acquire (or the last extend) granted
    this.mode = m.mode; // acquire of a lock that is not a mutex
    this.permits = m.permits === undefined ? 1 : m.permits;
    this.announce = m.announce === true;
    this.commands = []; // what the library issued for it: { command, reply (a promise) }
    this.answered = false;
    this.waiting = []; // announcements waiting for "go": { resolve, reject }
    this.progress = 0; // "go" lines received
    this.startNs = now();
    this.startWall = Date.now();
  }

  /** The validity of a lease the library says ends at `epochMs` (its Date.now() reckoning), in
   * ms from when the request was sent, never more: Date.now() truncates, so the request may
   * have come up to 1 ms after startWall. */
  until(epochMs) {
    return Math.floor(epochMs - this.startWall - 1);
  }

  /** The validity of a lease the library says has `leftMs` left at its return, in ms from when
   * the request was sent: the time the request took is added back. */
  leftAtReturn(leftMs) {
    return Math.floor((leftMs + Number(now() - this.startNs) / 1e6) * 1000) / 1000;
  }

  /** Announce one command ("before") and wait for the harness's "go"; rejects once the kit
   * answered the request without it (it gave up waiting). */
  hold(command) {
    if (this.answered) return Promise.reject(new Error("not sent: the kit had answered its request"));
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      line({ type: "before", id: this.id, command });
    });
  }

  goAhead() {
    const next = this.waiting.shift();
    if (!next) return false;
    this.progress += 1;
    next.resolve();
    return true;
  }

  end() {
    this.answered = true;
    for (const { reject } of this.waiting.splice(0)) {
      reject(new Error("not sent: the kit had answered its request"));
    }
  }
}

/** What a command about to go out is to the kit: its request's, to announce or not, or
 * nobody's (outside any request, or after the request was answered: reported as sent). */
function tagged() {
  const request = requests.getStore();
  return request && !request.answered ? request : null;
}

module.exports = {
  ONLY, Outcome, Request, Tally, VOTE, failed, failure, granted, invalidated, kept, line, log, now, released,
  refused, renewed, requests, revoked, sent, tagged, voteOf,
};
