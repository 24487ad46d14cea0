#!/usr/bin/env python3
"""A complete lockchaos lock driver in plain Python (standard library only): the worked example
of docs/driver-protocol.md.

The lock: ``SET key token NX PX ttl`` to acquire, a Lua compare-and-delete to release, a Lua
compare-and-``PEXPIRE`` to extend — spoken in RESP over a raw socket to the first node of the
hello, so every byte on the wire is visible here. It has every optional capability:
``extend``, ``pause-points`` (it announces each command when asked, and waits for "go") and
``faked-clock`` (CPython reads the wall clock through libc, which libfaketime moves).

    lockchaos run --lock "exec:python3 examples/drivers/python/driver.py" --faults client-pause
"""

import json
import os
import socket
import sys

RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
EXTEND = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


class Indeterminate(Exception):
    """The command may have reached Redis: nobody knows whether it took effect."""


class Refused(Exception):
    """The command certainly did not reach Redis (no connection): a definite "no"."""


class Redis:
    """One RESP connection; reconnects (only) at the start of a command."""

    def __init__(self, host, port, timeout_s):
        self.address, self.timeout_s, self.sock, self.buf = (host, port), timeout_s, None, b""

    def call(self, *args):
        if self.sock is None:
            try:
                self.sock = socket.create_connection(self.address, timeout=self.timeout_s)
            except OSError as exc:
                raise Refused(f"cannot connect: {exc}") from None
            self.buf = b""
        wire = b"*%d\r\n" % len(args) + b"".join(
            b"$%d\r\n%s\r\n" % (len(a), a) for a in (str(x).encode() for x in args)
        )
        try:
            self.sock.sendall(wire)
            return self._reply()
        except OSError as exc:
            self.sock.close()
            self.sock = None
            raise Indeterminate(f"{args[0]}: {exc}") from None

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise OSError("connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:].decode()
        if kind == b"+":
            return rest
        if kind == b":":
            return int(rest)
        if kind == b"$":
            if rest == "-1":
                return None
            while len(self.buf) < int(rest) + 2:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise OSError("connection closed")
                self.buf += chunk
            value, self.buf = self.buf[: int(rest)].decode(), self.buf[int(rest) + 2 :]
            return value
        if kind == b"-":
            raise Indeterminate(rest)  # e.g. READONLY after a failover
        raise OSError(f"unexpected reply {line!r}")


def main():
    hello, redis, request = None, None, None

    def command(*args):
        """Send one command; with pause-points on, announce it and wait for "go" first."""
        if request.get("announce"):
            send({"type": "before", "id": request["id"], "command": str(args[0]).upper()})
            go = json.loads(sys.stdin.readline() or "{}")
            if go.get("type") != "go":
                sys.exit(0)
        return redis.call(*args)

    for line in sys.stdin:
        request = json.loads(line)
        kind, rid = request["type"], request.get("id")
        caps = ["extend", "pause-points", "faked-clock"]
        if kind == "describe":
            send({"type": "describe", "language": "python", "library": "none (RESP)", "capabilities": caps})
            continue
        if kind == "hello":
            hello, node = request, request["nodes"][0]
            redis = Redis(node["host"], node["port"], request.get("socket_timeout_ms", 500) / 1000)
            send({"type": "hello", "ok": True, "driver": "python-resp", "language": "python",
                  "library": "none (RESP)", "capabilities": caps})
            continue
        key, ttl = hello["lock_name"], hello["ttl_ms"]
        try:
            if kind == "acquire":
                token = "%s:%s" % (hello["client_id"], os.urandom(8).hex())
                if command("SET", key, token, "NX", "PX", ttl) == "OK":
                    send({"type": "ok", "id": rid, "token": token, "validity_ms": ttl})
                else:
                    send({"type": "refused", "id": rid})
            elif kind == "release":
                done = command("EVAL", RELEASE, 1, key, request["token"])
                send({"type": "ok" if done else "refused", "id": rid})
            elif kind == "extend":
                done = command("EVAL", EXTEND, 1, key, request["token"], ttl)
                send({"type": "ok", "id": rid, "validity_ms": ttl} if done else {"type": "refused", "id": rid})
            else:
                send({"type": "error", "id": rid, "definite": True, "message": "unknown request " + kind})
        except Refused as exc:  # nothing was sent: it certainly did not happen
            send({"type": "error", "id": rid, "definite": True, "message": str(exc)})
        except Indeterminate as exc:  # it may have happened: never guess
            send({"type": "error", "id": rid, "definite": False, "message": str(exc)})


if __name__ == "__main__":
    main()
