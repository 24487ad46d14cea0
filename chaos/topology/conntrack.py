"""The kernel's connection-tracking table: why a local server can stop taking connections.

On a host whose firewall tracks connections (any host running Docker: its iptables rules load
``nf_conntrack``) every TCP connection, loopback included, holds an entry until well after it
closes (``nf_conntrack_tcp_timeout_time_wait``, 120 s by default). A lock client that opens a
connection per command — the redlock crate does, through redis-rs's ``get_connection`` — opened
~1,700 entries a second in a run and ~4,000 across an audit (its kit's proxy and Toxiproxy each
add a hop); four of its audits back to back filled the table (262,144 entries), and the kernel
dropped new connections: Toxiproxy's API was "unreachable" and a run stalled 5 s.
``saturated`` says so, where an error would otherwise blame the server.
"""

from __future__ import annotations

from pathlib import Path

NETFILTER = Path("/proc/sys/net/netfilter")
FULL_SHARE = 0.95  # this share of the table in use: new connections are about to be dropped


def usage(root: Path = NETFILTER) -> tuple[int, int] | None:
    """Entries in use and the table's size; None with no connection tracking on this host."""
    try:
        count = int((root / "nf_conntrack_count").read_text())
        most = int((root / "nf_conntrack_max").read_text())
    except (OSError, ValueError):
        return None
    return (count, most) if most > 0 else None


def saturated(root: Path = NETFILTER) -> str | None:
    """A sentence naming a (nearly) full table and what to do, or None: not full, or no
    connection tracking on this host."""
    used = usage(root)
    if used is None or used[0] < FULL_SHARE * used[1]:
        return None
    count, most = used
    return (f"the kernel's connection-tracking table is full ({count} of {most} entries), so "
            f"it drops new connections: a lock client that opens a connection per command "
            f"fills it; wait two minutes, or raise net.netfilter.nf_conntrack_max (or lower "
            f"net.netfilter.nf_conntrack_tcp_timeout_time_wait)")
