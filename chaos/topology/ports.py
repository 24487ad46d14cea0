"""Free TCP ports on 127.0.0.1 for the servers a topology starts, below the kernel's
ephemeral range.

A port is chosen here, released, and bound a moment later by the server it is for. In that
moment any outgoing connection on the machine may be given the same port as its source port
if it lies in the ephemeral range (``net.ipv4.ip_local_port_range``), where ``bind(0)``
would pick it. With two test workers' clients connecting all the time, a Redis node once never
answered PING and its topology never started; a port taken that way would explain it (not
confirmed: its log went with the run). Below that range only another server can take a port.
Those are chosen at random over thousands of ports, yet two lockchaos processes starting
topologies at once (two pytest workers) chose the same port in one full run: both found it
free, and the second Redis to bind it exited ("Address already in use"). So a port chosen here
is also *claimed* for ``CLAIM_S`` (a file named after it, under one lock shared by every
lockchaos process of the user): long enough for its server to bind it, after which binding
alone keeps it. A claim is never removed; it goes stale, so a killed process leaves none that
lasts.
"""

from __future__ import annotations

import fcntl
import os
import random
import socket
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

LOWEST = 10_000  # ports below are the well-known and registered services' more often
EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")
ATTEMPTS_PER_PORT = 50  # random tries for each port before taking one the kernel picks
# The OS's randomness, not ``random``'s: Hypothesis seeds that one the same way in every process
# that explores, and two such processes would then try the same ports in the same order.
_pick = random.SystemRandom()
CLAIMS = Path(tempfile.gettempdir()) / f"lockchaos-ports-{os.getuid()}"
CLAIM_S = 60.0  # a chosen port's server binds it within seconds


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports that were free a moment ago, outside the ephemeral range when
    it leaves room (else the kernel's choice). All sockets are held open together so no port
    is handed out twice."""
    low = _ephemeral_low()
    CLAIMS.mkdir(exist_ok=True)
    with ExitStack() as stack, open(CLAIMS / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # choosing and claiming is one step for all
        ports: list[int] = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            ports.append(_bind_below(sock, low) or _bind_any(sock))
        for port in ports:
            (CLAIMS / str(port)).touch()
        return ports


def _bind_below(sock: socket.socket, low: int) -> int | None:
    """Bind ``sock`` to a random free, unclaimed port in ``[LOWEST, low)``; None if none was
    found."""
    if low - LOWEST < 1_000:
        return None
    for _ in range(ATTEMPTS_PER_PORT):
        port = _pick.randrange(LOWEST, low)
        if _claimed(port):
            continue
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            continue
        return port
    return None


def _claimed(port: int) -> bool:
    """Whether a lockchaos process chose ``port`` less than ``CLAIM_S`` ago."""
    try:
        return time.time() - (CLAIMS / str(port)).stat().st_mtime < CLAIM_S
    except FileNotFoundError:
        return False


def _bind_any(sock: socket.socket) -> int:
    sock.bind(("127.0.0.1", 0))
    return int(sock.getsockname()[1])


def _ephemeral_low() -> int:
    """The lowest port of the kernel's ephemeral range (32768, Linux's default, if unknown)."""
    try:
        return int(EPHEMERAL.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768
