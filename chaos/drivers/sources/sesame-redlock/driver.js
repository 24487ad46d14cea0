// The lockchaos driver for @sesamecare-oss/redlock (a Redlock, forked from the `redlock` npm
// package) over ioredis, on the Node driver kit (chaos/drivers/kits/node,
// docs/driver-protocol.md).
//
// Redlock.acquire, Lock.extend and Lock.release on every node of the hello (N standalone
// masters), with the package's defaults except retryCount 0 (one attempt: the harness owns the
// retry loop; the default retries acquire, extend and release 10 times) and the kit's token as
// the lock's value. The kit's ioredis clients never retry, queue or resend a command.
"use strict";

const kit = require("@lockchaos/driver-kit");
const { Redlock, ExecutionError, ResourceLockedError } = require("@sesamecare-oss/redlock");

const LIBRARY = `@sesamecare-oss/redlock ${kit.version("@sesamecare-oss/redlock")} + ioredis ${kit.version("ioredis")}`;

kit.serve({ driver: "sesame-redlock", library: LIBRARY, topology: "standalone", min_nodes: 3, capabilities: ["extend"] }, async (hello) => {
  const redlock = new Redlock(hello.nodes.map((node) => kit.ioredis(hello, node)), { retryCount: 0 });
  const ttl = hello.ttl_ms;
  // The package's validity, start + TTL - drift with its one attempt's start (Date.now() just
  // before it sends), counted from the request instead, which came first: never longer, and no
  // wall clock (a client-clock jump between two readings of it would lengthen the claim). An
  // acquire or extend that outlasts it is still handed over by the package (it never checks
  // the time spent): the claim then ends before the answer, no instant of validity, as it is.
  const validity = ttl - (Math.round(redlock.settings.driftFactor * ttl) + 2);

  // An operation without its quorum, from the package's votes: a node whose key was not ours
  // (ResourceLockedError) refused, the kit reads the others' errors. No attempt: the package
  // refused before sending (an extend of a lock its clock says has expired).
  async function notDone(error) {
    if (!(error instanceof ExecutionError)) throw error;
    if (!error.attempts.length) return kit.refused(error.message);
    const { votesFor, votesAgainst } = await error.attempts[0];
    const tally = new kit.Tally();
    for (let i = 0; i < votesFor.size; i += 1) tally.add(kit.VOTE.GRANTED);
    for (const e of votesAgainst.values()) tally.add(e instanceof ResourceLockedError ? kit.VOTE.REFUSED : kit.voteOf(e));
    return tally.failed(error.message);
  }

  return {
    acquire(req) {
      redlock._random = () => req.token; // the lock's value: the token, readable in the history
      return redlock.acquire([hello.lock_name], ttl).then((lock) => kit.granted(lock, validity), notDone);
    },
    extend: (req, lock) => lock.extend(ttl).then((extended) => kit.granted(extended, validity), notDone),
    release: (req, lock) => lock.release().then(() => kit.released(), notDone),
  };
});
