"""``--provider`` and ``--provider-config``, defined once for every command that starts a
topology (``up``, ``run``, ``compare``, ``explore``, ``audit``): ``provider: str = PROVIDER,
provider_config: Path | None = PROVIDER_CONFIG``, then pass both to
``chaos.topology.open_provider`` (or to ``Campaign.from_options``); likewise ``server: str |
None = SERVER`` (``--server``, the docker provider's server image).

``--topology`` already names the shape (``standalone``/``sentinel``), so who runs it is
``--provider``: see docs/providers.md.
"""

from __future__ import annotations

import typer

PROVIDER = typer.Option(
    "local",
    "--provider",
    help="who runs the topology: local (processes on 127.0.0.1), docker (compose/) or "
    "external (servers named in --provider-config); see docs/providers.md",
)
PROVIDER_CONFIG = typer.Option(
    None,
    "--provider-config",
    help="TOML file naming the servers and the Toxiproxy for --provider external",
    dir_okay=False,
)
SERVER = typer.Option(
    None,
    "--server",
    help="the Redis-compatible server: redis-7.0, redis-8.0 or valkey-8.1 (lockchaos's images, "
    "docs/images.md; --provider docker; local runs redis-7.0 only). Default: the provider's",
)
