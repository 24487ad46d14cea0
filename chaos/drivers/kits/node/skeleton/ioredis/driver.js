// A compare-and-delete Redis lock on ioredis as a lockchaos driver, on the Node driver kit
// (docs/driver-protocol.md, "Driver kits"): SET NX PX to acquire, a Lua compare-and-delete to
// release, a Lua compare-and-PEXPIRE to extend. Put your lock in their place.
"use strict";

const kit = require("@lockchaos/driver-kit");

const RELEASE = 'if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0';
const EXTEND = 'if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) end return 0';

const description = { driver: "@NAME@", library: `ioredis ${kit.version("ioredis")}`, capabilities: ["extend"] };

async function open(hello) {
  const redis = kit.ioredis(hello); // the hello's first node, or with Sentinel its master
  const key = hello.lock_name;
  const ttl = hello.ttl_ms; // a lease is valid for the TTL from when its command was sent
  return {
    // The kit's token is the value, and says whose the key is.
    acquire: (req) => redis.set(key, req.token, "PX", ttl, "NX").then(
      (set) => (set === "OK" ? kit.granted(req.token, ttl) : kit.refused("taken")), kit.failure),
    release: (req) => redis.eval(RELEASE, 1, key, req.token).then(
      (deleted) => (deleted === 1 ? kit.released() : kit.refused("not ours any more")), kit.failure),
    extend: (req) => redis.eval(EXTEND, 1, key, req.token, ttl).then(
      (extended) => (extended === 1 ? kit.granted(undefined, ttl) : kit.refused("not ours any more")), kit.failure),
  };
}

module.exports = { description, open };
if (require.main === module) kit.serve(description, open);
