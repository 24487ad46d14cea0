// The lockchaos driver for the `redlock` npm package over ioredis, on the Node driver kit
// (chaos/drivers/kits/node, docs/driver-protocol.md).
//
// Redlock.acquire on every node of the hello (N standalone masters), with the package's
// defaults except retryCount 0 (the harness owns the retry loop) and the kit's token as the
// lock's value. The kit's ioredis clients never retry, queue or resend a command.
"use strict";

const kit = require("@lockchaos/driver-kit");
const { default: Redlock, ExecutionError, ResourceLockedError } = require("redlock");

const LIBRARY = `redlock ${kit.version("redlock")} + ioredis ${kit.version("ioredis")}`;

// A quorum not reached (acquire) or not confirmed (release), from redlock's votes: a node that
// answered the key was not ours refused; the kit reads the others' errors.
async function notDone(error) {
  if (!(error instanceof ExecutionError)) throw error;
  const stats = error.attempts.length ? await error.attempts[0] : null;
  if (!stats) return kit.refused(error.message);
  const tally = new kit.Tally();
  for (let i = 0; i < stats.votesFor.size; i += 1) tally.add(kit.VOTE.GRANTED);
  for (const e of stats.votesAgainst.values()) {
    tally.add(e instanceof ResourceLockedError ? kit.VOTE.REFUSED : kit.voteOf(e));
  }
  return tally.failed(error.message);
}

kit.serve({ driver: "node-redlock", library: LIBRARY, topology: "standalone", min_nodes: 3 }, async (hello) => {
  const redlock = new Redlock(hello.nodes.map((node) => kit.ioredis(hello, node)), { retryCount: 0 });
  redlock.on("error", () => {}); // each node's failure is a vote against, not a crash
  return {
    async acquire(req) {
      redlock._random = () => req.token; // the lock's value: the token, readable in the history
      try {
        const lock = await redlock.acquire([hello.lock_name], hello.ttl_ms);
        return kit.granted(lock, req.until(lock.expiration));
      } catch (error) {
        return notDone(error);
      }
    },
    async release(req, lock) {
      try {
        await lock.release();
        return kit.released();
      } catch (error) {
        return notDone(error);
      }
    },
  };
});
