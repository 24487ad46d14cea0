"""Locks written in any language, run as a *driver*: a program that speaks newline-delimited
JSON on its stdin/stdout (docs/driver-protocol.md, docs/driver-protocol.schema.json).

One concept per module, each using only those above it in this list:

* ``protocol`` — the messages (their shapes, encoding, decoding, the protocol's version);
* ``process`` — one running driver: starting it, its reader threads, bounded waits, teardown;
* ``adapter`` — ``DriverLock``, the lock client (``chaos.locks.contract``) the workload calls;
* ``catalog`` — which drivers there are: the bundled Jedis, Redisson, redsync and node-redlock
  builds (found in the caches, ``chaos.topology.binaries``) and a user's ``exec:`` command.

``chaos.lockspec`` resolves a driver lock through ``catalog``; nothing here imports it, nor the
workload: the harness's pause points reach a driver through its ``LockContext``.
"""
