#!/usr/bin/env python3
"""A complete lockchaos lock driver in plain Python, on the Python driver kit, with no Redis
library at all: the worked example of docs/driver-protocol.md.

The lock: ``SET key token NX PX ttl`` to acquire, a Lua compare-and-delete to release, a Lua
compare-and-``PEXPIRE`` to extend — spoken in RESP over a raw socket to the first node of the
hello, so every byte on the wire is visible here. The kit
(chaos/drivers/kits/python/lockchaos_driver.py, the standard library only) does the protocol;
since the kit cannot hook a client it does not know, this one calls ``kit.before`` itself
before each command (pause points), and raises ``kit.NotSent`` when it could not connect
(nothing was sent: a definite answer). It runs under any Python 3.8+, lockchaos or not:

    lockchaos run --lock "exec:python3 examples/drivers/python/driver.py" --faults client-pause
"""

import os
import socket
import sys

KIT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                   "chaos", "drivers", "kits", "python")
sys.path.insert(0, KIT)  # a driver of your own keeps a copy of the kit beside it instead

import lockchaos_driver as kit  # noqa: E402

OWNED = "if redis.call('get', KEYS[1]) == ARGV[1] then return "
RELEASE = OWNED + "redis.call('del', KEYS[1]) end return 0"
EXTEND = OWNED + "redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"


class Resp:
    """One RESP connection; reconnects (only) at the start of a command."""

    def __init__(self, host, port, timeout_s):
        self.address, self.timeout_s, self.sock, self.buf = (host, port), timeout_s, None, b""

    def call(self, *args):
        kit.before(str(args[0]))  # pause points: announce it, and wait for "go"
        if self.sock is None:
            try:
                self.sock = socket.create_connection(self.address, timeout=self.timeout_s)
            except OSError as exc:
                raise kit.NotSent(f"cannot connect: {exc}") from None
            self.buf = b""
        wire = b"*%d\r\n" % len(args) + b"".join(
            b"$%d\r\n%s\r\n" % (len(a), a) for a in (str(x).encode() for x in args)
        )
        try:
            self.sock.sendall(wire)
            return self._reply()
        except OSError:  # it may have landed: the kit answers definite: false
            self.sock.close()
            self.sock = None
            raise

    def _more(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise OSError("connection closed")
        self.buf += chunk

    def _reply(self):
        while b"\r\n" not in self.buf:
            self._more()
        line, self.buf = self.buf.split(b"\r\n", 1)
        kind, rest = line[:1], line[1:].decode()
        if kind == b"+":
            return rest
        if kind == b":":
            return int(rest)
        if kind == b"$":
            if rest == "-1":
                return None
            while len(self.buf) < int(rest) + 2:
                self._more()
            value, self.buf = self.buf[: int(rest)].decode(), self.buf[int(rest) + 2 :]
            return value
        if kind == b"-":
            raise OSError(rest)  # e.g. READONLY after a failover: it may have landed
        raise OSError(f"unexpected reply {line!r}")


class Lock:
    def __init__(self, hello):
        host, port = hello.nodes[0]
        self.redis = Resp(host, port, hello.socket_timeout_ms / 1000)
        self.key, self.ttl_ms = hello.lock_name, hello.ttl_ms

    def acquire(self, req):
        if self.redis.call("SET", self.key, req.token, "NX", "PX", self.ttl_ms) == "OK":
            return kit.Granted(validity_ms=self.ttl_ms)  # measured from the request
        return kit.Refused()

    def release(self, req, lease):
        released = self.redis.call("EVAL", RELEASE, 1, self.key, lease.token)
        return kit.Granted() if released else kit.Refused()

    def extend(self, req, lease):
        if self.redis.call("EVAL", EXTEND, 1, self.key, lease.token, self.ttl_ms):
            return kit.Granted(validity_ms=self.ttl_ms)
        return kit.Refused()


if __name__ == "__main__":
    kit.serve(kit.Driver(name="python-resp", library="none (RESP)"), Lock)
