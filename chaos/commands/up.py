"""``lockchaos up``: start a topology, print its addresses, hold it, tear it down."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from chaos import topology
from chaos.commands.campaign_options import option
from chaos.errors import UsageError
from chaos.report.terminal import print_table, terminal
from chaos.signals import sigterm_unwinds

MAX_HOLD_S = 24 * 3600.0  # "until Ctrl-C" still ends some day


def up(
    kind: str = typer.Option(
        "standalone", "--topology", help="standalone, sentinel or cluster (not external)"
    ),
    nodes: int | None = typer.Option(
        None, "--nodes", help="masters in the standalone topology (default 5; external: all)"
    ),
    provider: str = option("provider"),
    provider_config: Path | None = option("provider_config"),
    clients: int = typer.Option(2, "--clients", help="clients to create proxied links for"),
    hold: float = typer.Option(0.0, "--hold", help="seconds to keep it up; 0 = until Ctrl-C"),
    json_output: bool = typer.Option(False, "--json", help="print the addresses as JSON only"),
) -> None:
    """Start a topology (or, with --provider external, connect to one), print its addresses
    (direct and proxied), hold, tear down."""
    if kind not in topology.SHAPES:
        raise UsageError(f"--topology must be one of {', '.join(topology.SHAPES)} (got {kind!r})")
    if not 0 <= clients <= 64:
        raise UsageError(f"--clients must be between 0 and 64 (got {clients})")
    if hold < 0:
        raise UsageError(f"--hold must be 0 (until Ctrl-C) or a number of seconds (got {hold})")
    console = Console(stderr=True)
    try:
        with sigterm_unwinds(), topology.open_provider(
            provider, kind, nodes=nodes, config=provider_config, clients=clients
        ) as topo:
            for i in range(1, clients + 1):
                topo.client_view(f"c{i}")
            description = topo.describe()
            if json_output:
                print(json.dumps(description), flush=True)
            else:
                _print_table(description)
                console.print(
                    f"holding {'until Ctrl-C' if hold == 0 else f'for {hold:g} s'}; "
                    f"everything is torn down on exit"
                )
            deadline = time.monotonic() + (hold or MAX_HOLD_S)
            while (left := deadline - time.monotonic()) > 0:
                time.sleep(min(left, 0.5))
    except KeyboardInterrupt:
        # Ctrl-C is how a user ends `up` (wherever it lands, even before the hold begins):
        # the `with` has torn everything down by now, so it is a normal exit.
        console.print("interrupted: torn down")


def _print_table(description: dict[str, Any]) -> None:
    title = (
        f"{description['topology']} topology ({description['provider']}) — "
        f"Toxiproxy {description['toxiproxy']}"
    )
    clients: dict[str, dict[str, str]] = description["clients"]
    rows = []
    for i, node in enumerate(description["nodes"]):
        # Each client's links are in node order (their names depend on the provider).
        proxied = ", ".join(f"{c}→{list(links.values())[i]}" for c, links in clients.items())
        rows.append({"name": node["name"], "role": node["role"], "direct": node["direct"],
                     "proxied": proxied})
    rows += [{"name": f"s{i}", "role": "sentinel", "direct": address, "proxied": ""}
             for i, address in enumerate(description["sentinels"])]
    rows.append({"name": "resource", "role": "resource", "direct": str(description["resource"]),
                 "proxied": ""})
    print_table(terminal(), escape(title), {"name": "name", "role": "role", "direct": "direct",
                                            "proxied (per client)": "proxied"},
                [{key: escape(value) for key, value in row.items()} for row in rows])
