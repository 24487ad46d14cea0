// The Node kit's conformance driver (tests/drivers/test_kit_conformance.py): the ioredis
// skeleton's lock (../skeleton/ioredis/driver.js, installed with this file by ./run),
// misbehaving as LOCKCHAOS_CONFORMANCE says (chaos/drivers/kits/README.md):
//
// - retry-forever: its acquire retries SET NX every 10 ms until it wins, with no bound of its
//   own: the kit's bound must answer it in time, and release the grant that comes late;
// - late-command: 300 ms after each acquire returned, the library sends GET on its own, from a
//   timer the acquire started (its async context is the acquire's);
// - slow-start: the lock takes 2 s to build.
"use strict";

const kit = require("@lockchaos/driver-kit");
const { description, open } = require("./skeleton");

const BEHAVIOUR = process.env.LOCKCHAOS_CONFORMANCE || "";
const RETRY_MS = 10;
const RETRIES = 6000; // a minute: "forever" next to the harness's bound, and still a bound
const LATE_MS = 300;
const SLOW_START_MS = 2000;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

kit.serve({ ...description, driver: `node-conformance-${BEHAVIOUR}` }, async (hello) => {
  if (BEHAVIOUR === "slow-start") await sleep(SLOW_START_MS);
  const lock = await open(hello);
  const library = kit.ioredis(hello); // the misbehaving library's own connection
  return {
    ...lock,
    async acquire(req) {
      let outcome = await lock.acquire(req);
      for (let i = 0; BEHAVIOUR === "retry-forever" && outcome.type !== "ok" && i < RETRIES; i += 1) {
        await sleep(RETRY_MS);
        outcome = await lock.acquire(req);
      }
      if (BEHAVIOUR === "late-command") setTimeout(() => library.get(hello.lock_name).catch(() => {}), LATE_MS);
      return outcome;
    },
  };
});
